//! # Several instances
//!
//! Two instances behind a balancer each count their half, and the real limit doubles. The
//! Redis store (feature `redis`) gives them one budget: each check is one atomic script, on
//! Redis's clock, with the same decisions as the in-memory store.
//!
//! ```
//! # #[cfg(feature = "redis")]
//! # fn build() -> Result<(), limiter::StoreError> {
//! use std::time::Duration;
//! use limiter::{Limiter, OnStoreError, RedisStore};
//!
//! let limiter = Limiter::builder()
//!     .store(RedisStore::connect_lazily("redis://redis.internal:6379")?)
//!     .on_store_error(OnStoreError::FallBackToMemory) // the default
//!     .store_timeout(Duration::from_millis(50))      // the default
//!     .build();
//! # Ok(()) }
//! ```
//!
//! **When Redis fails** (an error, or no answer within the timeout), the
//! [`OnStoreError`](crate::OnStoreError) policy decides for that check; three failed calls
//! in a row mark Redis down, and it is then retried every 100 ms until it answers. Load is not a
//! failure: the timeout judges Redis's answer to each call, not the time a check waits for
//! its turn, and a dropped connection is reconnected and the call sent again at once.
//!
//! | policy | requests meanwhile | what it costs you |
//! | --- | --- | --- |
//! | `FallBackToMemory` (default) | counted in each instance's memory | limits hold per instance: `k` instances admit up to `k ×` the limit, or about the limit in all with [`fallback_share(k)`](crate::LimiterBuilder::fallback_share) |
//! | `FailOpen` | admitted, unlimited | no protection while Redis is away |
//! | `FailClosed` | `503` with `Retry-After: 1` | an outage of Redis is an outage of the route |
//!
//! The same choice, testable without Redis, with a store that fails:
//!
//! ```
//! use std::time::Duration;
//! use limiter::{Charge, Check, Checked, Limit, Limiter, OnStoreError, Policy, Receipt, Store, StoreError};
//!
//! struct Down;
//! impl Store for Down {
//!     fn check<'a>(&'a self, _: &'a Limit, _: &'a [u8], _: Duration) -> Check<'a> {
//!         Check::ready(Err(StoreError::msg("connection refused")))
//!     }
//!     fn check_all<'a>(&'a self, _: &'a [Charge<'a>], _: Duration) -> Check<'a, Checked> {
//!         Check::ready(Err(StoreError::msg("connection refused")))
//!     }
//!     fn refund<'a>(&'a self, _: &'a [Charge<'a>], _: &'a Receipt, _: Duration) -> Check<'a, ()> {
//!         Check::ready(Ok(()))
//!     }
//!     fn reset<'a>(&'a self, _: &'a Limit, _: &'a [u8]) -> Check<'a, ()> {
//!         Check::ready(Ok(()))
//!     }
//! }
//!
//! # actix_web::rt::System::new().block_on(async {
//! let limit = Limit::new("login", Policy::new(1, Duration::from_secs(60)).unwrap());
//! let limiter = Limiter::builder().store(Down).build(); // falls back to memory
//! let first = limiter.check(&limit, b"ann").await.unwrap();
//! let second = limiter.check(&limit, b"ann").await.unwrap();
//! assert!(first.allowed() && !second.allowed()); // still limited, in this instance
//!
//! let limiter = Limiter::builder().store(Down).on_store_error(OnStoreError::FailClosed).build();
//! assert!(limiter.check(&limit, b"ann").await.is_err()); // a 503 in a handler
//! # });
//! ```
