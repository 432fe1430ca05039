//! What happens when a networked store fails: a bounded wait per check, a policy for the
//! answer, and one event per transition (lost, back) rather than one per request.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// What a limited handler does when its store fails or exceeds the timeout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OnStoreError {
    /// Count in this instance's memory meanwhile: limits keep holding, per instance (the
    /// default).
    #[default]
    FallBackToMemory,
    /// Let requests through unlimited. Their responses carry no RateLimit fields, which
    /// would no longer line up with the handler's limits.
    FailOpen,
    /// Refuse requests: `503 Service Unavailable` with `Retry-After: 1`.
    FailClosed,
}

/// What a check came to, once the store error policy has had its say: the one place that
/// turns a failed store into an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict<T> {
    /// The store decided (or, under [`OnStoreError::FallBackToMemory`], this instance's
    /// memory did).
    Decided(T),
    /// The store failed and the limiter fails open: the request passes, uncounted.
    Unlimited,
    /// The store failed and the limiter fails closed: the request is refused as unavailable.
    Unavailable,
}

impl super::Limiter {
    /// The verdict on the result of [`check`](super::Limiter::check) or
    /// [`check_all`](super::Limiter::check_all): a store error is never a decision, and
    /// what it means is this limiter's [`OnStoreError`].
    ///
    /// ```
    /// use limiter::{Limiter, OnStoreError, StoreError, Verdict};
    /// let limiter = Limiter::builder().on_store_error(OnStoreError::FailOpen).build();
    /// let failed: Result<u32, StoreError> = Err(StoreError::msg("down"));
    /// assert_eq!(limiter.verdict(failed), Verdict::Unlimited);
    /// ```
    pub fn verdict<T>(&self, result: Result<T, crate::StoreError>) -> Verdict<T> {
        match (result, self.on_store_error()) {
            (Ok(decided), _) => Verdict::Decided(decided),
            (Err(_), OnStoreError::FailOpen) => Verdict::Unlimited,
            // Under FallBackToMemory a check never fails: memory answered.
            (Err(_), OnStoreError::FailClosed | OnStoreError::FallBackToMemory) => {
                Verdict::Unavailable
            }
        }
    }
}

/// How long a store that failed is left alone before one request tries it again; the others
/// meanwhile get the policy's answer at once instead of waiting for the timeout.
pub const RETRY_INTERVAL: Duration = Duration::from_millis(500);

/// Whether the store answers, shared by a limiter's clones.
#[derive(Debug)]
pub(crate) struct StoreHealth {
    healthy: AtomicBool,
    /// Whether `limiter_store_up` was set since the store first answered.
    reported: AtomicBool,
    /// Milliseconds since [`origin`] when the next attempt is allowed while unhealthy.
    next_attempt: AtomicU64,
}

impl StoreHealth {
    pub(crate) fn new() -> StoreHealth {
        StoreHealth {
            healthy: AtomicBool::new(true),
            reported: AtomicBool::new(false),
            next_attempt: AtomicU64::new(0),
        }
    }

    /// Whether this check should go to the store: always while it answers; once per
    /// [`RETRY_INTERVAL`] while it does not.
    pub(crate) fn should_try(&self) -> bool {
        if self.healthy.load(Ordering::Relaxed) {
            return true;
        }
        let now = elapsed_ms();
        let due = self.next_attempt.load(Ordering::Relaxed);
        now >= due
            && self
                .next_attempt
                .compare_exchange(due, now + retry_ms(), Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }

    pub(crate) fn failed(
        &self,
        store: &'static str,
        error: &dyn std::fmt::Display,
        policy: OnStoreError,
    ) {
        self.next_attempt
            .store(elapsed_ms() + retry_ms(), Ordering::Relaxed);
        let lost = self.healthy.swap(false, Ordering::Relaxed);
        if lost || !self.reported.swap(true, Ordering::Relaxed) {
            crate::observe::store_up(store, false);
        }
        if lost {
            tracing::warn!(
                %error,
                ?policy,
                "rate limit store lost; applying the store error policy until it answers again"
            );
        }
    }

    /// The store answered: `limiter_store_up` goes to 1 at its first answer and when it
    /// comes back; otherwise this is one relaxed load.
    pub(crate) fn answered(&self, store: &'static str) {
        if !self.healthy.load(Ordering::Relaxed) {
            if !self.healthy.swap(true, Ordering::Relaxed) {
                crate::observe::store_up(store, true);
                tracing::info!("rate limit store back; counting in it again");
            }
        } else if crate::observe::ENABLED && !self.reported.load(Ordering::Relaxed) {
            self.reported.store(true, Ordering::Relaxed);
            crate::observe::store_up(store, true);
        }
    }
}

fn retry_ms() -> u64 {
    RETRY_INTERVAL.as_millis() as u64
}

/// Real time, whatever clock the limiter counts with: a manual clock must not keep a failed
/// store from being retried.
fn elapsed_ms() -> u64 {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    ORIGIN.get_or_init(Instant::now).elapsed().as_millis() as u64
}
