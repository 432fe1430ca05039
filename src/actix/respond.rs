//! Every response the limiter answers with, in one place: the 429 of a rejection (by the
//! attribute, the middleware or a check inside a handler), the 429 of a cost no budget
//! holds, and the failures — 503 (the store failed, failing closed), 500 (no client
//! address), 400 (contradictory forwarding headers) — each the default problem or the
//! configured one, completed with what every such response carries.

use std::time::Duration;

use actix_web::HttpResponse;

use super::fields::{Member, RateLimitFields, Write};
use super::keys::KeyError;
use super::limits::HandlerLimits;
use super::problem::{complete_rejection, Failure, Rejection};
use crate::{Decision, Limiter};

impl Limiter {
    /// The 429 (or the configured rejection response) for a request some limits rejected:
    /// `decision` says when every one of them admits it again. `limits` and `fields` are
    /// the handler's, when the response carries their RateLimit fields (none for a check
    /// inside a handler, whose fields the handler's response carries).
    pub(crate) fn rejection(
        &self,
        limits: Option<&HandlerLimits>,
        fields: Option<&RateLimitFields>,
        name: &str,
        decision: Decision,
    ) -> HttpResponse {
        let http = self.http();
        let rejection = Rejection::new(name, decision, &http.rejection_message)
            .with_head(http.problem_head())
            .quota_exceeded(http.quota_exceeded);
        self.reject_with(limits.zip(fields), &rejection)
    }

    /// The 429 of a request that costs more than the limit ever allows at once: no
    /// `Retry-After`, since waiting does not help, and a detail that says so. `units` is
    /// the request's cost, the limit's capacity and its maximum.
    pub(crate) fn never_admitted(
        &self,
        limits: &HandlerLimits,
        name: &str,
        member: Member,
        (cost, capacity, max): (u32, u32, u32),
    ) -> HttpResponse {
        let detail = format!(
            "This request costs {cost} units, more than the {capacity} this limit ever allows \
             at once: it can never be admitted."
        );
        let decision = Decision::reject(max, Duration::ZERO);
        let rejection = Rejection::never(name, decision, &detail);
        let fields = RateLimitFields::of_members(vec![decision], vec![member]);
        self.reject_with(Some((limits, &fields)), &rejection)
    }

    fn reject_with(
        &self,
        fields: Option<(&HandlerLimits, &RateLimitFields)>,
        rejection: &Rejection<'_>,
    ) -> HttpResponse {
        let custom = self.http().rejection_response.is_some();
        let mut response = match self.http().rejection_response.as_deref() {
            Some(build) => {
                let mut response = build(rejection);
                complete_rejection(&mut response, rejection.retry_after());
                response
            }
            None => rejection.problem_response(),
        };
        if let Some((limits, fields)) = fields {
            fields.apply(
                response.headers_mut(),
                &limits.policy,
                &limits.prefixes,
                self.http().headers,
                if custom {
                    Write::KeepExisting
                } else {
                    Write::Replace
                },
            );
        }
        response
    }

    /// The failure of a request whose key could not be read.
    pub(crate) fn key_failure(&self, limits: &HandlerLimits, error: &KeyError) -> HttpResponse {
        match error {
            KeyError::NoClientAddress => {
                tracing::debug!(
                    "rate limit: a request without a peer address on a route keyed by address"
                );
                self.failure(Some(limits), Failure::NoClientAddress)
            }
            KeyError::Contradiction(contradiction) => {
                tracing::debug!(%contradiction, "rate limit: contradictory forwarding headers");
                super::mistakes::contradictory_forwarding(contradiction);
                self.failure(Some(limits), Failure::ContradictoryForwarding)
            }
        }
    }

    /// The response for a request the limiter could not decide: the default problem, or
    /// the configured one, with what every such response carries (and the handler's
    /// `RateLimit-Policy`, given its `limits`).
    pub(crate) fn failure(&self, limits: Option<&HandlerLimits>, failure: Failure) -> HttpResponse {
        let mut response = match self.http().failure_response.as_deref() {
            Some(build) => build(&failure),
            None => failure.problem_response(),
        };
        match limits {
            Some(limits) => failure.complete(&mut response, &limits.policy, self.http().headers),
            None => complete_rejection(&mut response, failure.retry_after_secs()),
        }
        response
    }
}
