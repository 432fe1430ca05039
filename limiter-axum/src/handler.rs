//! What `#[rate_limit]` expands to on axum, at run time: the guarded handler's first
//! argument, [`Decide`], decides every limit of the handler at once, all or nothing,
//! before any other extractor runs — a rejected request's body is never read — and its
//! [`answer`](Decide::answer) puts the RateLimit fields on the handler's response and
//! takes back what the response does not count, before it leaves.

use std::borrow::Cow;
use std::marker::PhantomData;

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use limiter_http::pipeline::{self, Asked, Decided, Slots};
use limiter_http::Write;

use crate::fields::Headers;
use crate::front::{Axum, Locals};
use crate::{HandlerLimits, Limiter};

/// The limits of one guarded handler: what its attribute declared, made once.
pub trait Limits: 'static {
    /// The handler's limits.
    fn limits() -> &'static HandlerLimits;
}

/// A guarded handler's decision, taken before its other extractors: a refused request is
/// answered from here (axum's rejection of an extractor), with the 429 or the failure the
/// actix front end sends for the same decision.
pub struct Decide<M> {
    /// The process's own limiter by reference (what a service with no setup, or one that
    /// `install`ed its limiter, counts by): cloning it would cost every request two
    /// reference counts up and down. A limiter handed over in the request's extensions is
    /// cloned: the request's parts go on to the other extractors.
    limiter: Cow<'static, Limiter>,
    decided: Decided<Axum>,
    /// The slots of its `#[concurrency_limit]`s, held until its response is sent. Boxed:
    /// every request moves this extractor, few hold slots.
    slots: Option<Box<Slots>>,
    handler: PhantomData<fn() -> M>,
}

impl<M: Limits, S: Send + Sync> FromRequestParts<S> for Decide<M> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Decide<M>, Response> {
        let limits = M::limits();
        let global = Limiter::global();
        let limiter = match Limiter::of(parts) {
            of if std::ptr::eq(of, global) => Cow::Borrowed(global),
            handed_over => Cow::Owned(handed_over.clone()),
        };
        Locals::make_room(parts, limits);
        // Slots first: a request over its concurrency limit takes nothing from its rates.
        // A refusal after them drops them, before its answer leaves.
        let slots = match limits.in_flight.is_empty() {
            true => None,
            false => Some(Box::new(
                Box::pin(pipeline::take_slots(&limiter, parts, limits)).await?,
            )),
        };
        // What the common request never awaits is boxed where it is awaited, so that this
        // future stays small.
        let decided = match pipeline::run_now(&limiter, parts, limits) {
            Some(decided) => decided,
            None => Box::pin(pipeline::run(&limiter, parts, limits)).await,
        }?;
        Ok(Decide {
            limiter,
            decided,
            slots,
            handler: PhantomData,
        })
    }
}

impl<M: Limits> Decide<M> {
    /// The handler's `response`, with its RateLimit fields; what it does not count
    /// (`count = "failures"`) is taken back before it leaves, so that the client's next
    /// request finds it.
    pub async fn answer(self, response: impl IntoResponse) -> Response {
        let mut response = response.into_response();
        let status = response.status();
        // The request went to the handler's extractors; no limit is checked inside an axum
        // handler, and a preflight that reached one ran it.
        let asked = Asked {
            req: None,
            preflight: false,
        };
        let answered = (status, &mut Headers(response.headers_mut()));
        let settle = pipeline::answered(
            &self.limiter,
            M::limits(),
            asked,
            self.decided,
            answered,
            Write::Replace,
        );
        if !settle.is_empty() {
            Box::pin(settle.take_back(&self.limiter)).await;
        }
        match self.slots {
            None => response,
            Some(slots) => {
                let headers = self.limiter.http().headers.ietf;
                crate::in_flight::hold_until_sent(*slots, response, headers)
            }
        }
    }
}

/// One of a guarded handler's own extractors, which runs after [`Decide`]: what it
/// extracted, or the response of its rejection — answered through
/// [`Decide::answer`] like the handler's own response, so that a rejected body (a bad
/// form, a JSON error) carries the RateLimit fields and gives back what its status does
/// not count, as on actix. Never rejects itself.
pub struct Extracted<T>(pub Result<T, Response>);

impl<S: Send + Sync, T: FromRequestParts<S>> FromRequestParts<S> for Extracted<T> {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let extracted = T::from_request_parts(parts, state).await;
        Ok(Extracted(extracted.map_err(IntoResponse::into_response)))
    }
}

// The body's extractor (axum's default `M`): the last argument's, when it reads the body.
impl<S: Send + Sync, T: FromRequest<S>> FromRequest<S> for Extracted<T> {
    type Rejection = std::convert::Infallible;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let extracted = T::from_request(req, state).await;
        Ok(Extracted(extracted.map_err(IntoResponse::into_response)))
    }
}
