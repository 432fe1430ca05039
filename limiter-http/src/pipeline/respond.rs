//! How a front end answers what the pipeline decided, and where a request keeps the
//! decisions of limits checked inside its handler: what the pipeline asks of a front end
//! beyond [`Front`]. Every response the limiter answers with is built here, for every
//! front end: the 429 of a rejection (by an attribute, a middleware or a check inside a
//! handler), the 429 of a cost no budget holds, and the failures — 503 (the store failed,
//! failing closed), 500 (no client address), 400 (contradictory forwarding headers) — each
//! the default problem or the configured one, completed with what every such response
//! carries. A front end gives only a bare response and its header map.

use std::time::Duration;

use bytes::Bytes;
use limiter_core::Decision;

use super::inline::InlineChecks;
use crate::fields::{RateLimitFields, Write};
use crate::headers::{Field, FieldMap};
use crate::limits::HandlerLimits;
use crate::problem::{complete_failure, complete_rejection, problem_fields, PROBLEM_JSON};
use crate::refusal::{Failure, Rejection};
use crate::{Front, KeyError, Limiter, Member};

/// A header value of front end `F`.
type Value<F> = <<F as Front>::Map as FieldMap>::Value;

/// A front end's answers: a bare response and its header map (the bytes written into them
/// are the shared code's), and the place in a request where the decisions of limits
/// checked inside its handler wait for its response.
pub trait Respond: Front {
    /// A response's header map, as the shared code writes the fields onto it.
    type Fields<'r>: FieldMap<Value = Value<Self>>;

    /// A response of `status` carrying `body`, with no header field yet.
    fn response(status: u16, body: Bytes) -> Self::Response;

    /// `response`'s header map.
    fn fields_of(response: &mut Self::Response) -> Self::Fields<'_>;

    /// Adds to what `req`'s limits checked inside its handler left for its response.
    fn inline_checks(req: &Self::Request, add: impl FnOnce(&mut InlineChecks<Self>));

    /// What `req`'s limits checked inside its handler left for its response, taken out.
    fn take_inline_checks(req: &Self::Request) -> Option<InlineChecks<Self>>;

    /// The 429 (or the configured rejection response) of a request some limits rejected:
    /// `decision` says when every one of them admits it again. `fields` are the handler's
    /// limits and their fields, when the response carries them (none for a check inside a
    /// handler, whose fields the handler's response carries). A front end may answer a
    /// flood's alike 429s from a copy of the last one; by default, [`rejection`].
    #[inline]
    fn rejection(
        limiter: &Limiter<Self>,
        fields: Option<(&HandlerLimits<Self>, &RateLimitFields)>,
        name: &str,
        decision: Decision,
    ) -> Self::Response {
        rejection(limiter, fields, name, decision)
    }
}

/// The 429 (or the configured rejection response) of a request some limits rejected, with
/// `fields` when its response carries them.
pub fn rejection<F: Respond>(
    limiter: &Limiter<F>,
    fields: Option<(&HandlerLimits<F>, &RateLimitFields)>,
    name: &str,
    decision: Decision,
) -> F::Response {
    let http = limiter.http();
    let rejection = Rejection::new(name, decision, &http.rejection_message)
        .with_head(http.problem_head())
        .quota_exceeded(http.quota_exceeded);
    reject_with(limiter, fields, &rejection)
}

/// The default 429 of `rejection`, carrying `body` (its
/// [`problem_body`](Rejection::problem_body)): `Retry-After`, `Cache-Control: no-store`
/// and `Content-Type: application/problem+json`.
pub fn problem_response<F: Respond>(rejection: &Rejection<'_>, body: Bytes) -> F::Response {
    let mut response = F::response(429, body);
    problem_fields(&mut F::fields_of(&mut response), rejection.retry_after());
    response
}

/// The default response of `failure`: its problem, of its status.
pub fn failure_response<F: Respond>(failure: Failure) -> F::Response {
    let mut response = F::response(failure.status_code(), failure.problem_body());
    F::fields_of(&mut response).insert(Field::ContentType, F::Fields::value_static(PROBLEM_JSON));
    response
}

/// The 429 of a request that costs more than the limit ever allows at once: no
/// `Retry-After`, since waiting does not help, and a detail that says so. `units` is the
/// request's cost, the limit's capacity and its maximum.
pub(crate) fn never_admitted<F: Respond>(
    limiter: &Limiter<F>,
    limits: Option<&HandlerLimits<F>>,
    name: &str,
    member: Member,
    (cost, capacity, max): (u32, u32, u32),
) -> F::Response {
    let detail = format!(
        "This request costs {cost} units, more than the {capacity} this limit ever allows \
         at once: it can never be admitted."
    );
    let decision = Decision::reject(max, Duration::ZERO);
    let rejection = Rejection::never(name, decision, &detail);
    let fields = RateLimitFields::of_members(vec![decision], vec![member]);
    reject_with(limiter, limits.map(|limits| (limits, &fields)), &rejection)
}

/// `rejection`'s response: the configured one, completed, or the default; with `fields`.
fn reject_with<F: Respond>(
    limiter: &Limiter<F>,
    fields: Option<(&HandlerLimits<F>, &RateLimitFields)>,
    rejection: &Rejection<'_>,
) -> F::Response {
    let custom = limiter.http().rejection_response.as_deref();
    let mut response = match custom {
        Some(build) => {
            let mut response = build(&rejection.clone().into());
            complete_rejection(&mut F::fields_of(&mut response), rejection.retry_after());
            response
        }
        None => problem_response::<F>(rejection, rejection.problem_body()),
    };
    if let Some((limits, fields)) = fields {
        fields.apply(
            &mut F::fields_of(&mut response),
            limits.declared(),
            limiter.http().headers,
            match custom {
                Some(_) => Write::KeepExisting,
                None => Write::Replace,
            },
        );
    }
    response
}

/// The failure of a request whose key could not be read.
pub fn key_failure<F: Respond>(
    limiter: &Limiter<F>,
    limits: &HandlerLimits<F>,
    error: &KeyError,
) -> F::Response {
    match error {
        KeyError::NoClientAddress => {
            tracing::debug!(
                "rate limit: a request without a peer address on a route keyed by address"
            );
            failure(limiter, Some(limits), Failure::NoClientAddress)
        }
        KeyError::Contradiction(contradiction) => {
            tracing::debug!(%contradiction, "rate limit: contradictory forwarding headers");
            crate::mistakes::contradictory_forwarding(contradiction);
            failure(limiter, Some(limits), Failure::ContradictoryForwarding)
        }
    }
}

/// The response for a request the limiter could not decide: the default problem, or the
/// configured one, with what every such response carries (and the handler's
/// `RateLimit-Policy`, given its `limits`).
pub fn failure<F: Respond>(
    limiter: &Limiter<F>,
    limits: Option<&HandlerLimits<F>>,
    failure: Failure,
) -> F::Response {
    let mut response = match limiter.http().failure_response.as_deref() {
        Some(build) => build(&failure.into()),
        None => failure_response::<F>(failure),
    };
    let retry_after = failure.retry_after_secs();
    {
        let headers = &mut F::fields_of(&mut response);
        match limits {
            Some(limits) => {
                complete_failure(headers, retry_after, &limits.policy, limiter.http().headers)
            }
            None => complete_rejection(headers, retry_after),
        }
    }
    response
}
