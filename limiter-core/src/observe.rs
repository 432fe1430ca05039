//! The engine's metrics through the `metrics` facade (feature `metrics`), and nothing at all
//! without it; the decisions are counted by the glue (`limiter_decisions_total`).
//!
//! | metric | kind | labels |
//! | --- | --- | --- |
//! | `limiter_store_seconds` | histogram | `store`: how long a networked store took to answer |
//! | `limiter_store_up` | gauge | `store`: 1 while it answers, 0 while the fault policy applies |
//! | `limiter_keys`, `limiter_bytes` | gauges | the in-memory store's keys and bytes |
//! | `limiter_evictions_total` | counter | keys the in-memory store forgot to make room |
//! | `limiter_blocks_total` | counter | `scope`: blocks a penalty started (`block = "..."`) |
//!
//! Labels are store names: their number is bounded by the program, never by its clients.

#[cfg(feature = "metrics")]
mod on {
    use std::time::Duration;

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

    pub(crate) fn block_started(scope: &str) {
        metrics::counter!("limiter_blocks_total", "scope" => scope.to_string()).increment(1);
    }

    /// Whether a recorder may be listening (the memory store's figures cost locks).
    pub(crate) const ENABLED: bool = true;
}

#[cfg(not(feature = "metrics"))]
mod off {
    use std::time::Duration;

    #[inline(always)]
    pub(crate) fn store_answered(_: &'static str, _: Duration) {}

    #[inline(always)]
    pub(crate) fn store_up(_: &'static str, _: bool) {}

    #[inline(always)]
    pub(crate) fn memory(_: usize, _: usize, _: u64) {}

    #[inline(always)]
    pub(crate) fn block_started(_: &str) {}

    pub(crate) const ENABLED: bool = false;
}

#[cfg(not(feature = "metrics"))]
pub(crate) use off::*;
#[cfg(feature = "metrics")]
pub(crate) use on::*;
