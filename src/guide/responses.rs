//! # Responses and configuration
//!
//! ## Responses
//!
//! - **Rejected**: `429`, `Retry-After` in whole seconds (rounded up, never 0) computed from the
//!   algorithm's state — the exact time until one request would be admitted —
//!   `Cache-Control: no-store`, and an RFC 9457 `application/problem+json` body (`type`,
//!   `title`, `status`, `detail`, and the extension member `retry_after`). With
//!   `.quota_exceeded_problems(true)` on the builder, the body takes the draft's problem
//!   type, `https://iana.org/assignments/http-problem-types#quota-exceeded`, its title, and
//!   `"violated-policies": ["NAME"]` naming the limit that refused (as the RateLimit fields
//!   name it; of a stack, the one with the longest wait) — opt-in, since clients matching
//!   on `type` would see a change.
//! - **Every response** of a limited handler (allowed, rejected, or an extractor's error) carries
//!   `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-10), one member
//!   per limit checked: `q` quota, `w` window in seconds, `r` remaining after this request was
//!   counted, `t` whole seconds until used quota next comes back (equal to `Retry-After` on a
//!   `429`). The wire format is draft-10's (structured-field lists, `q`/`w` in
//!   `RateLimit-Policy`, `r`/`t` in `RateLimit`); draft-11 (May 2026) keeps that syntax. A
//!   summary of draft-11 (its full text is not checked here) reads `t` as the effective
//!   window and asks that `Retry-After` never point earlier than its end.
//!   Ours hold to that: on a `429`, `t` and `Retry-After` are one number, the limit's exact
//!   wait rounded up — or a penalty's block, which never ends before the limit admits — and
//!   a jitter only ever lengthens both together.
//! - **Jitter**: `jitter = "1s"` (or `RateLimit::jitter`) adds a random part of up to that
//!   much to a rejection's wait, drawn per response, so that clients refused at one instant
//!   (a window opening, a block ending) do not all come back at once; `tests/jitter.rs`
//!   refuses 200 clients at one instant and sees their `Retry-After` spread from 10 to 15 s.
//! - **A token bucket** advertises its rate: `60 per 1m` with `burst = 10` sends `q=60;w=60`,
//!   and `r` is the tokens in the bucket now. A client can send `r` requests at once, then one
//!   per `w/q` seconds, so up to `q + burst − 1` in any `w` seconds (69 here) — more than `q`
//!   by design; `tests/fields.rs` sends exactly that.
//! - `X-RateLimit-Limit`, `-Remaining` and `-Reset` (of the most restrictive limit) on request.
//! - **Requests the limiter cannot decide** get a fixed problem response that never shows
//!   internals (the cause goes to `tracing`), with `Cache-Control: no-store` and the handler's
//!   `RateLimit-Policy`; replace it with `.failure_response(|f: &Failure| ...)`:
//!
//!   | `Failure` | status | when |
//!   | --- | --- | --- |
//!   | `StoreUnavailable` | `503`, `Retry-After: 1` | the store failed or timed out, under `OnStoreError::FailClosed` |
//!   | `NoClientAddress` | `500` | a route keyed by address, and the request has no peer address |
//!   | `ContradictoryForwarding` | `400` | a trusted proxy's `Forwarded` and `X-Forwarded-For` name different clients |
//!
//! ## Configuration
//!
//! ```rust,ignore
//! let limiter = limiter::Limiter::builder()
//!     .user_key(|req: &HttpRequest| session_user_id(req))   // for key = "user"
//!     .trusted_proxies(["10.0.0.0/8"])                       // believe these proxies' Forwarded / X-Forwarded-For
//!     .ipv6_prefix(56)                                       // IPv6 clients grouped per /56 (default)
//!     .rejection_message("Slow down, please.")               // the 429's `detail`
//!     .rejection_response(|r| HttpResponse::TooManyRequests().body(format!("back in {}s", r.retry_after_secs())))
//!     .failure_response(|f| HttpResponse::build(f.status()).body(f.title())) // 503 / 500 / 400
//!     .legacy_headers(true)                                  // X-RateLimit-* too
//!     .ietf_headers(true)                                    // RateLimit-Policy / RateLimit (default on)
//!     .clock(limiter::ManualClock::new())                    // tests move time instead of sleeping
//!     .on_store_error(limiter::OnStoreError::FallBackToMemory) // when Redis fails (default)
//!     .store_timeout(Duration::from_millis(50))              // per check, networked stores (default)
//!     .keep_alive_body_limit(16 * 1024)                      // rejected bodies read and dropped, not parsed (default)
//!     .build();
//! App::new().app_data(limiter.clone())
//! ```
//!
//! - A handler uses the `Limiter` in its request's app data (`.app_data(limiter)`, or
//!   `.app_data(web::Data::new(limiter))`), else the process-global default (the global
//!   in-memory store and the system clock): nothing to configure for a single process.
//! - **Build it once, outside `HttpServer::new`'s closure, and clone it in** (see
//!   `examples/basic.rs`): a limiter built inside the closure exists once per worker and
//!   multiplies the limit. A `Limiter` built without `.store(...)` owns a fresh in-memory store;
//!   clones share it.
//! - A request with no peer address (a Unix socket, or a test request built without
//!   `.peer_addr(...)`) cannot be told apart from anyone: a route keyed by address answers it
//!   `500` with a problem body titled "Client Address Unknown", rather than counting it in a
//!   bucket shared by everybody.
//! - `build()` checks every `#[rate_limit]` handler of the program (they register themselves
//!   at compile time; `limiter::routes()` lists them) and panics on a scope given two
//!   different limits, naming both; `try_build()` returns the conflict.
//! - `.trusted_proxies([...])`, `.try_trusted_proxies([...])` and `.forwarding_headers(...)`:
//!   see [the keys](super::keys).
