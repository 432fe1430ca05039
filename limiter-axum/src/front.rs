//! The axum/tower front end as the shared code sees it ([`limiter_http::Front`]): its
//! request (the head, `Parts`, which every extractor but the body's reads), its response,
//! where a request finds its limiter (an `Extension`), and how it is answered.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::http::header::{HeaderMap, HeaderName};
use axum::http::request::Parts;
use axum::http::{Extensions, Method, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use limiter_http::pipeline::InlineChecks;
use parking_lot::Mutex;

use crate::fields::Headers;
use crate::keys::Head;
use crate::problem::{Failure, Rejection};
use crate::Limiter;

/// The axum/tower front end: what [`Limiter`](crate::Limiter),
/// [`LimiterBuilder`](crate::LimiterBuilder), [`KeySpec`](crate::KeySpec) and
/// [`Resolver`](crate::Resolver) are made for in this crate (`limiter_http::Limiter<Axum>`
/// and so on).
#[derive(Clone, Copy, Debug)]
pub struct Axum;

/// The process's limiter on axum: the default one ([`Limiter::global`]) unless a service
/// installed its own ([`install`]).
static GLOBAL: OnceLock<Limiter> = OnceLock::new();

/// Makes `limiter` the one every request is counted by that finds no `Extension(Limiter)`
/// — the process's limiter, in place of the default [`Limiter::global`] — so that a
/// configured limiter needs no layer: `Router::layer` costs axum a boxed clone of every
/// route's service per request, which this saves (about 1,250 instructions a request in
/// the bench). Install it before the server starts: once a request was counted by the
/// default one, or a limiter was installed, `limiter` comes back as the `Err`.
///
/// ```
/// use limiter_axum::Limiter;
///
/// let limiter = Limiter::builder().trusted_proxies(["10.0.0.0/8"]).build();
/// limiter_axum::install(limiter.clone()).expect("the first limiter installed");
/// assert_eq!(Limiter::global().identity(), limiter.identity());
/// // A second one is refused: the process has its limiter.
/// assert!(limiter_axum::install(Limiter::builder().build()).is_err());
/// ```
pub fn install(limiter: Limiter) -> Result<(), Limiter> {
    Limiter::install_in(&GLOBAL, limiter)
}

impl limiter_http::Front for Axum {
    type Request = Parts;
    type Response = Response;
    type Status = StatusCode;
    type HeaderName = HeaderName;
    type Map = Headers<HeaderMap>;
    type Rejection<'a> = Rejection<'a>;
    type Failure = Failure;
    type Pending<'a, T: 'a> = Pin<Box<dyn Future<Output = Option<T>> + Send + 'a>>;

    const HAND_IT_OVER: &'static str =
        "add `.layer(axum::Extension(limiter.clone()))` to the `Router`, after its routes";

    const BUILT_PER_WORKER: &'static str =
        "several `Limiter`s are each counting with an in-memory store of their own: each \
         counts alone, which multiplies every limit by their number. Build the `Limiter` \
         once and hand clones of it to the router (`.layer(Extension(limiter.clone()))`)";

    fn global() -> &'static Limiter {
        GLOBAL.get_or_init(Limiter::new_global)
    }

    #[inline]
    fn limiter_of(req: &Parts) -> Option<&Limiter> {
        req.extensions.get::<Limiter>()
    }

    #[inline]
    fn head(req: &Parts) -> impl limiter_http::RequestHead + '_ {
        Head(req)
    }

    #[inline]
    fn header<'r>(req: &'r Parts, name: &HeaderName) -> Option<&'r [u8]> {
        req.headers.get(name).map(|value| value.as_bytes())
    }

    #[inline]
    fn is_preflight(req: &Parts) -> bool {
        req.method == Method::OPTIONS
            && req
                .headers
                .contains_key(axum::http::header::ACCESS_CONTROL_REQUEST_METHOD)
    }

    #[inline]
    fn status_code(status: StatusCode) -> u16 {
        status.as_u16()
    }

    fn local<T: Clone + Send + Sync + 'static>(req: &Parts) -> Option<T> {
        req.extensions.get::<Locals>()?.0.lock().get::<T>().cloned()
    }

    // Where the request has no room (its limits await nothing), nothing is kept: each
    // resolver is then asked for itself.
    fn set_local<T: Clone + Send + Sync + 'static>(req: &Parts, value: T) {
        if let Some(locals) = req.extensions.get::<Locals>() {
            locals.0.lock().insert(value);
        }
    }

    fn is_worker_thread(_: &str) -> bool {
        // One runtime serves every connection: a tokio worker building a limiter is one
        // limiter, not one per worker.
        false
    }
}

impl limiter_http::SendFront for Axum {
    #[inline]
    fn pending_send<'a, T: 'a>(
        future: Pin<Box<dyn Future<Output = Option<T>> + Send + 'a>>,
    ) -> Pin<Box<dyn Future<Output = Option<T>> + Send + 'a>> {
        future
    }
}

/// What deciding a request leaves in it for later (its `async` resolvers' answers, and
/// when they must have answered): the shared code reads a request's head by reference, so
/// the room is made — when its limits await something — before the decision.
#[derive(Clone, Default)]
pub(crate) struct Locals(Arc<Mutex<Extensions>>);

impl Locals {
    /// Makes room in `parts` for what deciding it against `limits` leaves there.
    #[inline]
    pub(crate) fn make_room(parts: &mut Parts, limits: &crate::HandlerLimits) {
        if limits.awaits() {
            parts.extensions.insert(Locals::default());
        }
    }
}

impl limiter_http::pipeline::Respond for Axum {
    type Fields<'r> = Headers<&'r mut HeaderMap>;

    #[inline]
    fn response(status: u16, body: Bytes) -> Response {
        let mut response = Response::new(Body::from(body));
        *response.status_mut() =
            StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        response
    }

    #[inline(always)]
    fn fields_of(response: &mut Response) -> Headers<&mut HeaderMap> {
        Headers(response.headers_mut())
    }

    // No check inside a handler on this front end yet: nothing waits in a request.
    fn inline_checks(_: &Parts, _: impl FnOnce(&mut InlineChecks<Axum>)) {}

    fn take_inline_checks(_: &Parts) -> Option<InlineChecks<Axum>> {
        None
    }
}
