//! # Common mistakes
//!
//! The mistakes that would otherwise show up only as wrong limits in production are reported
//! once, at their first occurrence, as a `warn` event that names the fix; after that,
//! looking for them costs a relaxed load of a flag (`tests/mistakes.rs` triggers each,
//! `tests/no_mistakes.rs` checks that a correct setup reports nothing). The events go through
//! `tracing`, not `log`: without a `tracing` subscriber nobody sees them. Install one before
//! serving, as `examples/basic.rs` does:
//!
//! ```
//! tracing_subscriber::fmt().init();
//! ```
//!
//! | mistake | what you see | the fix |
//! | --- | --- | --- |
//! | A `Limiter` built but never given to the `App` | `a Limiter was built, but a request found none in its app's data…`: requests were counted by the global limiter, without your trusted proxies or user resolver | `.app_data(limiter.clone())` (or `web::Data::new(limiter)`; an `Arc<Limiter>` works too) |
//! | The `Limiter` built inside `HttpServer::new`'s closure | `actix workers are each building a Limiter…`: each worker counts alone, multiplying every limit | build it once, outside the closure, and clone it in |
//! | `key = "user"` without a resolver | `a handler limited with key = "user" ran on a Limiter without a user resolver…`: it counted by address | `.user_key(\|req\| ...)` |
//! | Behind a proxy that is not trusted | `requests from 10.1.2.3, a private address, carry … X-Forwarded-For, but no proxy is trusted…`: every client shares the proxy's budget | `.trusted_proxies(["10.1.2.3"])` (or its network) |
//! | A trusted proxy whose header the limiter does not read | after 100 such requests in a row, `… came from trusted proxies without the forwarding header the limiter reads…` | `.forwarding_headers(...)` naming the header your proxy writes, or make the proxy send one |
//! | A header your proxy passes through (a client's own `Forwarded` beside your nginx's `X-Forwarded-For`) | counted by the header believed (`X-Forwarded-For` by default), and `… carried both forwarding headers, naming different clients; it is counted by the one believed…` once | nothing, if your proxy writes `X-Forwarded-For`; else `.forwarding_headers(ForwardingHeaders::Forwarded)` |
//! | One `scope`, two different limits | `build()` panics at start-up naming both handlers and lines | the same limit, or two scopes |
//! | A typo in the attribute | a compile error on the token, with the likely fix: `per = "1 minute"` → did you mean `"1m"`?, `key = "x-api-key"` → `"header:x-api-key"`, `key = ip` → `key = "ip"`, `algorithm = "token-bucket"` → `"token_bucket"` | as it says |
//!
//! A rejected request never holds a connection, and never has its body parsed. A small body
//! (`Content-Length` at most 16 KiB, `.keep_alive_body_limit(bytes)`) that arrives within
//! 200 ms (`.keep_alive_body_time(...)`) is read and dropped, so the client keeps its
//! keep-alive connection; a larger one, one of unknown length (chunked), or one sent slowly
//! is left unread and the connection closes after the 429 — actix lingers up to its
//! `client_disconnect_timeout` (1 s by default) reading what is still sent, so that the 429
//! is not lost to a reset. Measured over real sockets (`tests/adversary`): a body sent 5 bytes
//! a second gets its 429 after 200 ms and loses its connection; 200 of them at once are all
//! answered and closed within 2 s; a chunked 10 MB body at 1.3 MB/s gets its 429 at once and
//! its connection closed after 1.1 s, 1.3 MB in. `Expect: 100-continue` is answered
//! `100 Continue` by actix-http before any handler or middleware runs (actix-web's
//! `HttpServer` takes no expect handler), then the 429 comes at once and the body is not
//! read. Small rejected form posts over 32 keep-alive connections run at 4.8× the throughput
//! of closing each connection (`cargo bench --manifest-path benches/Cargo.toml --bench http`, rows `post_kept` and
//! `post_closed`).
