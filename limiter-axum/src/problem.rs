//! The responses of a request the limiter refused or could not decide, in axum's types:
//! [`Rejection`] and [`Failure`] are `limiter_http`'s (what every front end answers with,
//! word for word and byte for byte), with their default response as an axum [`Response`].

use axum::http::StatusCode;
use axum::response::Response;
use limiter_http::pipeline;

use crate::front::Axum;

/// A request turned away: what the rejection response is made from. Its limit, decision
/// and message are those of [`limiter_http::Rejection`], which it dereferences to.
///
/// The default response is a 429 with an RFC 9457 problem body; replace it with
/// [`LimiterBuilder::rejection_response`](crate::LimiterBuilder::rejection_response).
///
/// ```
/// use axum::response::IntoResponse;
/// use limiter_axum::Limiter;
///
/// let limiter = Limiter::builder()
///     .rejection_response(|rejection| {
///         let text = format!("{} again in {}s", rejection.limit_name(), rejection.retry_after_secs());
///         (axum::http::StatusCode::TOO_MANY_REQUESTS, text).into_response()
///     })
///     .build();
/// # drop(limiter);
/// ```
#[derive(Debug, Clone)]
pub struct Rejection<'a>(limiter_http::Rejection<'a>);

impl<'a> From<limiter_http::Rejection<'a>> for Rejection<'a> {
    fn from(rejection: limiter_http::Rejection<'a>) -> Rejection<'a> {
        Rejection(rejection)
    }
}

impl<'a> std::ops::Deref for Rejection<'a> {
    type Target = limiter_http::Rejection<'a>;

    fn deref(&self) -> &limiter_http::Rejection<'a> {
        &self.0
    }
}

impl Rejection<'_> {
    /// The default response: `429 Too Many Requests`, `Retry-After`, `Cache-Control:
    /// no-store` and an `application/problem+json` body — the bytes the actix front end
    /// sends for the same decision.
    pub fn problem_response(&self) -> Response {
        pipeline::problem_response::<Axum>(&self.0, self.0.problem_body())
    }
}

/// A request a limited handler could not decide: one of [`limiter_http::Failure`]'s, which
/// it dereferences to (its `title`, `detail` and `retry_after_secs`); replace its response
/// with [`LimiterBuilder::failure_response`](crate::LimiterBuilder::failure_response).
///
/// | failure | status | when |
/// | --- | --- | --- |
/// | [`StoreUnavailable`](Failure::StoreUnavailable) | 503, `Retry-After: 1` | the store failed or timed out and the limiter fails closed |
/// | [`NoClientAddress`](Failure::NoClientAddress) | 500 | a route keyed by address, and the request has no peer address (no `ConnectInfo`: serve the router with `into_make_service_with_connect_info::<SocketAddr>()`) |
/// | [`ContradictoryForwarding`](Failure::ContradictoryForwarding) | 400 | a trusted proxy's `Forwarded` and `X-Forwarded-For` name different clients |
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// The store failed or exceeded its timeout, under `OnStoreError::FailClosed`.
    StoreUnavailable,
    /// The route counts by address and the request has none.
    NoClientAddress,
    /// The trusted proxy's forwarding headers name different clients.
    ContradictoryForwarding,
}

impl From<limiter_http::Failure> for Failure {
    fn from(failure: limiter_http::Failure) -> Failure {
        match failure {
            limiter_http::Failure::NoClientAddress => Failure::NoClientAddress,
            limiter_http::Failure::ContradictoryForwarding => Failure::ContradictoryForwarding,
            _ => Failure::StoreUnavailable,
        }
    }
}

impl std::ops::Deref for Failure {
    type Target = limiter_http::Failure;

    fn deref(&self) -> &limiter_http::Failure {
        match self {
            Failure::StoreUnavailable => &limiter_http::Failure::StoreUnavailable,
            Failure::NoClientAddress => &limiter_http::Failure::NoClientAddress,
            Failure::ContradictoryForwarding => &limiter_http::Failure::ContradictoryForwarding,
        }
    }
}

impl Failure {
    /// The response status.
    pub fn status(&self) -> StatusCode {
        StatusCode::from_u16(self.status_code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    /// The default response: an RFC 9457 problem with the status, title and detail above.
    pub fn problem_response(&self) -> Response {
        pipeline::failure_response::<Axum>(**self)
    }
}
