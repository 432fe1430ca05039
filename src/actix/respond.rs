//! The 429 of a rejection on actix: `limiter_http`'s (every front end's), answered from a
//! copy of the last one where a flood's 429s are alike (see `last_rejection.rs`).

use actix_web::HttpResponse;
use limiter_http::pipeline;

use super::fields::{Headers, RateLimitFields, Write};
use super::last_rejection::Alike;
use super::HandlerLimits;
use crate::{Decision, Limiter};

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
    let (Some(alike), Some((limits, fields))) = (alike, fields) else {
        return pipeline::rejection(limiter, fields, name, decision);
    };
    // The default response, kept for the next one alike (see `last_rejection.rs`).
    let http = limiter.http();
    let rejection = limiter_http::Rejection::new(name, decision, &http.rejection_message)
        .with_head(http.problem_head())
        .quota_exceeded(http.quota_exceeded);
    let body = rejection.problem_body();
    let mut response = pipeline::problem_response::<super::front::Actix>(&rejection, body.clone());
    let headers = &mut Headers(response.headers_mut());
    fields.apply(headers, limits.declared(), http.headers, Write::Replace);
    alike.note(&response, &body);
    response
}
