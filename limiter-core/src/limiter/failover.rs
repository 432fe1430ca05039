//! What happens when a networked store fails: a bounded wait per check, a policy for the
//! answer, and one event per transition (lost, back) rather than one per request.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

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

/// Whether the store answers, part by part ([`Store::part`](crate::Store::part): a Redis
/// Cluster's slots), shared by a limiter's clones. While every part answers, a check costs
/// one relaxed load; the failing parts, few, are looked up only while there are some.
#[derive(Debug)]
pub(crate) struct StoreHealth {
    /// How many parts are failing.
    failing: AtomicUsize,
    /// The failing parts, each with the time (ms since [`elapsed_ms`]'s origin) from which
    /// one request may try it again.
    parts: Mutex<HashMap<u16, u64>>,
    /// Whether `limiter_store_up` was set since the store first answered.
    reported: AtomicBool,
}

/// A failing part that no request tried for this long is forgotten: whether it answers is
/// unknown, and the next request for it tries at once anyway. Without this, a part nobody
/// asks for would keep the store reported down after it came back.
const FORGET_AFTER_MS: u64 = 10_000;

impl StoreHealth {
    pub(crate) fn new() -> StoreHealth {
        StoreHealth {
            failing: AtomicUsize::new(0),
            parts: Mutex::new(HashMap::new()),
            reported: AtomicBool::new(false),
        }
    }

    /// Whether this check (of state in `parts`) should go to the store: always while its
    /// parts answer; once per [`RETRY_INTERVAL`] while one does not.
    pub(crate) fn should_try(&self, parts: &[u16]) -> bool {
        if self.failing.load(Ordering::Relaxed) == 0 {
            return true;
        }
        let now = elapsed_ms();
        let mut failing = self.parts.lock();
        let due = parts
            .iter()
            .all(|part| failing.get(part).is_none_or(|&next| now >= next));
        if due {
            // This request tries them; the others wait for the next interval.
            for part in parts {
                if let Some(next) = failing.get_mut(part) {
                    *next = now + retry_ms();
                }
            }
        }
        due
    }

    pub(crate) fn failed(
        &self,
        parts: &[u16],
        store: &'static str,
        error: &dyn std::fmt::Display,
        policy: OnStoreError,
    ) {
        let lost = {
            let mut failing = self.parts.lock();
            let before = failing.len();
            let next = elapsed_ms() + retry_ms();
            for &part in parts {
                failing.insert(part, next);
            }
            self.failing.store(failing.len(), Ordering::Relaxed);
            before == 0 && !failing.is_empty()
        };
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

    /// The store answered for `parts`: `limiter_store_up` goes to 1 at its first answer and
    /// when its last failing part comes back; otherwise this is one relaxed load.
    pub(crate) fn answered(&self, parts: &[u16], store: &'static str) {
        if self.failing.load(Ordering::Relaxed) == 0 {
            if crate::observe::ENABLED && !self.reported.load(Ordering::Relaxed) {
                self.reported.store(true, Ordering::Relaxed);
                crate::observe::store_up(store, true);
            }
            return;
        }
        let back = {
            let mut failing = self.parts.lock();
            let before = failing.len();
            for part in parts {
                failing.remove(part);
            }
            let now = elapsed_ms();
            failing.retain(|_, next| *next + FORGET_AFTER_MS > now);
            self.failing.store(failing.len(), Ordering::Relaxed);
            before > 0 && failing.is_empty()
        };
        if back {
            crate::observe::store_up(store, true);
            tracing::info!("rate limit store back; counting in it again");
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
