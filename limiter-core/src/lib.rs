//! The engine of [limiter](https://docs.rs/limiter): policies, the four counting
//! algorithms, clocks, stores (in memory, Redis), the [`Limiter`] with its fault policy, and
//! the registry of declared limits. It knows nothing of HTTP: no actix-web is in its
//! dependency tree. The actix glue — the attribute's runtime, the middleware, keys and
//! proxies, responses — lives in the `limiter` crate on top of it.
//!
//! Most users depend on `limiter` and write `#[rate_limit(...)]`; this crate is what a
//! custom store, another framework's glue, or a test talks to directly.
//!
//! ```
//! use std::time::Duration;
//! use limiter::{Limit, MemoryStore, Policy};
//!
//! let store = MemoryStore::new();
//! let login = Limit::new("login", Policy::new(5, Duration::from_secs(60))?);
//! let now = Duration::ZERO;
//! let admitted = (0..7).filter(|_| store.check_at(&login, b"203.0.113.9", now).allowed()).count();
//! assert_eq!(admitted, 5);
//! # Ok::<(), limiter::PolicyError>(())
//! ```
#![deny(missing_docs)]

// Policies, algorithms, clocks, decisions, stores, and the limiter with its fault policy.
mod algorithm;
mod clock;
mod concurrency;
mod decision;
mod limiter;
mod observe;
use policy::penalty;
mod policy;
mod policy_text;
mod registry;
mod store;

pub use clock::{Clock, ManualClock, PreciseClock, SystemClock};
pub use concurrency::{Acquired, Concurrency, NoSlot, Slot};
pub use decision::Decision;
#[doc(hidden)]
pub use limiter::Verdict;
pub use limiter::{Limiter, LimiterBuilder, OnStoreError, SlotGuard, RETRY_INTERVAL};
pub use penalty::{Escalation, Penalty};
pub use policy::calendar::{Calendar, Period};
pub use policy::{Algorithm, Policy, PolicyError};
pub use policy_text::InvalidPolicy;
pub use registry::{routes, Declaration, Route, RouteLimit, Routes, ScopeConflict};
#[cfg(feature = "redis")]
pub use store::RedisStore;
pub use store::{
    Charge, Check, Checked, Limit, MemoryStore, Receipt, RestoreError, Store, StoreError,
};

/// What the glue on top (the `limiter` crate) reaches of the engine's insides. Not a
/// public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::registry::{
        path_is_shared, register, Declares, HandlerPath, Registration, Shared,
    };
    pub use inventory;
    pub use std::sync::LazyLock;
}
