//! [`ConcurrencyLimit`]: `#[concurrency_limit]` over a whole `App` or `Scope`, as an actix
//! middleware — the same slots, keys, responses and fields.

use std::borrow::Cow;
use std::future::{ready, Future, Ready};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::Error;

use super::in_flight::HeldSlots;
use super::{HandlerLimits, InFlightSpec};
use crate::{KeySpec, Limiter};

/// At most `max` requests of one client in flight under everything it wraps.
///
/// It uses the [`Limiter`] in the app data (else [`Limiter::global`]). A request takes a
/// slot before any handler runs and holds it until its response's body is sent (or
/// dropped); the `429` and the fields are `#[concurrency_limit]`'s.
///
/// ```
/// use actix_web::{web, App};
/// use limiter::{ConcurrencyLimit, KeySpec};
///
/// let uploads = ConcurrencyLimit::new(2)
///     .key(KeySpec::User) // default: by address
///     .scope("uploads"); // default "app-in-flight"
/// let app = App::new().service(
///     web::scope("/upload").wrap(uploads).route("", web::post().to(|| async { "ok" })),
/// );
/// ```
#[derive(Clone, Debug)]
pub struct ConcurrencyLimit {
    max: u32,
    key: KeySpec,
    scope: Cow<'static, str>,
}

impl ConcurrencyLimit {
    /// At most `max` (at least 1) requests of each client in flight, by address, under
    /// the scope `"app-in-flight"`.
    pub fn new(max: u32) -> ConcurrencyLimit {
        ConcurrencyLimit {
            max: max.max(1),
            key: KeySpec::Ip,
            scope: Cow::Borrowed("app-in-flight"),
        }
    }

    /// Who is counted (default [`KeySpec::Ip`]).
    pub fn key(mut self, key: KeySpec) -> ConcurrencyLimit {
        self.key = key;
        self
    }

    /// The slots' name: shared with every handler or middleware of the same scope.
    pub fn scope(mut self, scope: impl Into<Cow<'static, str>>) -> ConcurrencyLimit {
        self.scope = scope.into();
        self
    }
}

impl<S, B> Transform<S, ServiceRequest> for ConcurrencyLimit
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = Error;
    type Transform = ConcurrencyLimitService<S>;
    type InitError = ();
    type Future = Ready<Result<Self::Transform, Self::InitError>>;

    fn new_transform(&self, service: S) -> Self::Future {
        let spec = InFlightSpec::for_middleware(self.scope.clone(), self.max, self.key.clone());
        let limits = Arc::new(HandlerLimits::new(Vec::new()).in_flight(vec![spec]));
        limiter_core::__private::register(limits.clone());
        ready(Ok(ConcurrencyLimitService {
            service: Rc::new(service),
            limits,
        }))
    }
}

/// The service [`ConcurrencyLimit`] wraps around another.
pub struct ConcurrencyLimitService<S> {
    service: Rc<S>,
    limits: Arc<HandlerLimits>,
}

impl<S> std::fmt::Debug for ConcurrencyLimitService<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConcurrencyLimitService")
            .finish_non_exhaustive()
    }
}

type LocalBoxFuture<T> = Pin<Box<dyn Future<Output = T>>>;

impl<S, B> Service<ServiceRequest> for ConcurrencyLimitService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<BoxBody>;
    type Error = Error;
    type Future = LocalBoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.service.poll_ready(cx)
    }

    fn call(&self, req: ServiceRequest) -> Self::Future {
        let service = Rc::clone(&self.service);
        let limits = Arc::clone(&self.limits);
        Box::pin(async move {
            let limiter = Limiter::of(req.request()).clone();
            let mut slots = match super::in_flight::take_slots(&limiter, req.request(), &limits)
                .await
            {
                Ok(slots) => slots,
                // As any refusal: the body is read only when small and quick.
                Err(response) => {
                    return Ok(Box::pin(super::middleware::refuse(&limiter, req, response)).await)
                }
            };
            // Lent while the wrapped services run: a refusal among them gives them back
            // before it awaits a slow body, instead of holding them meanwhile.
            let loan = slots.lend_to(req.request());
            let answered = service.call(req).await;
            // Taken back before a failure returns: dropped with `slots` then.
            let slots = slots.take_back(&loan);
            let (request, response) = answered?.map_into_boxed_body().into_parts();
            let response = slots.hold_until_sent(response, limiter.http().headers.ietf);
            Ok(ServiceResponse::new(request, response))
        })
    }
}
