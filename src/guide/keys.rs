//! # Choosing the key
//!
//! A limit counts per key. Per address catches a bot, and also a whole office or a mobile
//! carrier behind one address; per user is fairer where there is a session. The usual
//! answer is both: a generous limit per address before anything is read, and a stricter one
//! per user (or per username, once the form is read — [`check`](crate::check)).
//!
//! ```
//! use actix_web::HttpRequest;
//! use limiter::{rate_limit, Limiter};
//!
//! // Signed-in users by id; anonymous requests fall back to their address.
//! fn user_id(req: &HttpRequest) -> Option<String> {
//!     req.headers().get("x-user-id")?.to_str().ok().map(str::to_owned)
//! }
//!
//! #[rate_limit(300, per = "1m")]                 // per address: room for an office
//! #[rate_limit(60, per = "1m", key = "user")]    // per user
//! async fn feed() -> &'static str {
//!     "feed"
//! }
//!
//! let limiter = Limiter::builder()
//!     .user_key(user_id)
//!     .trusted_proxies(["10.0.0.0/8"]) // your load balancers: their X-Forwarded-For is believed
//!     .build();
//! ```
//!
//! **Headroom.** Set the per-address limit well above what one person does, so that a
//! hundred people behind one address never meet it; the per-user limit is the real one.
//!
//! **Proxies.** Forwarding headers are never believed by default: a client could write any
//! address into them. Name your proxies with
//! [`trusted_proxies`](crate::LimiterBuilder::trusted_proxies); the client is then the
//! right-most address that is not a trusted proxy. IPv6 clients are counted per /56
//! ([`ipv6_prefix`](crate::LimiterBuilder::ipv6_prefix)): one customer gets a whole prefix.
//!
//! Which client a request is counted as, for your logs:
//!
//! ```
//! use actix_web::test::TestRequest;
//! use limiter::{Client, Limiter};
//!
//! let limiter = Limiter::builder().trusted_proxies(["10.0.0.1"]).build();
//! let req = TestRequest::get()
//!     .insert_header(("x-forwarded-for", "198.51.100.7"))
//!     .peer_addr("10.0.0.1:443".parse().unwrap())
//!     .to_http_request();
//! assert_eq!(limiter.client(&req), Ok(Client::Address("198.51.100.7".parse().unwrap())));
//! ```
