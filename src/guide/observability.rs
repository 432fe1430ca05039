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
//! trusts, ...). They are `tracing` events, not `log` records: a service sees them only with
//! a `tracing` subscriber installed (`tracing_subscriber::fmt().init()`).
//!
//! # In depth
//!
//! **What is protected, by what.** Every `#[rate_limit]` handler registers itself at compile
//! time and every `RateLimit` middleware when its app is built, so `limiter::routes()` lists
//! them before any request; `limiter.routes()` shows each limit as that limiter applies it
//! (configured policies marked `configured`). Printed, it is a table; every example prints it at
//! start-up (`cargo run --example login_failures`):
//!
//! ```text
//! scope           limit                      key  options         handler
//! login-address   30 per 1m, sliding_window  ip   -               login_failures::login (examples/login_failures.rs:34)
//! login-failures  5 per 15m, sliding_window  ip   count=failures  login_failures::login (examples/login_failures.rs:34)
//! ```
//!
//! `limiter::routes_service("/limits")` serves the same table from the application: a small
//! HTML page (no external assets; [docs/limits-page.png](docs/limits-page.png) is `examples/tiers.rs`
//! with its free plan configured) or JSON (`Accept: application/json`, or `?format=json`). Mount
//! it where only operators reach it. Conflicts (one scope, two limits) are found at start-up,
//! naming both places (see [Common mistakes](super::mistakes)).
//!
//! **Who is being limited right now.** During an attack the question is "who?". Each limiter
//! keeps, per scope, the clients it rejected most over the last one to two minutes
//! ([`Limiter::rejected_clients`](crate::Limiter::rejected_clients), and a "Limited right
//! now" table on the routes page, `"rejected"` in its JSON): at most ten per scope, most
//! first by the rejections that are sure, each with its count and how much that count may be
//! over (under a flood of distinct clients every counter holds about the same upper bound;
//! the sure part is what tells a heavy client from a newcomer). It is a space-saving
//! summary of 64 counters per scope and minute, so memory stays fixed (at most 13 KiB per scope,
//! 1,024 scopes) whatever a flood of distinct clients sends, and any client with more than a
//! 64th of a minute's rejections is named with a count at most that much over — in
//! `tests/who.rs`, three heavy clients (400, 250, 150 rejections) among 2,000 light ones
//! were named in order with counts 401, 251, 151 (each at most 1 over). Clients are shown as
//! the limit keys them: an address, an IPv6 /56, `user:ID`; a header's or a key function's
//! value (often an API key) as `header:sha1:` and 8 bytes of its digest, unless
//! [`trace_keys`](crate::LimiterBuilder::trace_keys) is on. There is no per-client metric on
//! purpose: a label per client is a new time series for every address a rotating flood
//! uses, which is what breaks a Prometheus during an attack; the page's JSON is the
//! machine-readable source. The summary is a sample: a rejection that finds its scope's
//! summary being updated by another worker is not counted, so that rejections never queue
//! for it. The page names clients (addresses, user ids): mount it behind your
//! operators' authentication. Off with
//! [`.track_rejected_clients(false)`](crate::LimiterBuilder::track_rejected_clients).
//!
//! **Metrics** (feature `metrics`), through the `metrics` facade, so any exporter plugs in:
//!
//! | metric | kind | labels |
//! | --- | --- | --- |
//! | `limiter_decisions_total` | counter | `scope`; `outcome`: `allowed`, `rejected`, `blocked` (refused by a penalty's block, or starting one), `dry_run`, `exempt`, `store_error` |
//! | `limiter_store_seconds` | histogram | `store` (`redis`, or your store's `name()`): how long each call took |
//! | `limiter_store_up` | gauge | `store`: 1 while it answers, 0 while the fault policy applies |
//! | `limiter_keys`, `limiter_bytes` | gauges | the in-memory store's keys and bytes, once per housekeeping round |
//! | `limiter_evictions_total` | counter | keys the in-memory store forgot to make room |
//! | `limiter_blocks_total` | counter | `scope`: blocks a penalty started (`block = "..."`) |
//!
//! The outcomes partition the decisions: each limit's check is counted once. `store_error` is
//! every check the fault policy answered while the store failed — failed open, failed closed,
//! or decided by the fallback memory (`FallBackToMemory`, the default: those requests were
//! still limited, and `Decision::by_fallback` says so inside a handler) — so an alert on
//! `rate(limiter_decisions_total{outcome="store_error"}[1m]) > 0` sees every outage, whatever
//! the policy.
//!
//! Labels are scopes and store names, never a client's key, so their number is bounded by your
//! program. Each limit keeps its counters' handles, taken at its first request: install the
//! recorder before serving. Without the feature, none of this is compiled; with it and a
//! Prometheus recorder installed, the HTTP bench measured 0.995× the throughput without
//! (−0.03 µs CPU per request, within noise; `cargo bench --manifest-path benches/Cargo.toml --features metrics --bench http`, row
//! `metrics`). `examples/metrics.rs` serves Prometheus text on `/metrics`; after five wrong
//! passwords and a sixth attempt:
//!
//! ```text
//! limiter_decisions_total{scope="login",outcome="allowed"} 5
//! limiter_decisions_total{scope="login",outcome="rejected"} 1
//! limiter_keys 1
//! limiter_bytes 256
//! ```
//!
//! **Tracing.** Each rejection is a `debug` event (`rate limit: request rejected`, with `scope`,
//! the `key` kind and `retry_after_secs`); the client's key joins it only with
//! `.trace_keys(true)`, since an address, a user id or an API key may be personal data or a
//! secret. A would-be rejection or wait in a dry run is a `warn` event; losing and regaining a
//! networked store are one `warn` and one `info`. A request span that declares a `rate_limit`
//! field (`info_span!("request", rate_limit = tracing::field::Empty)` entered around the app,
//! as `tests/seeing.rs` does with `wrap_fn`) gets `rate_limit = "rejected"` when its request is
//! turned away.
