//! What `#[rate_limit]` expands to at run time: decide every limit of a handler at once, all
//! or nothing, before its extractors run; then run it and put the rate limit fields on its
//! response.

use std::future::Future;
use std::marker::PhantomData;

use actix_web::body::BoxBody;
use actix_web::{FromRequest, HttpRequest, HttpResponse, Responder};

use super::body;
use super::fields::{Headers, Write};
use super::in_flight::{self, HeldSlots, Slots};
use super::HandlerLimits;
use crate::Limiter;
use limiter_http::pipeline;

/// The request and its body stream, taken in one extraction: the guarded handler's only
/// argument, so that the user's extractors run only once the limits have been decided.
pub struct RequestParts {
    req: HttpRequest,
    payload: actix_web::dev::Payload,
}

impl FromRequest for RequestParts {
    type Error = actix_web::Error;
    type Future = std::future::Ready<Result<RequestParts, actix_web::Error>>;

    #[inline]
    fn from_request(req: &HttpRequest, payload: &mut actix_web::dev::Payload) -> Self::Future {
        std::future::ready(Ok(RequestParts {
            req: req.clone(),
            payload: payload.take(),
        }))
    }
}

/// Decides `req` against `limits`, then extracts `Args` and calls `handler`.
///
/// The limiter is the [`Limiter`] in the app data, else [`Limiter::global`]. A rejected
/// request never reaches the extractors, so its body is neither read nor parsed.
pub async fn handle<Args, F, Fut>(
    limits: &'static HandlerLimits,
    parts: RequestParts,
    handler: F,
) -> Guarded<Fut::Output>
where
    Args: FromRequest,
    F: FnOnce(Args) -> Fut,
    Fut: Future,
    Fut::Output: Responder,
{
    let RequestParts { req, mut payload } = parts;
    let limiter = Limiter::of(&req);
    // Slots first: a request over its concurrency limit takes nothing from its rates.
    let slots = match limits.in_flight.is_empty() {
        true => Slots::none(),
        false => match Box::pin(in_flight::take_slots(limiter, &req, limits)).await {
            Ok(slots) => slots,
            Err(response) if body::bodiless(&req) => return Guarded(response, PhantomData),
            // As any refusal: the body is read only when small and quick.
            Err(response) => {
                let answer = body::answer_refused(limiter.http(), &req, &mut payload, response);
                return Guarded(Box::pin(answer).await, PhantomData);
            }
        },
    };
    // What is awaited only on the way less taken — a check under way in a networked store,
    // a refused request's body, a refund — is boxed there: this future, which every
    // request of the handler allocates and moves, holds none of their state.
    let decided = match pipeline::run_now(limiter, &req, limits) {
        Some(decided) => decided,
        None => Box::pin(pipeline::run(limiter, &req, limits)).await,
    };
    let decided = match decided {
        Ok(decided) => decided,
        Err(response) if body::bodiless(&req) => return Guarded(response, PhantomData),
        Err(response) => {
            // A refused request's slots go back before its body is awaited: a blocked
            // client sending slow bodies must not hold the slots of the requests it shares
            // them with.
            drop(slots);
            let answer = body::answer_refused(limiter.http(), &req, &mut payload, response);
            return Guarded(Box::pin(answer).await, PhantomData);
        }
    };
    // The response is made here rather than when actix asks for it, so that what a
    // success takes back (`count = "failures"`) is taken back before it leaves: the
    // client's next request must find it.
    let mut response = match Args::from_request(&req, &mut payload).await {
        Ok(args) => handler(args).await.respond_to(&req).map_into_boxed_body(),
        Err(error) => HttpResponse::from_error(error.into()),
    };
    let status = response.status();
    let headers = &mut Headers(response.headers_mut());
    let asked = pipeline::Asked::at_hand(limiter, &req, limits);
    let answered = (status, headers);
    let settle = pipeline::answered(limiter, limits, asked, decided, answered, Write::Replace);
    if !settle.is_empty() {
        Box::pin(settle.take_back(limiter)).await;
    }
    let response = slots.hold_until_sent(response, limiter.http().headers.ietf);
    Guarded(response, PhantomData)
}

/// The response of a rate-limited handler.
pub struct Guarded<R>(HttpResponse, PhantomData<fn() -> R>);

impl<R: Responder> Responder for Guarded<R> {
    type Body = BoxBody;

    fn respond_to(self, _: &HttpRequest) -> HttpResponse<BoxBody> {
        self.0
    }
}
