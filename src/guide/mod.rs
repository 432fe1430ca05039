//! The guide: how to choose and run limits, in the order you need it. Every code block is a
//! test that runs.
//!
//! 1. [Choosing an algorithm](algorithms) — the boundary attack, and what each costs.
//! 2. [Choosing the key](keys) — per user or per address, headroom, proxies.
//! 3. [Several instances](instances) — Redis, and what happens when it fails.
//! 4. [Testing your limits](testing) — the manual clock, no `sleep`.
//! 5. [Production controls](controls) — scopes, exemptions, cost, failures, dry runs,
//!    configuration.
//! 6. [Seeing it](observability) — the route table, metrics, events.
//!
//! The attribute's reference is [`rate_limit`](crate::rate_limit).

pub mod algorithms;
pub mod controls;
pub mod instances;
pub mod keys;
pub mod observability;
pub mod testing;
