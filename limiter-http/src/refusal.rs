//! What a refused or undecided request's response is made from, whatever the framework:
//! the 429's [`Rejection`] and the failures' [`Failure`]. Each front end wraps them in its
//! own types (`limiter::Rejection`, `limiter_axum::Rejection`, ...), which add the default
//! response in the framework's type; the words, numbers and bytes are these.

use bytes::Bytes;
use limiter_core::Decision;

use crate::problem::{problem_body, problem_head, quota_exceeded_head};

/// A request turned away: what a rejection response is made from (its limit, its
/// decision, the configured message). A front end's `Rejection` dereferences to it.
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
    /// A rejection by the limit `name`, answered with `message` (the problem's `detail`).
    #[doc(hidden)]
    pub fn new(name: &'a str, decision: Decision, message: &'a str) -> Rejection<'a> {
        Rejection {
            name,
            decision,
            message,
            head: None,
            never: false,
            quota_exceeded: false,
        }
    }

    /// With the IETF draft's problem type (`quota_exceeded_problems`).
    #[doc(hidden)]
    pub fn quota_exceeded(mut self, on: bool) -> Rejection<'a> {
        self.quota_exceeded = on;
        self
    }

    /// With [`problem_head`]`(message)` made beforehand: a flood of rejections escapes the
    /// message once, not once each.
    #[doc(hidden)]
    pub fn with_head(mut self, head: &'a [u8]) -> Rejection<'a> {
        self.head = Some(head);
        self
    }

    /// A request that costs more than the limit ever allows at once: `message` says so.
    #[doc(hidden)]
    pub fn never(name: &'a str, decision: Decision, message: &'a str) -> Rejection<'a> {
        Rejection {
            never: true,
            ..Rejection::new(name, decision, message)
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

    /// The default response's body: an `application/problem+json` object with `type`,
    /// `title`, `status`, `detail` and `retry_after` (`null` for a request that can never
    /// be admitted); with `quota_exceeded_problems`, the IETF draft's type and
    /// `violated-policies` naming the limit.
    pub fn problem_body(&self) -> Bytes {
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
        problem_body(head, self.retry_after())
    }
}

/// A request a limited handler could not decide. Each has a fixed, documented response that
/// never shows clients internal details (the cause goes to `tracing`).
///
/// | failure | status | when |
/// | --- | --- | --- |
/// | [`StoreUnavailable`](Failure::StoreUnavailable) | 503, `Retry-After: 1` | the store failed or timed out and the limiter fails closed |
/// | [`NoClientAddress`](Failure::NoClientAddress) | 500 | a route keyed by address, and the request has no peer address (a Unix socket, a test request without one) |
/// | [`ContradictoryForwarding`](Failure::ContradictoryForwarding) | 400 | a trusted proxy's `Forwarded` and `X-Forwarded-For` name different clients |
///
/// Every one carries `Cache-Control: no-store` and the handler's `RateLimit-Policy`. A
/// front end's `Failure` names the same three and dereferences to this one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// The store failed or exceeded its timeout, under `OnStoreError::FailClosed`.
    StoreUnavailable,
    /// The route counts by address and the request has none.
    NoClientAddress,
    /// The trusted proxy's forwarding headers name different clients: one was written by
    /// the client. See [`Contradiction`](crate::Contradiction).
    ContradictoryForwarding,
}

impl Failure {
    /// The failure of a request whose key could not be read.
    pub(crate) fn of(error: &crate::KeyError) -> Failure {
        match error {
            crate::KeyError::NoClientAddress => Failure::NoClientAddress,
            crate::KeyError::Contradiction(_) => Failure::ContradictoryForwarding,
        }
    }

    /// The response status's number.
    pub fn status_code(&self) -> u16 {
        match self {
            Failure::StoreUnavailable => 503,
            Failure::NoClientAddress => 500,
            Failure::ContradictoryForwarding => 400,
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

    /// The default response's body: an RFC 9457 problem with the status, title and detail
    /// above.
    pub fn problem_body(&self) -> Bytes {
        crate::problem::failure_body(self.status_code(), self.title(), self.detail()).into()
    }
}
