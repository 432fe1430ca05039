//! # Testing your limits
//!
//! Give the limiter a [`ManualClock`](crate::ManualClock) and move time yourself: a test of
//! a one-hour limit takes microseconds, and lands exactly on the edges.
//!
//! ```
//! use std::time::Duration;
//! use actix_web::{test, web, App};
//! use limiter::{rate_limit, Limiter, ManualClock};
//!
//! #[rate_limit(3, per = "1h")]
//! async fn export() -> &'static str {
//!     "csv"
//! }
//!
//! # actix_web::rt::System::new().block_on(async {
//! let clock = ManualClock::new();
//! let app = test::init_service(
//!     App::new()
//!         .app_data(Limiter::builder().clock(clock.clone()).build())
//!         .route("/export", web::get().to(export)),
//! )
//! .await;
//! // Test requests have no peer address unless you give one: a route keyed by address
//! // answers those 500, rather than counting everyone together.
//! let get = || test::TestRequest::get().uri("/export").peer_addr("192.0.2.1:1".parse().unwrap()).to_request();
//! for _ in 0..3 {
//!     assert_eq!(test::call_service(&app, get()).await.status(), 200);
//! }
//! assert_eq!(test::call_service(&app, get()).await.status(), 429);
//! clock.advance(Duration::from_secs(3599));
//! assert_eq!(test::call_service(&app, get()).await.status(), 429); // a second early
//! clock.advance(Duration::from_secs(1));
//! assert_eq!(test::call_service(&app, get()).await.status(), 200); // exactly an hour later
//! # });
//! ```
//!
//! Each test builds its own `Limiter`: its store is its own, so tests running in parallel
//! never share budgets. Give handlers distinct `scope`s when two tests must not share one
//! through the global limiter.
