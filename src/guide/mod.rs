//! The guide: how to choose and run limits, in the order you need it, and everything the
//! README leaves out. Complete examples are tests that run; fragments are marked `ignore`.
//!
//! 1. [Choosing an algorithm](algorithms) — the boundary attack, and what each costs.
//! 2. [Choosing the key](keys) — per user or per address, headroom, proxies.
//! 3. [The attribute in depth](attribute) — checks at compile time, stacking, budgets.
//! 4. [Responses and configuration](responses) — the 429, its fields, the builder.
//! 5. [Several instances](instances) — Redis and its cluster, and what happens when they
//!    fail.
//! 6. [The in-memory store](memory) — sharding, bounds, eviction that isolates limits.
//! 7. [Testing your limits](testing) — the manual clock, no `sleep`.
//! 8. [Production controls](controls) — scopes, exemptions, cost, failures, dry runs,
//!    configuration.
//! 9. [Seeing it](observability) — the route table, metrics, events.
//! 10. [Common mistakes](mistakes) — what is reported once, and the fix.
//! 11. [Guarantees](guarantees) — what holds at every edge, and against an attacker.
//! 12. [Performance](performance) — side by side with the peers, and the commands that measure it.
//! 13. [Operating it](operations) — restarts, who is limited, rollouts, `limiter-cli`.
//! 14. [Layout](layout) — every folder of the repository, and what it holds.
//!
//! The attribute's reference is [`rate_limit`](crate::rate_limit).

pub mod algorithms;
pub mod attribute;
pub mod controls;
pub mod guarantees;
pub mod instances;
pub mod keys;
pub mod layout;
pub mod memory;
pub mod mistakes;
pub mod observability;
pub mod operations;
pub mod performance;
pub mod responses;
pub mod testing;
