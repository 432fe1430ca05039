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
//! This crate is the facade: it re-exports the runtime ([`limiter_core`]) and the
//! attribute.
#![deny(missing_docs)]

pub use limiter_core::*;

pub mod guide;
#[doc(inline)]
#[doc = include_str!("docs/attribute.md")]
pub use limiter_macros::rate_limit;

/// What `#[rate_limit]` expands to reaches everything through here. Not a public API.
#[doc(hidden)]
pub mod __private {
    pub use limiter_core::__private::*;
    pub use limiter_macros::__rate_limit_stack as rate_limit_stack;
}
