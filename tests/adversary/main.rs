//! The standing adversarial suite: the attacks a client who pushes would try, over real
//! HTTP on loopback, against real Redis servers the suite starts itself, each bounded in
//! count and time, each asserting the bound it attacks and printing the margin.
//!
//! Run it alone with `cargo test --release --all-features --test adversary -- --nocapture`
//! to read the figures.
#![cfg(feature = "redis")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

mod bodies;
#[path = "../common/mod.rs"]
mod common;
mod faults;
mod harness;
mod isolation;
mod load;
mod refunds;
mod slots;
