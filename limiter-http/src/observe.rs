//! The decisions, counted through the `metrics` facade (feature `metrics`), and nothing at
//! all without it: `limiter_decisions_total`, labelled `scope` and `outcome` (`allowed`,
//! `rejected`, `blocked` — refused by a penalty's block, or starting one —, `dry_run`,
//! `exempt`, `store_error`: every check the fault policy answered —
//! failed open, failed closed, or decided by the fallback memory). The engine counts its stores' own
//! figures (latency, health, the memory store's keys and bytes).
//!
//! Labels are scopes: their number is bounded by the program, never by its clients (no key
//! is ever a label). A handler keeps its counters' handles, so a decision costs an atomic
//! add, not a registry lookup; the handles are taken at a handler's first request, so
//! install the recorder (an exporter) before serving.

/// What became of a request, for one limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Admitted.
    Allowed,
    /// Refused.
    Rejected,
    /// Would have been refused, and let through (on trial).
    DryRun,
    /// Not counted.
    Exempt,
    /// Answered by the fault policy.
    StoreError,
    /// Refused by a penalty's block, or starting one.
    Blocked,
}

impl Outcome {
    /// What a store's answer counts as: `store_error` when the fault policy gave it (the
    /// fallback memory decided, the store being away), else allowed or rejected.
    #[inline]
    pub fn of(decision: &limiter_core::Decision) -> Outcome {
        match (decision.by_fallback(), decision.allowed()) {
            (true, _) => Outcome::StoreError,
            (false, true) => Outcome::Allowed,
            (false, false) if decision.blocked() => Outcome::Blocked,
            (false, false) => Outcome::Rejected,
        }
    }
}

#[cfg(feature = "metrics")]
mod on {
    use std::sync::OnceLock;

    use super::Outcome;

    const OUTCOMES: [(&str, Outcome); 6] = [
        ("allowed", Outcome::Allowed),
        ("rejected", Outcome::Rejected),
        ("dry_run", Outcome::DryRun),
        ("exempt", Outcome::Exempt),
        ("store_error", Outcome::StoreError),
        ("blocked", Outcome::Blocked),
    ];

    fn counter(scope: &str, outcome: &'static str) -> metrics::Counter {
        metrics::counter!(
            "limiter_decisions_total",
            "scope" => scope.to_string(),
            "outcome" => outcome
        )
    }

    /// A limit's decision counters, taken from the recorder at first use.
    #[derive(Debug, Default)]
    pub struct Counters(OnceLock<[metrics::Counter; 6]>);

    impl Counters {
        /// Counts one decision of `scope`.
        #[inline]
        pub fn add(&self, scope: &str, outcome: Outcome) {
            let all = self
                .0
                .get_or_init(|| OUTCOMES.map(|(name, _)| counter(scope, name)));
            all[outcome as usize].increment(1);
        }
    }

    impl Clone for Counters {
        fn clone(&self) -> Counters {
            Counters::default()
        }
    }

    /// A decision of a limit that keeps no handles (one checked inside a handler).
    pub fn count(scope: &str, outcome: Outcome) {
        counter(scope, OUTCOMES[outcome as usize].0).increment(1);
    }
}

#[cfg(not(feature = "metrics"))]
mod off {
    use super::Outcome;

    /// A limit's decision counters: none without the feature.
    #[derive(Clone, Debug, Default)]
    pub struct Counters;

    impl Counters {
        /// Counts nothing.
        #[inline(always)]
        pub fn add(&self, _: &str, _: Outcome) {}
    }

    /// Counts nothing.
    #[inline(always)]
    pub fn count(_: &str, _: Outcome) {}
}

#[cfg(not(feature = "metrics"))]
pub use off::*;
#[cfg(feature = "metrics")]
pub use on::*;
