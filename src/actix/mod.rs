//! The actix glue: everything that knows about actix-web, built on the engine
//! (`limiter-core`), which knows nothing of HTTP, and on `limiter-http`, what every front
//! end shares — the key logic, a handler's limits as declared, the one decision every
//! request runs (its pipeline), the answers' bytes — generic over the front end
//! ([`Actix`](crate::Actix) here). The compiler keeps them apart: neither crate has
//! actix-web to import.
//!
//! | file | holds |
//! | --- | --- |
//! | `attribute.rs` | what `#[rate_limit]` expands to at run time |
//! | `middleware.rs` | [`RateLimit`](crate::RateLimit): one limit over an `App` or a `Scope` |
//! | `inline.rs` | [`check`](crate::check): a limit decided inside a handler |
//! | `routes_page.rs` | [`routes_service`](crate::routes_service): the route table as a page and as JSON |
//! | `in_flight.rs` | `#[concurrency_limit]`: a slot per request, held until its response is sent |
//! | `in_flight_middleware.rs` | [`ConcurrencyLimit`](crate::ConcurrencyLimit): the same over an `App` or a `Scope` |
//! | `body.rs` | the body of a refused request: read only when small and quick, else the connection closes |
//! | `keys.rs` | actix's request as the key logic (`limiter_http`'s, every front end's) reads it: its peer and forwarding headers |
//! | `fields.rs` | the RateLimit header fields on actix's header map (their bytes are `limiter_http`'s, the same for every front end) |
//! | `problem.rs` | [`Rejection`](crate::Rejection) and [`Failure`](crate::Failure): `limiter_http`'s, with their default responses in actix's types |
//! | `respond.rs` | the 429 of a rejection: `limiter_http`'s, or a copy of the last one alike |
//! | `last_rejection.rs` | a flood's 429s are alike: the last one a worker built, copied for the next |
//! | `front.rs` | [`Actix`](crate::Actix): the actix front end as the shared code sees it (request, response, where a request finds its limiter, what a decision leaves in it, how it is answered) |
//! | `settings.rs` | the builder's HTTP settings, `limiter_http`'s for actix |

pub(crate) mod attribute;
pub(crate) mod body;
pub(crate) mod fields;
pub(crate) mod front;
pub(crate) mod in_flight;
pub(crate) mod in_flight_middleware;
pub(crate) mod inline;
pub(crate) mod keys;
pub(crate) mod last_rejection;
pub(crate) mod middleware;
pub(crate) mod problem;
pub(crate) mod respond;
pub(crate) mod routes_page;
pub(crate) mod settings;

/// A handler's limits, for actix (what the attribute expands to names it through
/// `__private`).
pub type HandlerLimits = limiter_http::HandlerLimits<front::Actix>;
/// One `#[rate_limit]`, for actix.
pub type LimitSpec = limiter_http::LimitSpec<front::Actix>;
/// One `#[concurrency_limit]`, for actix.
pub type InFlightSpec = limiter_http::InFlightSpec<front::Actix>;
