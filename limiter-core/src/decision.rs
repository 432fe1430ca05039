//! The answer to one check: admitted or not, and the numbers the response headers carry.

use std::time::Duration;

/// The outcome of counting one request against one limit.
///
/// Everything a response needs: the status (`allowed`), `Retry-After` (`retry_after`), and
/// the RateLimit fields `q` (`limit`), `r` (`remaining`) and `t` (`reset_after`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request is admitted (and was counted).
    pub allowed: bool,
    /// The policy's maximum per window (the RateLimit `q`).
    pub limit: u32,
    /// Requests still admitted now, after this one was counted (the RateLimit `r`).
    pub remaining: u32,
    /// For a rejection, the exact time until one request would be admitted; `None` when allowed.
    pub retry_after: Option<Duration>,
    /// The time until used quota next comes back (the RateLimit `t`): equal to `retry_after`
    /// on a rejection, zero when nothing is used.
    pub reset_after: Duration,
}

impl Decision {
    /// An admitted request.
    pub const fn allow(limit: u32, remaining: u32, reset_after: Duration) -> Decision {
        Decision {
            allowed: true,
            limit,
            remaining,
            retry_after: None,
            reset_after,
        }
    }

    /// A rejected request that could be admitted after `retry_after`.
    pub const fn reject(limit: u32, retry_after: Duration) -> Decision {
        Decision {
            allowed: false,
            limit,
            remaining: 0,
            retry_after: Some(retry_after),
            reset_after: retry_after,
        }
    }

    /// `retry_after` in whole seconds as `Retry-After` carries it: rounded up and never 0,
    /// since a client told "0" retries at once. `None` when allowed.
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter_core::Decision;
    /// let d = Decision::reject(5, Duration::from_millis(1));
    /// assert_eq!(d.retry_after_secs(), Some(1));
    /// let d = Decision::reject(5, Duration::from_millis(42_001));
    /// assert_eq!(d.retry_after_secs(), Some(43));
    /// ```
    pub fn retry_after_secs(&self) -> Option<u64> {
        self.retry_after.map(|d| ceil_secs(d).max(1))
    }

    /// `reset_after` in whole seconds, rounded up (the RateLimit `t`).
    pub fn reset_after_secs(&self) -> u64 {
        let secs = ceil_secs(self.reset_after);
        if self.allowed {
            secs
        } else {
            secs.max(1)
        }
    }
}

fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_round_up_and_never_reach_zero_on_rejection() {
        let allowed = Decision::allow(5, 4, Duration::ZERO);
        assert_eq!(allowed.retry_after_secs(), None);
        assert_eq!(allowed.reset_after_secs(), 0);
        let exact = Decision::reject(5, Duration::from_secs(60));
        assert_eq!(exact.retry_after_secs(), Some(60));
        assert_eq!(exact.reset_after_secs(), 60);
        let tiny = Decision::reject(5, Duration::from_nanos(1));
        assert_eq!(tiny.retry_after_secs(), Some(1));
        assert_eq!(tiny.reset_after_secs(), 1);
        let zero = Decision::reject(5, Duration::ZERO);
        assert_eq!(zero.retry_after_secs(), Some(1));
    }
}
