//! What happens when a networked store fails: a bounded wait per check, a policy for the
//! answer, and one event per transition (lost, back) rather than one per request.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
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
    #[doc(hidden)]
    #[inline]
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

/// How long a store found down is left alone before one request tries it again; the others
/// meanwhile get the policy's answer at once instead of waiting for the timeout. The first
/// request after it that the store answers brings the store back.
pub const RETRY_INTERVAL: Duration = Duration::from_millis(100);

/// Failed checks in a row (none answered between them) that show a part of the store down.
/// A refusal the store answered is not one (see [`StoreHealth::failed`]).
/// One failure is a blip — a dropped connection, a request that timed out while another
/// one was answered — and is not an outage: only that check gets the fault policy, and the
/// next ones still ask the store.
pub(crate) const FAILURES_TO_DOWN: u32 = 3;

/// Whether the store answers, part by part ([`Store::part`](crate::Store::part): a Redis
/// Cluster's slots), shared by a limiter's clones: a small circuit breaker per part. While
/// every part answers, a check costs one relaxed load; the failing parts, few, are looked
/// up only while there are some.
#[derive(Debug)]
pub(crate) struct StoreHealth {
    /// How many parts failed since they last answered (down or not yet).
    failing: AtomicUsize,
    /// The parts that failed since they last answered.
    parts: Mutex<HashMap<u16, Part>>,
    /// Whether `limiter_store_up` was set since the store first answered.
    reported: AtomicBool,
    /// When (ms, [`elapsed_ms`]'s, plus 1) a refusal the store answered was last logged.
    refusal_logged: AtomicU64,
}

/// A part that failed since it last answered.
#[derive(Clone, Copy, Debug)]
struct Part {
    /// Failed checks in a row.
    failures: u32,
    /// When (ms since [`elapsed_ms`]'s origin) one request may try it again, once down.
    next_try: u64,
    /// When it last failed.
    last_failure: u64,
    /// The failure last counted, when one failure failed many checks.
    last_incident: Option<u64>,
}

impl Part {
    fn is_down(&self) -> bool {
        self.failures >= FAILURES_TO_DOWN
    }
}

/// A store's refusals (see [`StoreHealth::failed`]) are logged once in this long (ms).
const REFUSAL_LOG_EVERY_MS: u64 = 60_000;

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
            refusal_logged: AtomicU64::new(0),
        }
    }

    /// Whether this check (of state in `parts`) should go to the store: always unless one
    /// of its parts is down; once per [`RETRY_INTERVAL`] while one is.
    pub(crate) fn should_try(&self, parts: &[u16]) -> bool {
        if self.failing.load(Ordering::Relaxed) == 0 {
            return true;
        }
        self.should_try_at(parts, elapsed_ms())
    }

    /// [`should_try`](Self::should_try) at `now` (ms, [`elapsed_ms`]'s).
    fn should_try_at(&self, parts: &[u16], now: u64) -> bool {
        let mut failing = self.parts.lock();
        let due = parts.iter().all(|part| {
            failing
                .get(part)
                .is_none_or(|p| !p.is_down() || now >= p.next_try)
        });
        if due {
            // This request tries them; the others wait for the next interval.
            for part in parts {
                if let Some(p) = failing.get_mut(part).filter(|p| p.is_down()) {
                    p.next_try = now + retry_ms();
                }
            }
        }
        due
    }

    /// Whether none of `parts` is down (a refund is not worth waiting for a store that is).
    pub(crate) fn is_up(&self, parts: &[u16]) -> bool {
        if self.failing.load(Ordering::Relaxed) == 0 {
            return true;
        }
        let failing = self.parts.lock();
        parts
            .iter()
            .all(|part| failing.get(part).is_none_or(|p| !p.is_down()))
    }

    /// A check of `parts` failed with `error`. A failure that failed many checks at once
    /// (one call of a batch) counts once.
    pub(crate) fn failed(
        &self,
        parts: &[u16],
        store: &'static str,
        error: &crate::StoreError,
        policy: OnStoreError,
    ) {
        self.failed_at(parts, store, error, policy, elapsed_ms());
    }

    /// [`failed`](Self::failed) at `now` (ms, [`elapsed_ms`]'s). A failure the store
    /// answered itself (a refusal: Redis out of memory) shows it up, not down: that check
    /// gets the policy's answer, and the next ones still ask the store (which answers at
    /// once), so that what it can still decide — a flood's rejections — it decides. Logged
    /// once a minute at most.
    fn failed_at(
        &self,
        parts: &[u16],
        store: &'static str,
        error: &crate::StoreError,
        policy: OnStoreError,
        now: u64,
    ) {
        if error.was_answered() {
            // Reachable: a part down (or failing) before is no longer, as after an answer.
            self.answered(parts, store);
            let logged = self.refusal_logged.load(Ordering::Relaxed);
            let due = logged == 0 || now + 1 >= logged + REFUSAL_LOG_EVERY_MS;
            if due && self.refusal_logged.swap(now + 1, Ordering::Relaxed) == logged {
                tracing::warn!(
                    %error,
                    ?policy,
                    "rate limit store refused a check; the store error policy answers the \
                     checks it refuses (further refusals within a minute are not logged)"
                );
            } else {
                tracing::debug!(%error, "rate limit store: a check refused");
            }
            return;
        }
        let (lost, down) = {
            let mut failing = self.parts.lock();
            let was_down = failing.values().any(Part::is_down);
            for &part in parts {
                let p = failing.entry(part).or_insert(Part {
                    failures: 0,
                    next_try: 0,
                    last_failure: now,
                    last_incident: None,
                });
                let again = error.incident().is_some() && error.incident() == p.last_incident;
                if !again {
                    p.failures = p.failures.saturating_add(1);
                    p.next_try = now + retry_ms();
                }
                p.last_incident = error.incident();
                p.last_failure = now;
            }
            self.failing.store(failing.len(), Ordering::Relaxed);
            let down = failing.values().any(Part::is_down);
            (!was_down && down, down)
        };
        if lost || !self.reported.swap(true, Ordering::Relaxed) {
            crate::observe::store_up(store, !down);
        }
        if lost {
            tracing::warn!(
                %error,
                ?policy,
                "rate limit store lost; applying the store error policy until it answers again"
            );
        } else {
            tracing::debug!(%error, "rate limit store: a check failed");
        }
    }

    /// The store answered for `parts`: `limiter_store_up` goes to 1 at its first answer and
    /// when its last part that was down comes back; otherwise this is one relaxed load.
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
            let was_down = failing.values().any(Part::is_down);
            for part in parts {
                failing.remove(part);
            }
            let now = elapsed_ms();
            failing.retain(|_, p| p.last_failure.max(p.next_try) + FORGET_AFTER_MS > now);
            self.failing.store(failing.len(), Ordering::Relaxed);
            was_down && !failing.values().any(Part::is_down)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StoreError;

    /// One failure that failed many checks at once (a batch's call) counts once: the
    /// checks of two failed calls leave the store up, a third call's puts it down, and one
    /// answer brings it back.
    #[test]
    fn the_checks_one_failure_failed_count_once() {
        let health = StoreHealth::new();
        let policy = OnStoreError::FailClosed;
        for incident in [1, 2] {
            for _ in 0..200 {
                let error = StoreError::msg("slow").of_incident(incident);
                health.failed(&[0], "test", &error, policy);
            }
            assert!(health.is_up(&[0]), "after incident {incident}");
        }
        health.failed(
            &[0],
            "test",
            &StoreError::msg("slow").of_incident(3),
            policy,
        );
        assert!(!health.is_up(&[0]));
        health.answered(&[0], "test");
        assert!(health.is_up(&[0]));
        // Failures of single checks (no incident) count one each.
        for _ in 0..FAILURES_TO_DOWN {
            health.failed(&[7], "test", &StoreError::msg("refused"), policy);
        }
        assert!(!health.is_up(&[7]));
    }

    /// A part found down is tried by one request per [`RETRY_INTERVAL`], the first of the
    /// interval; every other request meanwhile gets the policy's answer without asking.
    /// A request a millisecond, on the store's time (ms).
    #[test]
    fn a_part_found_down_is_tried_by_one_request_an_interval() {
        let health = StoreHealth::new();
        let down_at = 5_000;
        for _ in 0..FAILURES_TO_DOWN {
            let error = StoreError::msg("refused");
            health.failed_at(&[0], "test", &error, OnStoreError::FailClosed, down_at);
        }
        let tries: Vec<u64> = (down_at..down_at + 450)
            .filter(|&now| health.should_try_at(&[0], now))
            .map(|now| now - down_at)
            .collect();
        assert_eq!(tries, [100, 200, 300, 400]);
        // Its requests only: another part's go to the store.
        assert!(health.should_try_at(&[1], down_at + 450));
        assert!(health.should_try_at(&[0, 1], down_at + 500));
        assert!(!health.should_try_at(&[0, 1], down_at + 501));
    }

    /// Refusals the store answered (Redis out of memory) never put a part down: the next
    /// checks still ask the store.
    #[test]
    fn refusals_the_store_answered_leave_it_up() {
        let health = StoreHealth::new();
        for now in 0..10 {
            let error = StoreError::msg("OOM").of_incident(now + 1).of_refusal();
            health.failed_at(&[0], "test", &error, OnStoreError::FailOpen, now);
        }
        assert!(health.is_up(&[0]));
        assert!(health.should_try(&[0]));
        // And show a part down before reachable again.
        for incident in 100..103 {
            let error = StoreError::msg("timed out").of_incident(incident);
            health.failed_at(&[1], "test", &error, OnStoreError::FailOpen, 20);
        }
        assert!(!health.is_up(&[1]));
        let refusal = StoreError::msg("OOM").of_incident(200).of_refusal();
        health.failed_at(&[1], "test", &refusal, OnStoreError::FailOpen, 30);
        assert!(health.is_up(&[1]));
    }
}
