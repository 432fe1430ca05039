//! Declarative rate limiting for actix-web.
//!
//! ```no_run
//! use actix_web::{post, web, App, HttpServer, Responder};
//! use limiter::rate_limit;
//!
//! #[post("/login")]
//! #[rate_limit(5, per = "1m", key = "ip")]
//! async fn login(form: web::Form<std::collections::HashMap<String, String>>) -> impl Responder {
//!     format!("hello {}", form.get("user").map_or("?", String::as_str))
//! }
//!
//! #[actix_web::main]
//! async fn main() -> std::io::Result<()> {
//!     HttpServer::new(|| App::new().service(login))
//!         .bind(("127.0.0.1", 8080))?
//!         .run()
//!         .await
//! }
//! ```
//!
//! Start with [`rate_limit`], the attribute's reference (every argument, its default and its
//! errors), then [the guide](guide): choosing an algorithm and a key, several instances,
//! testing with the manual clock, production controls, observability.
//!
//! This crate is the facade: the attribute, the actix glue (keys and proxies, the
//! middleware, responses and header fields: `src/actix/`), and the engine's items
//! ([`limiter_core`], which knows nothing of HTTP) under one name.
#![deny(missing_docs)]

// The engine's names a service uses, each documented once, where it is defined (the
// `limiter_core` crate): the facade lists them as re-exports rather than copying their pages.
#[cfg(feature = "redis")]
#[doc(no_inline)]
pub use limiter_core::RedisStore;
#[doc(no_inline)]
pub use limiter_core::{
    routes, Acquired, Algorithm, Calendar, Charge, Check, Checked, Clock, Concurrency, Decision,
    Declaration, Escalation, InvalidPolicy, Limit, ManualClock, MemoryStore, NoSlot, OnStoreError,
    Penalty, Period, Policy, PolicyError, PreciseClock, Receipt, RestoreError, Route, RouteLimit,
    Routes, ScopeConflict, Slot, SlotGuard, Store, StoreError, SystemClock, RETRY_INTERVAL,
};
// Who a client is by address: the key logic every front end shares, documented where it is
// defined (the `limiter_http` crate).
#[doc(no_inline)]
pub use limiter_http::{
    client_ip, client_of, Client, Contradiction, ForwardingHeaders, InvalidNetwork, ProxyNet,
    TrustedProxies,
};
// Shares, the rejected clients, a client to reset: plain values every front end shares,
// documented where they are defined.
#[doc(no_inline)]
pub use limiter_http::{InvalidShare, RejectedClient, Share, Subject};
// Plumbing of the glue: kept out of the documented surface.
#[doc(hidden)]
pub use limiter_core::Verdict;

mod actix;

pub mod guide;

/// Decides requests (see [`limiter_http::Limiter`], its page): the limiter of the actix
/// front end. Build it once, outside `HttpServer::new`'s closure, and clone it into each
/// worker's `App` with `.app_data(limiter.clone())`.
///
/// ```
/// use limiter::Limiter;
/// let limiter = Limiter::builder().trusted_proxies(["10.0.0.0/8"]).build();
/// assert_eq!(limiter.ipv6_prefix(), 56);
/// ```
pub type Limiter = limiter_http::Limiter<Actix>;
/// Settings for a [`Limiter`] (see [`limiter_http::LimiterBuilder`], its page).
pub type LimiterBuilder = limiter_http::LimiterBuilder<Actix>;
pub use actix::front::Actix;
pub use actix::in_flight_middleware::{ConcurrencyLimit, ConcurrencyLimitService};
pub use actix::inline::{check, check_failures, Rejected};
/// How a limit picks the client key (see [`limiter_http::KeySpec`], its page): over
/// actix's [`HttpRequest`](actix_web::HttpRequest).
///
/// ```
/// use limiter::KeySpec;
/// let by_api_key = KeySpec::Header(actix_web::http::header::HeaderName::from_static("x-api-key"));
/// assert_eq!(by_api_key.kind(), "header:x-api-key");
/// ```
pub type KeySpec = limiter_http::KeySpec<Actix>;
/// A function that finds a key or a policy for a request, plain or `async` (see
/// [`limiter_http::Resolver`], its page): over actix's
/// [`HttpRequest`](actix_web::HttpRequest).
pub type Resolver<T> = limiter_http::Resolver<Actix, T>;
pub use actix::middleware::{RateLimit, RateLimitService};
pub use actix::problem::{Failure, Rejection};
pub use actix::routes_page::routes_service;
#[doc(no_inline)]
pub use limiter_http::{Awaited, IntoResolver, Now};
#[doc(inline)]
#[doc = include_str!("docs/concurrency_limit.md")]
pub use limiter_macros::concurrency_limit;
#[doc(inline)]
#[doc = include_str!("docs/attribute.md")]
pub use limiter_macros::rate_limit;

/// What `#[rate_limit]` expands to reaches everything through here, by absolute paths, so
/// that a user's own `HttpResponse` or `Result` cannot capture it. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::actix::attribute::{handle, Guarded, RequestParts};
    pub use crate::actix::{HandlerLimits, InFlightSpec, LimitSpec};
    pub use crate::KeySpec;
    pub use crate::Resolver;
    pub use crate::Share;
    pub use actix_web::http::header::HeaderName;
    pub use actix_web::{HttpRequest, Responder};
    pub use limiter_core::__private::{inventory, Declares, HandlerPath, LazyLock, Registration};
    pub use limiter_core::Period;
    pub use limiter_core::{Algorithm, Penalty, Policy};
    pub use limiter_http::handler_path;
    pub use limiter_macros::__rate_limit_stack as rate_limit_stack;
}
