//! # Production controls
//!
//! - **A whole scope**: [`RateLimit`](crate::RateLimit) is a middleware with the same
//!   keys, responses and fields: `web::scope("/api").wrap(RateLimit::new(policy))`.
//! - **Exemptions**: `.exempt(["10.0.0.0/8"])`, `.exempt_when(|req| ...)` on the builder,
//!   `exempt = fn` on a limit. Exempt requests are not counted.
//! - **Cost**: `cost = 10` or `cost = fn`; all or nothing; a cost above what the limit ever
//!   admits is a 429 without `Retry-After`.
//! - **Failures only**: `count = "failures"` counts a request when admitted and gives it back
//!   when its response is a success, before the response leaves: exact under concurrency.
//! - **Dry runs**: `dry_run = true`, or `.dry_run(true)` for all: counted, reported, never
//!   enforced.
//! - **Configuration**: `.policy("scope", policy)` replaces a limit without recompiling;
//!   `limiter.set_policy(...)` while serving; `limiter.reset("scope", Subject::...)` forgets
//!   one client.
//!
//! ```
//! use std::time::Duration;
//! use actix_web::{test, web, App, HttpResponse};
//! use limiter::{rate_limit, Limiter, Policy, Subject};
//!
//! #[rate_limit(5, per = "15m", count = "failures", scope = "login")]
//! async fn login(form: web::Form<std::collections::HashMap<String, String>>) -> HttpResponse {
//!     if form.get("password").is_some_and(|p| p == "correct horse") {
//!         HttpResponse::Ok().finish()
//!     } else {
//!         HttpResponse::Unauthorized().finish()
//!     }
//! }
//!
//! # actix_web::rt::System::new().block_on(async {
//! // From configuration: three failures, not five.
//! let limiter = Limiter::builder()
//!     .policy("login", Policy::new(3, Duration::from_secs(900)).unwrap())
//!     .build();
//! let app = test::init_service(App::new().app_data(limiter.clone()).route("/login", web::post().to(login))).await;
//! let attempt = |password: &str| {
//!     test::TestRequest::post()
//!         .uri("/login")
//!         .set_form([("password", password)])
//!         .peer_addr("203.0.113.7:1".parse().unwrap())
//!         .to_request()
//! };
//! for _ in 0..10 {
//!     assert_eq!(test::call_service(&app, attempt("correct horse")).await.status(), 200);
//! }
//! for _ in 0..3 {
//!     assert_eq!(test::call_service(&app, attempt("guess")).await.status(), 401);
//! }
//! assert_eq!(test::call_service(&app, attempt("correct horse")).await.status(), 429);
//! // Support unblocks the address.
//! limiter.reset("login", Subject::Address("203.0.113.7".parse().unwrap())).await.unwrap();
//! assert_eq!(test::call_service(&app, attempt("correct horse")).await.status(), 200);
//! # });
//! ```
