//! Compiles the checked-in expansions of the examples (written by `tests/expansions.rs`),
//! so that what the README shows a reader is code that builds. Each is a module, kept in
//! prettyplease's layout.

#![allow(dead_code)]

#[rustfmt::skip]
mod api_key;
#[rustfmt::skip]
mod axum;
#[rustfmt::skip]
mod basic;
#[rustfmt::skip]
mod behind_proxy;
#[rustfmt::skip]
mod custom_key;
#[rustfmt::skip]
mod custom_response;
#[rustfmt::skip]
mod exports;
#[rustfmt::skip]
mod login_failures;
#[cfg(feature = "metrics")]
#[rustfmt::skip]
mod metrics;
#[rustfmt::skip]
mod middleware;
#[rustfmt::skip]
mod penalties;
#[rustfmt::skip]
mod per_user;
#[cfg(feature = "redis")]
#[rustfmt::skip]
mod redis;
#[rustfmt::skip]
mod shared_scope;
#[rustfmt::skip]
mod stacked;
#[rustfmt::skip]
mod tiers;

fn main() {}
