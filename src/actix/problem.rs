//! The responses of a request the limiter refused or could not decide, as RFC 9457
//! problems: the 429 ([`Rejection`]) and the failures ([`Failure`]), with what every one
//! carries whoever built it.

use actix_web::http::header::HeaderValue;
use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::HttpResponse;

use super::fields::{HeaderOptions, Headers};
use crate::Decision;
use limiter_http::{problem_head, quota_exceeded_head};

/// A request turned away: what the rejection response is made from.
///
/// The default response is a 429 with an RFC 9457 problem body; replace it with
/// [`LimiterBuilder::rejection_response`](crate::LimiterBuilder::rejection_response).
#[derive(Debug, Clone)]
pub struct Rejection<'a> {
    name: &'a str,
    decision: Decision,
    message: &'a str,
    /// The default body's opening, `message` escaped, when made beforehand.
    head: Option<&'a [u8]>,
    never: bool,
    /// Whether the body is the IETF draft's `quota-exceeded` problem.
    quota_exceeded: bool,
}

impl<'a> Rejection<'a> {
    pub(crate) fn new(name: &'a str, decision: Decision, message: &'a str) -> Rejection<'a> {
        Rejection {
            name,
            decision,
            message,
            head: None,
            never: false,
            quota_exceeded: false,
        }
    }

    /// With the IETF draft's problem type (see
    /// [`LimiterBuilder::quota_exceeded_problems`](crate::LimiterBuilder::quota_exceeded_problems)).
    pub(crate) fn quota_exceeded(mut self, on: bool) -> Rejection<'a> {
        self.quota_exceeded = on;
        self
    }

    /// With [`problem_head`]`(message)` made beforehand: a flood of rejections escapes the
    /// message once, not once each.
    pub(crate) fn with_head(mut self, head: &'a [u8]) -> Rejection<'a> {
        self.head = Some(head);
        self
    }

    /// A request that costs more than the limit ever allows at once: `message` says so.
    pub(crate) fn never(name: &'a str, decision: Decision, message: &'a str) -> Rejection<'a> {
        Rejection {
            name,
            decision,
            message,
            head: None,
            never: true,
            quota_exceeded: false,
        }
    }

    /// Whether the request can never be admitted, however long it waits: it costs more
    /// than the limit allows at once (`cost`). Its response then has no `Retry-After`.
    pub fn never_admitted(&self) -> bool {
        self.never
    }

    /// `Retry-After` in whole seconds (rounded up, never 0), or `None` for a request that
    /// can never be admitted.
    pub fn retry_after(&self) -> Option<u64> {
        (!self.never).then(|| self.retry_after_secs())
    }

    /// The name of the limit that rejected the request (its scope, or the handler's name).
    pub fn limit_name(&self) -> &str {
        self.name
    }

    /// The decision, with the exact `retry_after`.
    pub fn decision(&self) -> &Decision {
        &self.decision
    }

    /// Whole seconds until one request would be admitted: rounded up, never 0.
    pub fn retry_after_secs(&self) -> u64 {
        self.decision.retry_after_secs().unwrap_or(1)
    }

    /// The configured message (the problem's `detail`).
    pub fn message(&self) -> &str {
        self.message
    }

    /// The default response: `429 Too Many Requests`, `Retry-After`, `Cache-Control:
    /// no-store` and an `application/problem+json` body with `type`, `title`, `status`,
    /// `detail` and `retry_after`.
    ///
    /// A request that can never be admitted ([`never_admitted`](Self::never_admitted)) gets
    /// no `Retry-After`, `"retry_after": null`, and a detail that says why. With
    /// [`quota_exceeded_problems`](crate::LimiterBuilder::quota_exceeded_problems), the
    /// type is the IETF draft's `…#quota-exceeded`, with `violated-policies` naming the
    /// limit.
    pub fn problem_response(&self) -> HttpResponse {
        self.problem_response_with(self.problem_body())
    }

    /// The default response's body (see [`problem_response`](Self::problem_response)).
    pub(crate) fn problem_body(&self) -> Bytes {
        let made;
        let head = match (self.head, self.quota_exceeded) {
            (Some(head), false) => head,
            (None, false) => {
                made = problem_head(self.message);
                &made
            }
            (_, true) => {
                made = quota_exceeded_head(self.message, self.name);
                &made
            }
        };
        limiter_http::problem_body(head, self.retry_after())
    }

    /// The default response with `body`, [`problem_body`](Self::problem_body)'s.
    pub(crate) fn problem_response_with(&self, body: Bytes) -> HttpResponse {
        let mut response = HttpResponse::with_body(StatusCode::TOO_MANY_REQUESTS, body);
        limiter_http::problem_fields(&mut Headers(response.headers_mut()), self.retry_after());
        response.map_into_boxed_body()
    }
}

/// Adds what every rejection carries, whoever built the response.
pub(crate) fn complete_rejection(response: &mut HttpResponse, retry_after: Option<u64>) {
    limiter_http::complete_rejection(&mut Headers(response.headers_mut()), retry_after);
}

/// A request a limited handler could not decide. Each has a fixed, documented response that
/// never shows clients internal details (the cause goes to `tracing`); replace it with
/// [`LimiterBuilder::failure_response`](crate::LimiterBuilder::failure_response).
///
/// | failure | status | when |
/// | --- | --- | --- |
/// | [`StoreUnavailable`](Failure::StoreUnavailable) | 503, `Retry-After: 1` | the store failed or timed out and the limiter fails closed |
/// | [`NoClientAddress`](Failure::NoClientAddress) | 500 | a route keyed by address, and the request has no peer address (a Unix socket, a test request without one) |
/// | [`ContradictoryForwarding`](Failure::ContradictoryForwarding) | 400 | a trusted proxy's `Forwarded` and `X-Forwarded-For` name different clients |
///
/// Every one carries `Cache-Control: no-store` and the handler's `RateLimit-Policy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// The store failed or exceeded its timeout, under [`OnStoreError::FailClosed`](crate::OnStoreError).
    StoreUnavailable,
    /// The route counts by address and the request has none.
    NoClientAddress,
    /// The trusted proxy's forwarding headers name different clients: one was written by
    /// the client. See [`Contradiction`](crate::Contradiction).
    ContradictoryForwarding,
}

impl Failure {
    /// The response status.
    pub fn status(&self) -> StatusCode {
        match self {
            Failure::StoreUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            Failure::NoClientAddress => StatusCode::INTERNAL_SERVER_ERROR,
            Failure::ContradictoryForwarding => StatusCode::BAD_REQUEST,
        }
    }

    /// The problem's `title`.
    pub fn title(&self) -> &'static str {
        match self {
            Failure::StoreUnavailable => "Rate Limit Unavailable",
            Failure::NoClientAddress => "Client Address Unknown",
            Failure::ContradictoryForwarding => "Contradictory Forwarding Headers",
        }
    }

    /// The problem's `detail`: fixed, and free of internals.
    pub fn detail(&self) -> &'static str {
        match self {
            Failure::StoreUnavailable => {
                "The rate limit could not be checked just now; try again in a second."
            }
            Failure::NoClientAddress => {
                "This route is rate limited by client address, and the request has none."
            }
            Failure::ContradictoryForwarding => {
                "The request's Forwarded and X-Forwarded-For headers name different clients."
            }
        }
    }

    /// `Retry-After` in seconds, for the failures that pass.
    pub fn retry_after_secs(&self) -> Option<u64> {
        match self {
            Failure::StoreUnavailable => Some(1),
            Failure::NoClientAddress | Failure::ContradictoryForwarding => None,
        }
    }

    /// The default response: an RFC 9457 problem with the status, title and detail above.
    pub fn problem_response(&self) -> HttpResponse {
        let status = self.status();
        let body = limiter_http::failure_body(status.as_u16(), self.title(), self.detail());
        HttpResponse::build(status)
            .content_type(limiter_http::PROBLEM_JSON)
            .body(body)
    }

    /// Adds what every such response carries, unless the response set it itself.
    pub(crate) fn complete(
        &self,
        response: &mut HttpResponse,
        policy: &HeaderValue,
        options: HeaderOptions,
    ) {
        let headers = &mut Headers(response.headers_mut());
        limiter_http::complete_failure(headers, self.retry_after_secs(), policy, options);
    }
}
