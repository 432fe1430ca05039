//! The engine's tests, built as one binary: each file beside this one is a module, run as
//! `cargo test -p limiter-core --test engine MODULE::`. `memory` and `memory_bound` count
//! every allocation (a global allocator) and stand alone.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

#[path = "boundaries.rs"]
mod boundaries;
#[path = "concurrency.rs"]
mod concurrency;
#[path = "eviction.rs"]
mod eviction;
#[path = "out_of_order.rs"]
mod out_of_order;
#[path = "penalties.rs"]
mod penalties;
#[path = "reference.rs"]
mod reference;
#[path = "restart.rs"]
mod restart;
#[path = "stores.rs"]
mod stores;
