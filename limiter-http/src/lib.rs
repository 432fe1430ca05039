//! What every HTTP front end of [limiter](https://docs.rs/limiter) shares, whatever its web
//! framework: who a request's client is and the key it is counted by.
//!
//! A front end (the actix glue of the facade crate `limiter`, the axum/tower one) implements
//! [`RequestHead`] for its request type; [`client`] and [`ip_key`] then read the peer and the
//! forwarding headers the same way for both: trusted proxies walked from the right, at most
//! [`MAX_HOPS`] hops, `Forwarded` or `X-Forwarded-For` or a CDN's one-address header,
//! IPv4-mapped addresses as IPv4, IPv6 grouped by prefix. One code, so that an actix
//! instance and an axum instance of a service count a client under the same key — and share
//! its budget on one Redis.
//!
//! Users reach these items through the facade (`limiter::TrustedProxies`, ...); this crate
//! knows nothing of the engine, of any framework, or of HTTP types.

mod client;
mod client_key;
/// The key logic's cases, for a front end to run against its request type.
#[doc(hidden)]
pub mod conformance;
mod mistakes;
mod proxy;

pub use client::{client, ip_key, ClientSettings, Header, KeyError, RequestHead};
pub use client_key::{client_ip, ip_key_of, ClientKey, Kind, MAX_KEY_VALUE};
#[doc(hidden)]
pub use mistakes::Once;
pub use proxy::{
    client_of, Client, Contradiction, ForwardingHeaders, InvalidNetwork, ProxyNet, TrustedProxies,
    MAX_HOPS,
};
