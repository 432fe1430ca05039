//! The actix glue: everything that knows about HTTP, built on the engine (`limiter-core`),
//! which knows nothing of it — the compiler keeps them apart: the engine's crate has no
//! actix-web to import.
//!
//! | file | holds |
//! | --- | --- |
//! | `attribute.rs` | what `#[rate_limit]` expands to at run time |
//! | `middleware.rs` | [`RateLimit`](crate::RateLimit): one limit over an `App` or a `Scope` |
//! | `inline.rs` | [`check`](crate::check): a limit decided inside a handler |
//! | `routes_page.rs` | [`routes_service`](crate::routes_service): the route table as a page and as JSON |
//! | `limits.rs` | a handler's limits as declared: each limit's spec and options, the set checked together |
//! | `pipeline/` | the one decision every request runs: `plan.rs` (keys, policies, exemptions, shares, costs), `decide.rs` (the store's count), `answer.rs` (pass, 429, 503, a turn to wait), `settle.rs` (what a response gives back) |
//! | `delay.rs` | `delay = "2s"`: a request admitted ahead of its tokens waits its turn |
//! | `in_flight.rs` | `#[concurrency_limit]`: a slot per request, held until its response is sent |
//! | `in_flight_middleware.rs` | [`ConcurrencyLimit`](crate::ConcurrencyLimit): the same over an `App` or a `Scope` |
//! | `body.rs` | the body of a refused request: read only when small and quick, else the connection closes |
//! | `keys.rs` | who a request is counted as under its `key = ...`; by address (trusted proxies, forwarding headers, IPv6 prefixes) through `limiter_http`, the key logic every front end shares |
//! | `resolve.rs` | [`Resolver`](crate::Resolver): the functions `key = path` and `policy = path` name, plain or `async` |
//! | `fields.rs` | the RateLimit header fields on actix's header map (their bytes are `limiter_http`'s, the same for every front end), and the decisions of checks inside a handler |
//! | `problem.rs` | [`Rejection`](crate::Rejection) and [`Failure`](crate::Failure): the 429's and the failures' responses, their bodies and fields written by `limiter_http` |
//! | `respond.rs` | the one place that builds every response: 429, 503, 500, 400 |
//! | `last_rejection.rs` | a flood's 429s are alike: the last one a worker built, copied for the next |
//! | `front.rs` | [`Actix`](crate::Actix): the actix front end as the shared code sees it (request, response, where a request finds its limiter) |
//! | `settings.rs` | the builder's HTTP settings, `limiter_http`'s for actix |
//! | `mistakes.rs` | setups that cannot do what their author meant, reported once |

pub(crate) mod attribute;
pub(crate) mod body;
pub(crate) mod delay;
pub(crate) mod fields;
pub(crate) mod front;
pub(crate) mod in_flight;
pub(crate) mod in_flight_middleware;
pub(crate) mod inline;
pub(crate) mod keys;
pub(crate) mod last_rejection;
pub(crate) mod limits;
pub(crate) mod middleware;
pub(crate) mod mistakes;
pub(crate) mod pipeline;
pub(crate) mod problem;
pub(crate) mod resolve;
pub(crate) mod respond;
pub(crate) mod routes_page;
pub(crate) mod settings;
