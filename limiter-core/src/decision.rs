//! The answer to one check: admitted or not, and the numbers the response headers carry.

use std::fmt;
use std::time::Duration;

/// The outcome of counting one request against one limit.
///
/// Everything a response needs: the status ([`allowed`](Decision::allowed)), `Retry-After`
/// ([`retry_after`](Decision::retry_after)), and the RateLimit fields `q`
/// ([`limit`](Decision::limit)), `r` ([`remaining`](Decision::remaining)) and `t`
/// ([`reset_after`](Decision::reset_after)).
///
/// It is 16 bytes, so it travels in registers: on a rejection the time until one request
/// would be admitted is also the time until used quota next comes back, so one field holds
/// both, and the top bits of that field say whether the request was admitted and whether
/// this instance's memory decided it while the store was away
/// ([`by_fallback`](Decision::by_fallback)).
#[derive(Clone, Copy)]
pub struct Decision {
    /// Nanoseconds to wait (see above), with the flags [`ALLOWED`] and [`FALLBACK`] on top.
    wait: u64,
    limit: u32,
    remaining: u32,
}

const ALLOWED: u64 = 1 << 63;
const FALLBACK: u64 = 1 << 62;
const BLOCKED: u64 = 1 << 61;
const DELAYED: u64 = 1 << 60;
/// The bits of the wait itself: 36 years of nanoseconds, far beyond any wait a policy allows.
const WAIT: u64 = DELAYED - 1;

impl Decision {
    /// An admitted request: `remaining` more would be admitted now, and used quota next
    /// comes back after `reset_after`.
    #[inline]
    pub fn allow(limit: u32, remaining: u32, reset_after: Duration) -> Decision {
        Decision {
            wait: nanos(reset_after) | ALLOWED,
            limit,
            remaining,
        }
    }

    /// [`allow`](Decision::allow) with the wait in nanoseconds, as the algorithms have it.
    #[inline]
    pub(crate) const fn allow_ns(limit: u32, remaining: u32, reset_after_ns: u64) -> Decision {
        Decision {
            wait: (reset_after_ns & WAIT) | ALLOWED,
            limit,
            remaining,
        }
    }

    /// [`reject`](Decision::reject) with the wait in nanoseconds.
    #[inline]
    pub(crate) const fn reject_ns(limit: u32, retry_after_ns: u64) -> Decision {
        Decision {
            wait: retry_after_ns & WAIT,
            limit,
            remaining: 0,
        }
    }

    /// A rejected request that could be admitted after `retry_after`.
    #[inline]
    pub fn reject(limit: u32, retry_after: Duration) -> Decision {
        Decision::reject_leaving(limit, 0, retry_after)
    }

    /// A rejected request that costs more than the `remaining` units still admitted now
    /// (the RateLimit `r` stays honest: a cheaper request would pass), and fits after
    /// `retry_after`.
    #[inline]
    pub fn reject_leaving(limit: u32, remaining: u32, retry_after: Duration) -> Decision {
        Decision {
            wait: nanos(retry_after),
            limit,
            remaining,
        }
    }

    /// [`reject_leaving`](Decision::reject_leaving) with the wait in nanoseconds.
    #[inline]
    pub(crate) const fn reject_leaving_ns(limit: u32, remaining: u32, wait_ns: u64) -> Decision {
        Decision {
            wait: wait_ns & WAIT,
            limit,
            remaining,
        }
    }

    /// Whether the request is admitted (and was counted).
    #[inline]
    pub fn allowed(&self) -> bool {
        self.wait & ALLOWED != 0
    }

    /// Whether this instance's memory decided, a networked store being away
    /// ([`OnStoreError::FallBackToMemory`](crate::OnStoreError::FallBackToMemory)): the
    /// fault policy's answer, counted `store_error` in the decision metrics. Not part of
    /// the decision's identity: `==` compares what the response says.
    #[inline]
    pub fn by_fallback(&self) -> bool {
        self.wait & FALLBACK != 0
    }

    /// The same decision, marked as made by the fallback memory.
    #[inline]
    pub(crate) const fn marked_fallback(self) -> Decision {
        Decision {
            wait: self.wait | FALLBACK,
            ..self
        }
    }

    /// An admission that must wait (a bucket's `delay`): counted now, its token taken ahead,
    /// to run once `delay` has gone by — the instant it would have been admitted.
    #[inline]
    pub(crate) const fn allow_after_ns(limit: u32, delay_ns: u64) -> Decision {
        Decision {
            wait: (delay_ns & WAIT) | ALLOWED | DELAYED,
            limit,
            remaining: 0,
        }
    }

    /// For an admission that must wait for its turn (a token bucket's
    /// [`delay`](crate::Policy::with_delay)), how long; `None` for one that runs at once or
    /// a rejection.
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::{Algorithm, MemoryStore, Limit, Policy};
    /// let policy = Policy::for_algorithm(Algorithm::TokenBucket, 1, Duration::from_secs(1))?
    ///     .with_delay(Duration::from_secs(2))?;
    /// let limit = Limit::new("smooth", policy);
    /// let store = MemoryStore::new();
    /// assert_eq!(store.check_at(&limit, b"k", Duration::ZERO).delayed(), None);
    /// let second = store.check_at(&limit, b"k", Duration::ZERO);
    /// assert!(second.allowed());
    /// assert_eq!(second.delayed(), Some(Duration::from_secs(1)));
    /// # Ok::<(), limiter::PolicyError>(())
    /// ```
    #[inline]
    pub fn delayed(&self) -> Option<Duration> {
        (self.wait & (ALLOWED | DELAYED) == ALLOWED | DELAYED)
            .then(|| Duration::from_nanos(self.wait & WAIT))
    }

    /// Whether a [`Penalty`](crate::Penalty) refused it: the client's block was in force,
    /// or this rejection started one (its wait is then the block's). Not part of the
    /// decision's identity.
    #[inline]
    pub fn blocked(&self) -> bool {
        self.wait & BLOCKED != 0
    }

    /// The same rejection with `extra` added to its wait (a jitter: clients refused together
    /// come back apart); an admission unchanged.
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::Decision;
    /// let d = Decision::reject(5, Duration::from_secs(10)).waiting_longer(Duration::from_millis(700));
    /// assert_eq!(d.retry_after_secs(), Some(11));
    /// ```
    #[inline]
    pub fn waiting_longer(self, extra: Duration) -> Decision {
        if self.allowed() {
            return self;
        }
        let wait = (self.wait & WAIT).saturating_add(nanos(extra)).min(WAIT);
        Decision {
            wait: (self.wait & !WAIT) | wait,
            ..self
        }
    }

    /// The same rejection, as a penalty's.
    #[inline]
    pub(crate) const fn marked_blocked(self) -> Decision {
        Decision {
            wait: self.wait | BLOCKED,
            ..self
        }
    }

    /// The policy's maximum per window (the RateLimit `q`).
    #[inline]
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Requests still admitted now, after this one was counted (the RateLimit `r`).
    #[inline]
    pub fn remaining(&self) -> u32 {
        self.remaining
    }

    /// For a rejection, the exact time until one request would be admitted; `None` when
    /// allowed.
    #[inline]
    pub fn retry_after(&self) -> Option<Duration> {
        (!self.allowed()).then(|| Duration::from_nanos(self.wait & WAIT))
    }

    /// The time until used quota next comes back (the RateLimit `t`): equal to
    /// [`retry_after`](Decision::retry_after) on a rejection.
    #[inline]
    pub fn reset_after(&self) -> Duration {
        Duration::from_nanos(self.wait & WAIT)
    }

    /// `retry_after` in whole seconds as `Retry-After` carries it: rounded up and never 0,
    /// since a client told "0" retries at once. `None` when allowed.
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::Decision;
    /// let d = Decision::reject(5, Duration::from_millis(1));
    /// assert_eq!(d.retry_after_secs(), Some(1));
    /// let d = Decision::reject(5, Duration::from_millis(42_001));
    /// assert_eq!(d.retry_after_secs(), Some(43));
    /// ```
    pub fn retry_after_secs(&self) -> Option<u64> {
        self.retry_after().map(|d| ceil_secs(d).max(1))
    }

    /// `reset_after` in whole seconds, rounded up (the RateLimit `t`); at least 1 on a
    /// rejection, like `Retry-After`.
    pub fn reset_after_secs(&self) -> u64 {
        let secs = ceil_secs(self.reset_after());
        if self.allowed() {
            secs
        } else {
            secs.max(1)
        }
    }
}

impl PartialEq for Decision {
    fn eq(&self, other: &Decision) -> bool {
        let flags = !(FALLBACK | BLOCKED);
        (self.wait & flags, self.limit, self.remaining)
            == (other.wait & flags, other.limit, other.remaining)
    }
}

impl Eq for Decision {}

impl fmt::Debug for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown = f.debug_struct("Decision");
        shown
            .field("allowed", &self.allowed())
            .field("limit", &self.limit)
            .field("remaining", &self.remaining)
            .field("retry_after", &self.retry_after())
            .field("reset_after", &self.reset_after());
        if self.by_fallback() {
            shown.field("by_fallback", &true);
        }
        shown.finish()
    }
}

/// Nanoseconds below the flag bits, saturating.
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).min(WAIT)
}

fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_flag_changes_no_number() {
        for decision in [
            Decision::allow(5, 4, Duration::from_secs(60)),
            Decision::reject_leaving(5, 2, Duration::from_millis(1_500)),
            Decision::reject(5, Duration::from_nanos(WAIT + 1)),
        ] {
            let fallback = decision.marked_fallback();
            assert!(fallback.by_fallback() && !decision.by_fallback());
            assert_eq!(fallback, decision);
            assert_eq!(
                (
                    fallback.allowed(),
                    fallback.remaining(),
                    fallback.retry_after()
                ),
                (
                    decision.allowed(),
                    decision.remaining(),
                    decision.retry_after()
                )
            );
            assert_eq!(fallback.reset_after(), decision.reset_after());
        }
    }

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

    #[test]
    fn fits_in_two_registers() {
        assert_eq!(std::mem::size_of::<Decision>(), 16);
        let d = Decision::allow(7, 3, Duration::from_millis(1500));
        assert!(d.allowed());
        assert_eq!((d.limit(), d.remaining()), (7, 3));
        assert_eq!(d.retry_after(), None);
        assert_eq!(d.reset_after(), Duration::from_millis(1500));
        assert_eq!(
            format!("{d:?}"),
            "Decision { allowed: true, limit: 7, remaining: 3, retry_after: None, reset_after: 1.5s }"
        );
    }
}
