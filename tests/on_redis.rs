//! The Redis store's own tests — one server, a cluster, Sentinel, TLS, its operations and
//! the CLI — built as one binary. Each starts its own `redis-server` (or `valkey-server`,
//! `LIMITER_REDIS_SERVER`) on a free port. Without the `redis` feature there is nothing to
//! run: `skipped` says how to run them.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

mod common;

#[path = "axum_redis.rs"]
mod axum_redis;
#[path = "cli.rs"]
mod cli;
#[path = "redis.rs"]
mod redis;
#[path = "redis_cluster.rs"]
mod redis_cluster;
#[path = "redis_operations.rs"]
mod redis_operations;
#[path = "redis_sentinel.rs"]
mod redis_sentinel;
#[path = "redis_tls.rs"]
mod redis_tls;

// A suite that is not built says so in the test output, with the command that runs it.
#[cfg(not(feature = "redis"))]
#[test]
#[ignore = "the Redis store's suites (one server, cluster, Sentinel, TLS, operations, CLI) need the \
            `redis` feature and a redis-server on the PATH: cargo test --workspace --all-features"]
fn redis_suites_skipped() {}

#[cfg(all(feature = "redis", not(feature = "redis-tls")))]
#[test]
#[ignore = "the TLS suite needs the `redis-tls` feature: cargo test --all-features --test on_redis"]
fn redis_tls_skipped() {}

#[cfg(all(feature = "redis", not(feature = "cli")))]
#[test]
#[ignore = "the CLI's suite needs the `cli` feature: cargo test --all-features --test on_redis"]
fn cli_skipped() {}
