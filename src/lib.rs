//! Declarative rate limiting for actix-web.
//!
//! This crate is the facade: it re-exports the runtime ([`limiter_core`]) and the
//! `#[rate_limit]` attribute. See the README for the attribute reference.
#![deny(missing_docs)]

pub use limiter_core::*;
