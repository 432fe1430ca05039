//! # Seeing it
//!
//! **What is protected, by what**: [`routes`](crate::routes) lists every `#[rate_limit]`
//! handler before any request (each registers itself when compiled), and
//! [`Limiter::routes`](limiter_core::Limiter::routes) as a limiter applies them. Print it at
//! start-up; serve it to operators with [`routes_service`](crate::routes_service).
//!
//! ```
//! use limiter::{rate_limit, Limiter};
//!
//! #[rate_limit(5, per = "15m", count = "failures", scope = "guide-login")]
//! async fn login() -> &'static str {
//!     "ok"
//! }
//!
//! let table = Limiter::builder().build().routes().to_string();
//! let row = table.lines().find(|line| line.starts_with("guide-login")).unwrap();
//! assert!(row.contains("5 per 15m, sliding_window") && row.contains("count=failures"));
//! ```
//!
//! **Metrics** (feature `metrics`): `limiter_decisions_total{scope, outcome}`, the store's
//! latency and health, the memory store's keys, bytes and evictions, through the `metrics`
//! facade — install any exporter's recorder before serving (`examples/metrics.rs` serves
//! Prometheus text). Labels are scopes, never clients.
//!
//! **Events** (`tracing`): a `debug` event per rejection (scope, key kind, Retry-After;
//! the key itself only with [`trace_keys`](crate::LimiterBuilder::trace_keys)), a `warn`
//! per would-be rejection of a dry run, and once each, the setups that cannot do what their
//! author meant (a limiter never given to the app, one built per worker, a proxy nobody
//! trusts, ...).
