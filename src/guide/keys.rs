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
//!
//! # In depth
//!
//! | key | counts | when it is missing |
//! | --- | --- | --- |
//! | `"ip"` (default) | the client's address: the peer, or the address a trusted proxy vouched for; IPv6 per /56 (`.ipv6_prefix(n)`), IPv4-mapped IPv6 as IPv4, ports ignored | no peer address: a documented `500` (see Configuration) |
//! | `"user"` | the id from `.user_key(...)` | anonymous: the address |
//! | `"header:NAME"` | the header's value (an API key) | absent: the address |
//! | `"global"` | one budget for everyone on the route | — |
//! | a function path | any key a `fn(&HttpRequest) -> Option<String>` computes, or an `async fn` of that finds (within `.resolver_timeout(...)`, 100 ms) | `None`, or no answer in time: the address |
//!
//! - **Forwarding headers are never believed by default.** `.trusted_proxies(["10.0.0.0/8",
//!   "fd00::/8"])` names your proxies (addresses or CIDRs, also written as IPv4-mapped IPv6; a
//!   bad entry panics at start-up naming it, `.try_trusted_proxies(...)` returns the error for
//!   lists read from configuration). Only a request whose peer is a trusted proxy has its
//!   `Forwarded` (RFC 7239: quoted and bracketed IPv6, ports, `unknown`, obfuscated
//!   `_identifiers`) and `X-Forwarded-For` read, **from the right and only as far as needed**:
//!   entries naming trusted proxies are skipped, and the first that is not one is the client.
//!   What a client writes further left — however long, whatever bytes, however malformed — is
//!   never even parsed, so it cannot pick its own key.
//! - **One header is believed: the one your proxy writes**, `X-Forwarded-For` by default
//!   (what nginx, HAProxy, Envoy and the cloud balancers write), or `Forwarded` with
//!   `.forwarding_headers(ForwardingHeaders::Forwarded)`. The other is ignored: a proxy passes
//!   on what it did not write, such as a `Forwarded` added by a client's office proxy, and
//!   that must never turn a request into an error. When it names another client, that is
//!   reported once as a `warn` naming the setting. `ForwardingHeaders::Both`, for proxies
//!   that write both, is strict: two headers naming different clients get a `400`
//!   ("Contradictory Forwarding Headers") — never an address of the client's choosing, never
//!   the proxy's own budget. A trusted part that cannot be read (only a misconfigured proxy
//!   writes one), or more than 32 trusted hops, count the request against the proxy it came
//!   through.
//! - **Behind a CDN that writes one address**: `ForwardingHeaders::CfConnectingIp`
//!   (Cloudflare), `TrueClientIp` (Akamai) or `XRealIp` (nginx's `X-Real-IP`). From a
//!   trusted peer (the CDN's ranges in `.trusted_proxies`), the header's one address is the
//!   client — there is no list to walk, since the CDN replaces what a client sent; absent,
//!   repeated or not an address, the request is counted by the peer. From any other peer the
//!   header is the client's own and ignored (`tests/keys.rs`).
//! - **Trust the address your proxy connects from, and nothing a client can connect from
//!   too.** Trusting `127.0.0.1` while other processes (or clients through a port left open)
//!   reach the service on loopback lets any of them claim any address: `behind_proxy` has the
//!   proxy connect from a loopback address of its own (`proxy_bind 127.0.0.2;` in nginx) and
//!   trusts only that one.
//! - Each kind of key lives in a namespace of its own: a user named `203.0.113.7` never shares
//!   the budget of that address, nor an API key a user's. Values longer than 64 bytes are
//!   replaced by their SHA-1 digest, so keys stay bounded whatever a client sends.
//! - **`header:NAME`, `user` and function keys are what the request says**, read before your
//!   handler authenticates anything: a client that sends a new API key (or session cookie,
//!   or tenant id) with each request gets a fresh budget each time. Stack a per-address limit
//!   under them — generous, but finite — as `examples/api_key.rs` does: it is what stops key
//!   rotation and key guessing.
//!
//! ## Choosing the key
//!
//! Per address catches the bot, and also a whole office, school or mobile carrier behind one
//! address. So:
//!
//! - Where there is a session or a token, limit **per user** (`key = "user"`), and let anonymous
//!   requests fall back to their address.
//! - Where there is none (a login form, a sign-up, a public API without keys), limit **per
//!   address**, with headroom: size the limit for the largest group of honest people you expect
//!   behind one address, not for one person. A login form at 5 per minute per address locks out
//!   an office at 9 a.m.; 30 per minute with a stricter per-user limit after the username is
//!   known does not.
//! - APIs with keys: **per key** (`key = "header:x-api-key"`), often a `token_bucket` with a
//!   `burst`.
//! - Stack them: a generous per-address limit against floods, and a tight per-user one.
//! - Behind a load balancer or CDN, configure `.trusted_proxies(...)`, or every client counts as
//!   the proxy.
//!
//! Examples: `per_user`, `api_key`, `custom_key`, `behind_proxy` (with the curl lines that show a
//! spoofed header being ignored).
