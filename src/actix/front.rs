//! The actix front end as the shared code sees it ([`limiter_http::Front`]): its request and
//! response, where a request finds its limiter (the app data), what a decision leaves in a
//! request (its extensions), how it is answered, and the values a service's own closures
//! are handed.

use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;

use actix_web::http::header::{self, HeaderMap, HeaderName};
use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::{HttpMessage, HttpRequest, HttpResponse};
use limiter_http::pipeline::InlineChecks;
use limiter_http::RateLimitFields;

use super::fields::Headers;
use super::keys::Head;
use super::problem::{Failure, Rejection};
use super::{respond, HandlerLimits};
use crate::{Decision, Limiter};

/// The actix-web front end: what [`Limiter`](crate::Limiter),
/// [`LimiterBuilder`](crate::LimiterBuilder), [`KeySpec`](crate::KeySpec) and
/// [`Resolver`](crate::Resolver) are made for in this crate (`limiter_http::Limiter<Actix>`
/// and so on).
#[derive(Clone, Copy, Debug)]
pub struct Actix;

impl limiter_http::Front for Actix {
    type Request = HttpRequest;
    type Response = HttpResponse;
    type Status = StatusCode;
    type HeaderName = HeaderName;
    type Map = Headers<HeaderMap>;
    type Rejection<'a> = Rejection<'a>;
    type Failure = Failure;
    type Pending<'a, T: 'a> = Pin<Box<dyn Future<Output = Option<T>> + 'a>>;

    const HAND_IT_OVER: &'static str = "add `.app_data(limiter.clone())` to the `App` (or \
         `.app_data(web::Data::new(limiter))`)";

    const BUILT_PER_WORKER: &'static str =
        "actix workers are each building a `Limiter` with an in-memory store of its own \
         (inside `HttpServer::new`'s closure): each worker counts alone, which multiplies \
         every limit by the number of workers. Build the `Limiter` once, outside the \
         closure, and clone it in: `let limiter = Limiter::builder().build(); \
         HttpServer::new(move || App::new().app_data(limiter.clone()))`";

    fn global() -> &'static Limiter {
        static GLOBAL: OnceLock<Limiter> = OnceLock::new();
        GLOBAL.get_or_init(Limiter::new_global)
    }

    #[inline]
    fn limiter_of(req: &HttpRequest) -> Option<&Limiter> {
        req.app_data::<Limiter>()
            .or_else(|| {
                req.app_data::<actix_web::web::Data<Limiter>>()
                    .map(|d| d.as_ref())
            })
            .or_else(|| req.app_data::<std::sync::Arc<Limiter>>().map(|a| &**a))
    }

    #[inline]
    fn head(req: &HttpRequest) -> impl limiter_http::RequestHead + '_ {
        Head(req)
    }

    #[inline]
    fn header<'r>(req: &'r HttpRequest, name: &HeaderName) -> Option<&'r [u8]> {
        req.headers().get(name).map(|value| value.as_bytes())
    }

    #[inline]
    fn is_preflight(req: &HttpRequest) -> bool {
        req.method() == actix_web::http::Method::OPTIONS
            && req
                .headers()
                .contains_key(header::ACCESS_CONTROL_REQUEST_METHOD)
    }

    #[inline]
    fn status_code(status: StatusCode) -> u16 {
        status.as_u16()
    }

    fn local<T: Clone + Send + Sync + 'static>(req: &HttpRequest) -> Option<T> {
        req.extensions().get::<T>().cloned()
    }

    fn set_local<T: Clone + Send + Sync + 'static>(req: &HttpRequest, value: T) {
        req.extensions_mut().insert(value);
    }

    fn is_worker_thread(name: &str) -> bool {
        // actix-server names its workers' threads, or runs them on actix-rt arbiters.
        name.starts_with("actix-server worker")
            || (name.starts_with("actix-rt|") && name.contains("arbiter"))
    }
}

impl limiter_http::pipeline::Respond for Actix {
    type Fields<'r> = Headers<&'r mut HeaderMap>;

    #[inline]
    fn response(status: u16, body: Bytes) -> HttpResponse {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        HttpResponse::with_body(status, body).map_into_boxed_body()
    }

    #[inline(always)]
    fn fields_of(response: &mut HttpResponse) -> Headers<&mut HeaderMap> {
        Headers(response.headers_mut())
    }

    fn inline_checks(req: &HttpRequest, add: impl FnOnce(&mut InlineChecks<Actix>)) {
        let mut extensions = req.extensions_mut();
        if extensions.get::<InlineChecks<Actix>>().is_none() {
            extensions.insert(InlineChecks::<Actix>::default());
        }
        if let Some(inline) = extensions.get_mut::<InlineChecks<Actix>>() {
            add(inline);
        }
    }

    fn take_inline_checks(req: &HttpRequest) -> Option<InlineChecks<Actix>> {
        req.extensions_mut().remove::<InlineChecks<Actix>>()
    }

    #[inline]
    fn rejection(
        limiter: &Limiter,
        fields: Option<(&HandlerLimits, &RateLimitFields)>,
        name: &str,
        decision: Decision,
    ) -> HttpResponse {
        respond::rejection(limiter, fields, name, decision)
    }
}

impl limiter_http::LocalFront for Actix {
    #[inline]
    fn pending<'a, T: 'a>(
        future: Pin<Box<dyn Future<Output = Option<T>> + 'a>>,
    ) -> Pin<Box<dyn Future<Output = Option<T>> + 'a>> {
        future
    }
}
