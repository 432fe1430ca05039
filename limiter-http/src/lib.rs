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
//! What a limited response carries is written here too, onto a front end's header map seen
//! through [`FieldMap`]: the RateLimit fields ([`RateLimitFields`]) and the problem bodies of
//! a 429 and of a failure ([`problem_body`], [`failure_body`]) — the same bytes from both.
//!
//! Users reach these items through the facade (`limiter::TrustedProxies`, ...); this crate
//! knows nothing of any framework or of HTTP types: the front ends map its [`Header`]s and
//! [`Field`]s to their own.

mod answers_macro;
mod client;
mod client_key;
/// The key logic's cases, for a front end to run against its request type.
#[doc(hidden)]
pub mod conformance;
mod counts;
mod dotted_quad;
mod enforcement;
mod fields;
mod fnv;
mod handler_path;
mod headers;
mod in_flight_spec;
mod jitter;
mod key_spec;
mod limiter;
mod limits;
mod mistakes;
mod observe;
/// The one decision every request runs, on every front end. Not a public API: the front
/// ends' attributes and middlewares call it.
#[doc(hidden)]
pub mod pipeline;
mod problem;
mod proxy;
mod refusal;
mod rejected;
mod reset;
mod resolve;
pub mod routes_page;
mod waiting;

pub use client::{client, ip_key, ClientSettings, Header, KeyError, RequestHead};
pub use client_key::{client_ip, ip_key_of, ClientKey, Kind, MAX_KEY_VALUE};
pub use enforcement::{InvalidShare, Share};
pub use fields::{
    field_name, member_prefix, number_value, policy_member, push_decimal, set_if_absent, Declared,
    HeaderOptions, Member, RateLimitFields, Write,
};
pub use handler_path::handler_path;
pub use headers::{Field, FieldMap};
pub use in_flight_spec::InFlightSpec;
pub use key_spec::KeySpec;
pub use limiter::{Front, Limiter, LimiterBuilder, LocalFront, SendFront};
pub use limits::{jitter_ms, HandlerLimits, LimitSpec};
#[doc(hidden)]
pub use mistakes::Once;
pub use problem::{
    append_members, complete_failure, complete_rejection, concurrency_member,
    concurrency_policy_member, concurrency_refused, failure_body, problem_body, problem_fields,
    problem_head, quota_exceeded_head, PROBLEM_JSON, QUOTA_EXCEEDED,
};
pub use proxy::{
    client_of, Client, Contradiction, ForwardingHeaders, InvalidNetwork, ProxyNet, TrustedProxies,
    MAX_HOPS,
};
pub use refusal::{Failure, Rejection};
pub use rejected::RejectedClient;
pub use reset::Subject;
pub use resolve::{Awaited, AwaitedSend, IntoResolver, Now, Resolver, SendAsyncFn};

/// What the front ends run beside the decision, shared so that they run the same: the
/// shares' configuration, the rejected clients' summary, the decisions' metrics, jitter.
/// Not a public API.
#[doc(hidden)]
pub mod plumbing {
    pub use crate::enforcement::Enforcement;
    pub use crate::fnv::Fnv;
    pub use crate::jitter::jittered;
    pub use crate::limiter::settings::*;
    pub use crate::limiter::Http;
    pub use crate::observe::{count, Counters, Outcome};
    pub use crate::rejected::{RejectedClients, SHOWN};
    pub use crate::waiting::Waiting;
}
