//! The standing adversarial suite: the attacks a client who pushes would try, over real
//! HTTP on loopback, against real Redis servers the suite starts itself, each bounded in
//! count and time, each asserting the bound it attacks and printing the margin.
//!
//! Run it alone with `cargo test --release --all-features --test adversary -- --nocapture`
//! to read the figures.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

#[cfg(feature = "redis")]
mod bodies;
#[cfg(feature = "redis")]
#[path = "../common/mod.rs"]
mod common;
#[cfg(feature = "redis")]
mod faults;
#[cfg(feature = "redis")]
mod harness;
#[cfg(feature = "redis")]
mod isolation;
#[cfg(feature = "redis")]
mod load;
#[cfg(feature = "redis")]
mod on_axum;
#[cfg(feature = "redis")]
mod refunds;
#[cfg(feature = "redis")]
mod slots;

// Not built, and said so in the test output, with the command that runs it.
#[cfg(not(feature = "redis"))]
#[test]
#[ignore = "the attacks run two instances on a real Redis: they need the `redis` feature and \
            a redis-server on the PATH: cargo test --all-features --test adversary"]
fn attacks_skipped() {}
