//! Declarative rate limiting for axum and tower: the engine, keys, decisions and answers of
//! [limiter](https://docs.rs/limiter), on axum's handlers and as a tower `Layer`.
//!
//! ```no_run
//! use std::net::SocketAddr;
//! use axum::{routing::post, Extension, Form, Router};
//! use limiter_axum::{rate_limit, Limiter};
//!
//! #[derive(serde::Deserialize)]
//! struct Login { user: String }
//!
//! /// Decided before the form is read: a client over its limit gets a 429 and its body is
//! /// never parsed.
//! #[rate_limit(5, per = "1m", key = "ip")]
//! async fn login(Form(form): Form<Login>) -> String {
//!     format!("hello {}", form.user)
//! }
//!
//! #[tokio::main]
//! async fn main() -> std::io::Result<()> {
//!     let limiter = Limiter::builder().build();
//!     let app = Router::new().route("/login", post(login)).layer(Extension(limiter));
//!     let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//!     // The peer's address is what `key = "ip"` counts by.
//!     axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await
//! }
//! ```
//!
//! The attribute's grammar, its checks and its errors are the actix front end's (the
//! `limiter` crate's [`rate_limit`] page is the reference), and so are the answers: the
//! same 429 and 503 bytes, `Retry-After`, RateLimit fields and problem types for the same
//! decision. An actix instance and an axum instance on one Redis count one budget.
//!
//! What differs on axum:
//! - the request a key or policy function reads is the head, `&http::request::Parts`
//!   (what every extractor but the body's reads); an `async` one's future must be `Send`;
//! - the limiter is handed over as an `Extension`, or [`install`]ed as the process's own
//!   (no layer, no cost per request); else it is [`Limiter::global`]. The peer's address
//!   comes from axum's `ConnectInfo<SocketAddr>`;
//! - a guarded handler is a free function (not a method).
#![deny(missing_docs)]

mod fields;
mod front;
mod handler;
mod in_flight;
mod keys;
mod layer;
mod problem;
mod routes_page;

pub use fields::Headers;
pub use front::{install, Axum};
pub use layer::{RateLimitLayer, RateLimitService};
pub use problem::{Failure, Rejection};
pub use routes_page::routes_page;

// The engine's names a service uses, documented where they are defined.
#[cfg(feature = "redis")]
#[doc(no_inline)]
pub use limiter_core::RedisStore;
#[doc(no_inline)]
pub use limiter_core::{
    Algorithm, Calendar, Clock, Decision, Limit, ManualClock, MemoryStore, OnStoreError, Penalty,
    Period, Policy, PolicyError, PreciseClock, Store, StoreError, SystemClock,
};
// Who a client is by address, shares: every front end's, documented where defined.
#[doc(no_inline)]
pub use limiter_http::{
    client_ip, Client, Contradiction, ForwardingHeaders, InvalidNetwork, InvalidShare, ProxyNet,
    Share, TrustedProxies,
};
#[doc(no_inline)]
pub use limiter_http::{IntoResolver, Now};

/// Decides requests (see [`limiter_http::Limiter`], its page): the limiter of the axum
/// front end. Build it once and hand it to the router with
/// `.layer(axum::Extension(limiter))`.
///
/// ```
/// use limiter_axum::Limiter;
/// let limiter = Limiter::builder().trusted_proxies(["10.0.0.0/8"]).build();
/// assert_eq!(limiter.ipv6_prefix(), 56);
/// ```
pub type Limiter = limiter_http::Limiter<Axum>;
/// Settings for a [`Limiter`] (see [`limiter_http::LimiterBuilder`], its page).
pub type LimiterBuilder = limiter_http::LimiterBuilder<Axum>;
/// How a limit picks the client key (see [`limiter_http::KeySpec`], its page): over
/// http 1's request head.
///
/// ```
/// use limiter_axum::KeySpec;
/// let by_api_key = KeySpec::Header(axum::http::HeaderName::from_static("x-api-key"));
/// assert_eq!(by_api_key.kind(), "header:x-api-key");
/// ```
pub type KeySpec = limiter_http::KeySpec<Axum>;
/// A function that finds a key or a policy for a request (see [`limiter_http::Resolver`],
/// its page): over http 1's request head, `&http::request::Parts`.
pub type Resolver<T> = limiter_http::Resolver<Axum, T>;
/// A handler's limits, for axum.
#[doc(hidden)]
pub type HandlerLimits = limiter_http::HandlerLimits<Axum>;
/// One `#[rate_limit]`, for axum.
#[doc(hidden)]
pub type LimitSpec = limiter_http::LimitSpec<Axum>;
/// One `#[concurrency_limit]`, for axum.
#[doc(hidden)]
pub type InFlightSpec = limiter_http::InFlightSpec<Axum>;

/// Limits an axum handler: the actix front end's attribute, with the same grammar, checks
/// and errors (see the `limiter` crate's `rate_limit` page, the reference). Decided before
/// the handler's extractors run.
///
/// ```
/// use axum::{routing::get, Router};
/// use limiter_axum::rate_limit;
///
/// #[rate_limit(100, per = "1m")]
/// async fn items() -> &'static str {
///     "[]"
/// }
///
/// let app: Router = Router::new().route("/items", get(items));
/// ```
pub use limiter_macros::axum_rate_limit as rate_limit;

/// At most so many requests of a client in flight on an axum handler at once: the actix
/// front end's attribute, with the same grammar, checks and errors (see the `limiter`
/// crate's `concurrency_limit` page, the reference). The slot is taken before the
/// handler's rate limits are decided and held until its response's body is sent, or
/// dropped; a request over it gets a 429 with `Retry-After: 1`.
///
/// ```
/// use axum::{routing::post, Router};
/// use limiter_axum::{concurrency_limit, rate_limit};
///
/// #[concurrency_limit(2, key = "ip")]
/// #[rate_limit(10, per = "1m")]
/// async fn upload(body: axum::body::Bytes) -> String {
///     format!("{} bytes", body.len())
/// }
///
/// let app: Router = Router::new().route("/upload", post(upload));
/// ```
pub use limiter_macros::axum_concurrency_limit as concurrency_limit;

/// What `#[rate_limit]` expands to on axum reaches everything through here, by absolute
/// paths. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::handler::{Decide, Extracted, Limits};
    pub use crate::{HandlerLimits, InFlightSpec, KeySpec, LimitSpec, Resolver};
    pub use axum::http::HeaderName;
    pub use axum::response::Response;
    pub use limiter_core::__private::{inventory, Declares, HandlerPath, LazyLock, Registration};
    pub use limiter_core::{Algorithm, Penalty, Period, Policy};
    pub use limiter_http::{handler_path, Share};
    pub use limiter_macros::__rate_limit_stack_axum as rate_limit_stack;
}
