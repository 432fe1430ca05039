//! [`RateLimit`]: one limit over a whole `App` or `Scope`, as an actix middleware, on the same
//! engine, decide path, keys, responses and header fields as `#[rate_limit]`.

use std::borrow::Cow;
use std::future::{ready, Future, Ready};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::body::{BoxBody, EitherBody, MessageBody};
use actix_web::dev::{Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::{Error, HttpMessage, HttpResponse};

use super::body;
use super::fields::{Headers, Write};
use super::{HandlerLimits, LimitSpec};
use crate::{KeySpec, Limit, Limiter, Policy, Resolver, Share};
use limiter_http::pipeline;

/// A limit over everything it wraps: an `App`, a `web::scope`, a resource.
///
/// It uses the [`Limiter`] in the app data (else [`Limiter::global`]), with its keys,
/// algorithms, store and fault policy; its responses and header fields are the attribute's.
/// A request is decided before any handler runs, so a rejected request's body is never
/// parsed (a small one is read and dropped, to keep the connection). A request under a
/// wrapped scope and a `#[rate_limit]` handler is checked by both, the middleware first,
/// and its `RateLimit` fields list both limits (the middleware's is counted even when the
/// handler's then rejects: they are two budgets).
///
/// ```
/// use std::time::Duration;
/// use actix_web::{web, App};
/// use limiter::{KeySpec, Policy, RateLimit};
///
/// let api = RateLimit::new(Policy::new(1000, Duration::from_secs(3600))?) // sliding window
///     .key(KeySpec::Ip) // the default
///     .scope("api"); // its name in the header fields and its budget; default "app"
/// let app = App::new().service(
///     web::scope("/api").wrap(api).route("/items", web::get().to(|| async { "[]" })),
/// );
/// # Ok::<(), limiter::PolicyError>(())
/// ```
#[derive(Clone)]
pub struct RateLimit {
    policy: Policy,
    key: KeySpec,
    scope: Cow<'static, str>,
    enforce: Share,
    jitter: Duration,
    choose: Option<Resolver<Policy>>,
}

impl RateLimit {
    /// At most `policy` for each client (by address, unless [`key`](Self::key) says
    /// otherwise), under the scope `"app"`.
    pub fn new(policy: Policy) -> RateLimit {
        RateLimit {
            policy,
            key: KeySpec::Ip,
            scope: Cow::Borrowed("app"),
            enforce: Share::ALL,
            jitter: Duration::ZERO,
            choose: None,
        }
    }

    /// Who is counted (default [`KeySpec::Ip`]).
    pub fn key(mut self, key: KeySpec) -> RateLimit {
        self.key = key;
        self
    }

    /// The limit's name: its budget (shared with every handler or middleware of the same
    /// scope and limit) and its name in the header fields (default `"app"`).
    pub fn scope(mut self, scope: impl Into<Cow<'static, str>>) -> RateLimit {
        self.scope = scope.into();
        self
    }

    /// Enforced on `share` of the clients, each consistently in or out; the others'
    /// would-be rejections pass as in a dry run, with a `warn` event and an
    /// `X-RateLimit-Dry-Run` field (default [`Share::ALL`]; [`Share::NONE`] is a dry run).
    /// Configuration overrides it per scope ([`Limiter::set_enforcement`]).
    pub fn enforce(mut self, share: Share) -> RateLimit {
        self.enforce = share;
        self
    }

    /// A rejection's `Retry-After` lengthened by a random part of `jitter` (at most an
    /// hour), so that clients refused together come back apart (default none).
    pub fn jitter(mut self, jitter: Duration) -> RateLimit {
        self.jitter = jitter;
        self
    }

    /// The policy for each request: `choose` says (a plan's, a tenant's limit), or `None`
    /// for the one [`new`](Self::new) was given — as `policy = path` on `#[rate_limit]`.
    /// A plain or an `async` function; each policy it chooses is a budget of its own under
    /// the scope, and the header fields show the chosen one.
    ///
    /// ```
    /// use std::time::Duration;
    /// use actix_web::HttpRequest;
    /// use limiter::{Policy, RateLimit, Resolver};
    ///
    /// /// Paying clients get ten times the free plan.
    /// fn plan(req: &HttpRequest) -> Option<Policy> {
    ///     match req.headers().get("x-plan")?.as_bytes() {
    ///         b"paid" => Policy::new(1000, Duration::from_secs(60)).ok(),
    ///         _ => None,
    ///     }
    /// }
    ///
    /// let api = RateLimit::new(Policy::new(100, Duration::from_secs(60))?)
    ///     .scope("api")
    ///     .resolve_policy(Resolver::new(plan));
    /// # Ok::<(), limiter::PolicyError>(())
    /// ```
    pub fn resolve_policy(mut self, choose: Resolver<Policy>) -> RateLimit {
        self.choose = Some(choose);
        self
    }

    /// The limit it applies (the declared one, whatever a
    /// [`resolve_policy`](Self::resolve_policy) function chooses).
    pub fn limit(&self) -> Limit {
        Limit::new(self.scope.clone(), self.policy)
    }
}

impl std::fmt::Debug for RateLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimit")
            .field("scope", &self.scope)
            .field("policy", &self.policy)
            .field("key", &self.key)
            .field("enforce", &self.enforce)
            .field("jitter", &self.jitter)
            .field("choose", &self.choose)
            .finish()
    }
}

impl<S, B> Transform<S, ServiceRequest> for RateLimit
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<EitherBody<B, BoxBody>>;
    type Error = Error;
    type Transform = RateLimitService<S>;
    type InitError = ();
    type Future = Ready<Result<Self::Transform, Self::InitError>>;

    fn new_transform(&self, service: S) -> Self::Future {
        let mut spec = LimitSpec::for_middleware(self.scope.clone(), self.policy, self.key.clone())
            .enforce(self.enforce)
            .jitter(self.jitter);
        if let Some(choose) = &self.choose {
            spec = spec.resolve_policy(choose.clone());
        }
        let limits = Arc::new(HandlerLimits::new(vec![spec]).around_service());
        limiter_core::__private::register(limits.clone());
        ready(Ok(RateLimitService {
            service: Rc::new(service),
            limits,
        }))
    }
}

/// The response of a refused request, its body read only when small and quick.
pub(crate) async fn refuse(
    limiter: &Limiter,
    mut req: ServiceRequest,
    response: HttpResponse,
) -> ServiceResponse {
    let response = match body::bodiless(req.request()) {
        true => response,
        false => {
            let mut payload = req.take_payload();
            Box::pin(body::answer_refused(
                limiter.http(),
                req.request(),
                &mut payload,
                response,
            ))
            .await
        }
    };
    let (request, _) = req.into_parts();
    ServiceResponse::new(request, response)
}

/// The service [`RateLimit`] wraps around another.
pub struct RateLimitService<S> {
    service: Rc<S>,
    limits: Arc<HandlerLimits>,
}

impl<S> std::fmt::Debug for RateLimitService<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimitService").finish_non_exhaustive()
    }
}

type LocalBoxFuture<T> = Pin<Box<dyn Future<Output = T>>>;

impl<S, B> Service<ServiceRequest> for RateLimitService<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse<B>, Error = Error> + 'static,
    B: MessageBody + 'static,
{
    type Response = ServiceResponse<EitherBody<B, BoxBody>>;
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
            // As in the attribute's handler: what the common request never awaits is boxed
            // where it is awaited, so that this future stays small.
            let decided = match pipeline::run_now(&limiter, req.request(), &limits) {
                Some(decided) => decided,
                None => Box::pin(pipeline::run(&limiter, req.request(), &limits)).await,
            };
            let decided = match decided {
                Ok(decided) => decided,
                Err(response) => {
                    let refused = Box::pin(refuse(&limiter, req, response)).await;
                    return Ok(refused.map_into_right_body());
                }
            };
            let (request, mut response) = service.call(req).await?.into_parts();
            let status = response.status();
            let asked = pipeline::Asked::at_hand(&limiter, &request, &limits);
            let answered = (status, &mut Headers(response.headers_mut()));
            let settle =
                pipeline::answered(&limiter, &limits, asked, decided, answered, Write::Prepend);
            if !settle.is_empty() {
                Box::pin(settle.take_back(&limiter)).await;
            }
            Ok(ServiceResponse::new(request, response).map_into_left_body())
        })
    }
}
