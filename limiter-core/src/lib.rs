//! The runtime of [limiter](https://docs.rs/limiter): policies, the four counting
//! algorithms, clocks and stores.
//!
//! Most users depend on the `limiter` crate and write `#[rate_limit(...)]`; this crate is
//! what the attribute expands to, and what a custom store or a test talks to directly.
//!
//! ```
//! use std::time::Duration;
//! use limiter_core::{Limit, MemoryStore, Policy};
//!
//! let store = MemoryStore::new();
//! let login = Limit::new("login", Policy::new(5, Duration::from_secs(60))?);
//! let now = Duration::ZERO;
//! let admitted = (0..7).filter(|_| store.check_at(&login, b"203.0.113.9", now).allowed()).count();
//! assert_eq!(admitted, 5);
//! # Ok::<(), limiter_core::PolicyError>(())
//! ```
#![deny(missing_docs)]

pub mod algorithm;
pub mod clock;
mod decision;
pub mod failover;
mod handler;
mod key;
mod limiter;
mod mistakes;
mod policy;
pub mod proxy;
mod registry;
mod response;
pub mod store;

pub use clock::{Clock, ManualClock, PreciseClock, SystemClock};
pub use decision::Decision;
pub use failover::OnStoreError;
pub use handler::{handler_path, Guarded, HandlerLimits, LimitSpec};
pub use key::{client_ip, KeySpec};
pub use limiter::{Limiter, LimiterBuilder};
pub use policy::{Algorithm, Policy, PolicyError};
pub use proxy::{
    client_of, Client, Contradiction, ForwardingHeaders, InvalidProxy, TrustedProxies,
};
pub use registry::{routes, Declaration, Route, ScopeConflict};
pub use response::{Failure, Rejection};
#[cfg(feature = "redis")]
pub use store::RedisStore;
pub use store::{Check, Limit, MemoryStore, Store, StoreError};

/// What `#[rate_limit]` expands to reaches everything through here, by absolute paths, so
/// that a user's own `HttpResponse` or `Result` cannot capture it. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::handler::{handle, HandlerLimits, LimitSpec, RequestParts};
    pub use crate::key::KeySpec;
    pub use crate::registry::Registration;
    pub use crate::{Algorithm, Policy};
    pub use actix_web::http::header::HeaderName;
    pub use actix_web::{HttpRequest, Responder};
    pub use inventory;
    pub use std::sync::LazyLock;
}
