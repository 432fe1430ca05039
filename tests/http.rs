//! The tests over HTTP with the in-memory store (and, with the `redis` feature, the same
//! controls on Redis), built as one binary: each file beside this one is a module, run as
//! `cargo test --test http MODULE::`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

mod common;

#[path = "attribute.rs"]
mod attribute;
#[path = "axum.rs"]
mod axum_parity;
#[path = "axum_resolvers.rs"]
mod axum_resolvers;
#[path = "boundary.rs"]
mod boundary;
#[path = "composition.rs"]
mod composition;
#[path = "concurrency.rs"]
mod concurrency;
#[path = "controls.rs"]
mod controls;
#[path = "cors.rs"]
mod cors;
#[path = "delay.rs"]
mod delay;
#[path = "fields.rs"]
mod fields;
#[path = "forwarding.rs"]
mod forwarding;
#[path = "handlers.rs"]
mod handlers;
#[path = "jitter.rs"]
mod jitter;
#[path = "keys.rs"]
mod keys;
#[path = "metrics.rs"]
mod metrics;
#[path = "middleware.rs"]
mod middleware;
#[path = "penalties.rs"]
mod penalties;
#[path = "quotas.rs"]
mod quotas;
#[path = "resolvers.rs"]
mod resolvers;
#[path = "restart.rs"]
mod restart;
#[path = "rollout.rs"]
mod rollout;
#[path = "seeing.rs"]
mod seeing;
#[path = "server.rs"]
mod server;
#[path = "who.rs"]
mod who;

// A suite that is not built says so in the test output, with the command that runs it.
#[cfg(not(feature = "redis"))]
#[test]
#[ignore = "the same controls on Redis (modules' on_redis) need the `redis` feature and a \
            redis-server on the PATH: cargo test --workspace --all-features"]
fn on_redis_skipped() {}

#[cfg(not(feature = "metrics"))]
#[test]
#[ignore = "the metrics suite needs the `metrics` feature: cargo test --all-features --test http"]
fn metrics_skipped() {}
