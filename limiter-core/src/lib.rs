//! The runtime of [limiter](https://docs.rs/limiter): policies, the four counting
//! algorithms, clocks and stores.
//!
//! Most users depend on the `limiter` crate and write `#[rate_limit(...)]`; this crate is
//! what the attribute expands to, and what a custom store or a test talks to directly.
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

// The engine: policies, algorithms, clocks, decisions, stores, and the limiter with its
// fault policy. It knows nothing of HTTP.
pub mod algorithm;
pub mod clock;
mod decision;
mod limiter;
mod observe;
mod policy;
mod registry;
pub mod store;

// The actix glue, built on the engine.
pub mod actix;

pub use actix::attribute::{handler_path, Guarded, HandlerLimits, LimitSpec};
pub use actix::inline::{check, check_failures, Rejected};
pub use actix::keys::{client_ip, KeySpec};
pub use actix::middleware::{RateLimit, RateLimitService};
pub use actix::proxy::{
    self as proxy, client_of, Client, Contradiction, ForwardingHeaders, InvalidProxy,
    TrustedProxies,
};
pub use actix::reset::Subject;
pub use actix::response::{Failure, Rejection};
pub use actix::routes_page::routes_service;
pub use clock::{Clock, ManualClock, PreciseClock, SystemClock};
pub use decision::Decision;
pub use limiter::{Limiter, LimiterBuilder, OnStoreError, Verdict, RETRY_INTERVAL};
pub use policy::{Algorithm, Policy, PolicyError};
pub use registry::{routes, Declaration, Route, RouteLimit, Routes, ScopeConflict};
#[cfg(feature = "redis")]
pub use store::RedisStore;
pub use store::{Charge, Check, Checked, Limit, MemoryStore, Receipt, Store, StoreError};

/// What `#[rate_limit]` expands to reaches everything through here, by absolute paths, so
/// that a user's own `HttpResponse` or `Result` cannot capture it. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::actix::attribute::{handle, HandlerLimits, LimitSpec, RequestParts};
    pub use crate::actix::keys::KeySpec;
    pub use crate::registry::{Declares, HandlerPath, Registration};
    pub use crate::{Algorithm, Policy};
    pub use actix_web::http::header::HeaderName;
    pub use actix_web::{HttpRequest, Responder};
    pub use inventory;
    pub use std::sync::LazyLock;
}
