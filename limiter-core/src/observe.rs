//! Metrics through the `metrics` facade (feature `metrics`), and nothing at all without it.
//!
//! | metric | kind | labels |
//! | --- | --- | --- |
//! | `limiter_decisions_total` | counter | `scope`, `outcome`: `allowed`, `rejected`, `dry_run`, `exempt`, `store_error` |
//! | `limiter_store_seconds` | histogram | `store`: how long a networked store took to answer |
//! | `limiter_store_up` | gauge | `store`: 1 while it answers, 0 while the fault policy applies |
//! | `limiter_keys`, `limiter_bytes` | gauges | the in-memory store's keys and bytes |
//! | `limiter_evictions_total` | counter | keys the in-memory store forgot to make room |
//!
//! Labels are scopes and store names: their number is bounded by the program, never by its
//! clients (no key is ever a label). A handler keeps its counters' handles, so a decision
//! costs an atomic add, not a registry lookup; the handles are taken at a handler's first
//! request, so install the recorder (an exporter) before serving.

/// What became of a request, for one limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Allowed,
    Rejected,
    DryRun,
    Exempt,
    StoreError,
}

#[cfg(feature = "metrics")]
mod on {
    use std::sync::OnceLock;
    use std::time::Duration;

    use super::Outcome;

    const OUTCOMES: [(&str, Outcome); 5] = [
        ("allowed", Outcome::Allowed),
        ("rejected", Outcome::Rejected),
        ("dry_run", Outcome::DryRun),
        ("exempt", Outcome::Exempt),
        ("store_error", Outcome::StoreError),
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
    pub(crate) struct Counters(OnceLock<[metrics::Counter; 5]>);

    impl Counters {
        #[inline]
        pub(crate) fn add(&self, scope: &str, outcome: Outcome) {
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
    pub(crate) fn count(scope: &str, outcome: Outcome) {
        counter(scope, OUTCOMES[outcome as usize].0).increment(1);
    }

    pub(crate) fn store_answered(store: &'static str, took: Duration) {
        metrics::histogram!("limiter_store_seconds", "store" => store).record(took.as_secs_f64());
    }

    pub(crate) fn store_up(store: &'static str, up: bool) {
        metrics::gauge!("limiter_store_up", "store" => store).set(if up { 1.0 } else { 0.0 });
    }

    pub(crate) fn memory(keys: usize, bytes: usize, evictions: u64) {
        metrics::gauge!("limiter_keys").set(keys as f64);
        metrics::gauge!("limiter_bytes").set(bytes as f64);
        metrics::counter!("limiter_evictions_total").absolute(evictions);
    }

    /// Whether a recorder may be listening (the memory store's figures cost locks).
    pub(crate) const ENABLED: bool = true;
}

#[cfg(not(feature = "metrics"))]
mod off {
    use std::time::Duration;

    use super::Outcome;

    #[derive(Clone, Debug, Default)]
    pub(crate) struct Counters;

    impl Counters {
        #[inline(always)]
        pub(crate) fn add(&self, _: &str, _: Outcome) {}
    }

    #[inline(always)]
    pub(crate) fn count(_: &str, _: Outcome) {}

    #[inline(always)]
    pub(crate) fn store_answered(_: &'static str, _: Duration) {}

    #[inline(always)]
    pub(crate) fn store_up(_: &'static str, _: bool) {}

    #[inline(always)]
    pub(crate) fn memory(_: usize, _: usize, _: u64) {}

    pub(crate) const ENABLED: bool = false;
}

#[cfg(not(feature = "metrics"))]
pub(crate) use off::*;
#[cfg(feature = "metrics")]
pub(crate) use on::*;
