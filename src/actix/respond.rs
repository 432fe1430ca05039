//! Every response the limiter answers with, in one place: the 429 of a rejection (by the
//! attribute, the middleware or a check inside a handler), the 429 of a cost no budget
//! holds, and the failures — 503 (the store failed, failing closed), 500 (no client
//! address), 400 (contradictory forwarding headers) — each the default problem or the
//! configured one, completed with what every such response carries.

use std::time::Duration;

use actix_web::HttpResponse;

use super::fields::{Headers, Member, RateLimitFields, Write};
use super::last_rejection::Alike;
use super::problem::{complete_rejection, Failure, Rejection};
use super::HandlerLimits;
use crate::{Decision, Limiter};
use limiter_http::KeyError;

/// The 429 (or the configured rejection response) for a request some limits rejected:
/// `decision` says when every one of them admits it again. `limits` and `fields` are
/// the handler's, when the response carries their RateLimit fields (none for a check
/// inside a handler, whose fields the handler's response carries).
pub(crate) fn rejection(
    limiter: &Limiter,
    fields: Option<(&HandlerLimits, &RateLimitFields)>,
    name: &str,
    decision: Decision,
) -> HttpResponse {
    let alike =
        fields.and_then(|(limits, fields)| Alike::of(limiter, limits, fields, name, &decision));
    if let Some(response) = alike.as_ref().and_then(Alike::copy) {
        return response;
    }
    let http = limiter.http();
    let rejection = Rejection::new(name, decision, &http.rejection_message)
        .with_head(http.problem_head())
        .quota_exceeded(http.quota_exceeded);
    let (Some(alike), Some((limits, fields))) = (alike, fields) else {
        return reject_with(limiter, fields, &rejection);
    };
    // The default response, kept for the next one alike (see `last_rejection.rs`).
    let body = rejection.problem_body();
    let mut response = rejection.problem_response_with(body.clone());
    let headers = &mut Headers(response.headers_mut());
    fields.apply(headers, limits.declared(), http.headers, Write::Replace);
    alike.note(&response, &body);
    response
}

/// The 429 of a request that costs more than the limit ever allows at once: no
/// `Retry-After`, since waiting does not help, and a detail that says so. `units` is
/// the request's cost, the limit's capacity and its maximum.
pub(crate) fn never_admitted(
    limiter: &Limiter,
    limits: Option<&HandlerLimits>,
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
    reject_with(limiter, limits.map(|limits| (limits, &fields)), &rejection)
}

fn reject_with(
    limiter: &Limiter,
    fields: Option<(&HandlerLimits, &RateLimitFields)>,
    rejection: &Rejection<'_>,
) -> HttpResponse {
    let custom = limiter.http().rejection_response.is_some();
    let mut response = match limiter.http().rejection_response.as_deref() {
        Some(build) => {
            let mut response = build(rejection);
            complete_rejection(&mut response, rejection.retry_after());
            response
        }
        None => rejection.problem_response(),
    };
    if let Some((limits, fields)) = fields {
        fields.apply(
            &mut Headers(response.headers_mut()),
            limits.declared(),
            limiter.http().headers,
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
pub(crate) fn key_failure(
    limiter: &Limiter,
    limits: &HandlerLimits,
    error: &KeyError,
) -> HttpResponse {
    match error {
        KeyError::NoClientAddress => {
            tracing::debug!(
                "rate limit: a request without a peer address on a route keyed by address"
            );
            failure(limiter, Some(limits), Failure::NoClientAddress)
        }
        KeyError::Contradiction(contradiction) => {
            tracing::debug!(%contradiction, "rate limit: contradictory forwarding headers");
            crate::actix::mistakes::contradictory_forwarding(contradiction);
            failure(limiter, Some(limits), Failure::ContradictoryForwarding)
        }
    }
}

/// The response for a request the limiter could not decide: the default problem, or
/// the configured one, with what every such response carries (and the handler's
/// `RateLimit-Policy`, given its `limits`).
pub(crate) fn failure(
    limiter: &Limiter,
    limits: Option<&HandlerLimits>,
    failure: Failure,
) -> HttpResponse {
    let mut response = match limiter.http().failure_response.as_deref() {
        Some(build) => build(&failure),
        None => failure.problem_response(),
    };
    match limits {
        Some(limits) => failure.complete(&mut response, &limits.policy, limiter.http().headers),
        None => complete_rejection(&mut response, failure.retry_after_secs()),
    }
    response
}
