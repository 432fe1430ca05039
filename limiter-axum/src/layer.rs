//! [`RateLimitLayer`]: one limit over a whole `Router`, a nested router or a route, as a
//! tower `Layer`, on the same engine, decision, keys, responses and header fields as
//! `#[rate_limit]` — and as the actix front end's `RateLimit` middleware.

use std::borrow::Cow;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::Request;
use axum::http::request::Parts;
use axum::response::Response;
use limiter_core::{Limit, Policy};
use limiter_http::pipeline::{self, Asked, Decided};
use limiter_http::{Share, Write};
use tower_layer::Layer;
use tower_service::Service;

use crate::fields::Headers;
use crate::{Axum, HandlerLimits, KeySpec, LimitSpec, Limiter, Resolver};

/// A limit over everything it wraps: `Router::layer` (every route, the fallback too),
/// `Router::route_layer` (the matched routes only), a nested router, a `MethodRouter`.
///
/// It uses the [`Limiter`] the request carries (`.layer(Extension(limiter))`, added after
/// it, so that it runs first), else [`Limiter::global`]. Clones share one budget: a
/// router's clones on every connection and worker count one limit. A request is decided
/// before the service it wraps runs, so a refused request's body is never read.
///
/// ```
/// use std::time::Duration;
/// use axum::{routing::get, Router};
/// use limiter_axum::{KeySpec, Policy, RateLimitLayer};
///
/// let api = RateLimitLayer::new(Policy::new(1000, Duration::from_secs(3600))?) // sliding window
///     .key(KeySpec::Ip) // the default
///     .scope("api"); // its name in the header fields and its budget; default "app"
/// let app: Router = Router::new()
///     .route("/api/items", get(|| async { "[]" }))
///     .route_layer(api);
/// # Ok::<(), limiter_axum::PolicyError>(())
/// ```
#[derive(Clone)]
pub struct RateLimitLayer {
    policy: Policy,
    key: KeySpec,
    scope: Cow<'static, str>,
    enforce: Share,
    jitter: Duration,
    choose: Option<Resolver<Policy>>,
    /// The limits, made when first layered: every service it makes shares them.
    limits: Arc<OnceLock<Arc<HandlerLimits>>>,
}

impl RateLimitLayer {
    /// At most `policy` for each client (by address, unless [`key`](Self::key) says
    /// otherwise), under the scope `"app"`.
    pub fn new(policy: Policy) -> RateLimitLayer {
        RateLimitLayer {
            policy,
            key: KeySpec::Ip,
            scope: Cow::Borrowed("app"),
            enforce: Share::ALL,
            jitter: Duration::ZERO,
            choose: None,
            limits: Arc::default(),
        }
    }

    /// Who is counted (default [`KeySpec::Ip`]).
    pub fn key(self, key: KeySpec) -> RateLimitLayer {
        RateLimitLayer {
            key,
            ..self.unmade()
        }
    }

    /// The limit's name: its budget (shared with every handler or layer of the same scope
    /// and limit, on either front end) and its name in the header fields (default
    /// `"app"`).
    pub fn scope(self, scope: impl Into<Cow<'static, str>>) -> RateLimitLayer {
        let scope = scope.into();
        RateLimitLayer {
            scope,
            ..self.unmade()
        }
    }

    /// Enforced on `share` of the clients, each consistently in or out; the others'
    /// would-be rejections pass as in a dry run (default [`Share::ALL`]; [`Share::NONE`]
    /// is a dry run).
    pub fn enforce(self, share: Share) -> RateLimitLayer {
        RateLimitLayer {
            enforce: share,
            ..self.unmade()
        }
    }

    /// A rejection's `Retry-After` lengthened by a random part of `jitter` (at most an
    /// hour), so that clients refused together come back apart (default none).
    pub fn jitter(self, jitter: Duration) -> RateLimitLayer {
        RateLimitLayer {
            jitter,
            ..self.unmade()
        }
    }

    /// The policy for each request: `choose` says (a plan's, a tenant's limit), or `None`
    /// for the one [`new`](Self::new) was given — as `policy = path` on `#[rate_limit]`.
    pub fn resolve_policy(self, choose: Resolver<Policy>) -> RateLimitLayer {
        RateLimitLayer {
            choose: Some(choose),
            ..self.unmade()
        }
    }

    /// The limit it applies (the declared one, whatever a
    /// [`resolve_policy`](Self::resolve_policy) function chooses).
    pub fn limit(&self) -> Limit {
        Limit::new(self.scope.clone(), self.policy)
    }

    /// This layer with its limits not made yet: a setting changed.
    fn unmade(self) -> RateLimitLayer {
        RateLimitLayer {
            limits: Arc::default(),
            ..self
        }
    }

    /// Its limits, made once for every service it makes.
    fn limits(&self) -> Arc<HandlerLimits> {
        let made = self.limits.get_or_init(|| {
            let mut spec =
                LimitSpec::for_middleware(self.scope.clone(), self.policy, self.key.clone())
                    .enforce(self.enforce)
                    .jitter(self.jitter);
            if let Some(choose) = &self.choose {
                spec = spec.resolve_policy(choose.clone());
            }
            let limits = Arc::new(HandlerLimits::new(vec![spec]).around_service());
            limiter_core::__private::register(limits.clone());
            limits
        });
        Arc::clone(made)
    }
}

impl std::fmt::Debug for RateLimitLayer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimitLayer")
            .field("scope", &self.scope)
            .field("policy", &self.policy)
            .field("key", &self.key)
            .field("enforce", &self.enforce)
            .field("jitter", &self.jitter)
            .field("choose", &self.choose)
            .finish()
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimitService<S>;

    fn layer(&self, inner: S) -> RateLimitService<S> {
        RateLimitService {
            inner,
            limits: self.limits(),
        }
    }
}

/// The service [`RateLimitLayer`] wraps around another.
#[derive(Clone)]
pub struct RateLimitService<S> {
    inner: S,
    limits: Arc<HandlerLimits>,
}

impl<S> std::fmt::Debug for RateLimitService<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimitService").finish_non_exhaustive()
    }
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S> Service<Request> for RateLimitService<S>
where
    S: Service<Request, Response = Response> + Clone + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = BoxFuture<Result<Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let (mut parts, body) = req.into_parts();
        let limiter = Limiter::of(&parts).clone();
        crate::front::Locals::make_room(&mut parts, &self.limits);
        let limits = Arc::clone(&self.limits);
        // Most requests are decided at once: then the service made ready answers, called
        // now, and only settling waits for its response.
        let Some(decided) = pipeline::run_now(&limiter, &parts, &limits) else {
            // The decision waits on the store: a clone of the service waits for the next
            // call, the one made ready answers once the decision is in.
            let clone = self.inner.clone();
            let mut inner = std::mem::replace(&mut self.inner, clone);
            return Box::pin(async move {
                let decided = Box::pin(pipeline::run(&limiter, &parts, &limits)).await;
                match decided {
                    Ok(decided) => {
                        let asked = asked(&limiter, &parts, &limits);
                        let called = inner.call(Request::from_parts(parts, body));
                        settled(called, limiter, limits, asked, decided).await
                    }
                    Err(response) => Ok(response),
                }
            });
        };
        match decided {
            Ok(decided) => {
                let asked = asked(&limiter, &parts, &limits);
                let called = self.inner.call(Request::from_parts(parts, body));
                Box::pin(settled(called, limiter, limits, asked, decided))
            }
            Err(response) => Box::pin(async move { Ok(response) }),
        }
    }
}

/// What settling needs of an admitted request, taken before it goes on to the service for
/// good.
fn asked(limiter: &Limiter, parts: &Parts, limits: &HandlerLimits) -> Asked<'static, Axum> {
    Asked {
        req: None,
        ..Asked::at_hand(limiter, parts, limits)
    }
}

/// The service's response to an admitted request, settled: its fields written, and what it
/// does not count taken back before it leaves.
async fn settled<E>(
    called: impl Future<Output = Result<Response, E>>,
    limiter: Limiter,
    limits: Arc<HandlerLimits>,
    asked: Asked<'static, Axum>,
    decided: Decided<Axum>,
) -> Result<Response, E> {
    let mut response = called.await?;
    let status = response.status();
    let answered = (status, &mut Headers(response.headers_mut()));
    let settle = pipeline::answered(&limiter, &limits, asked, decided, answered, Write::Prepend);
    if !settle.is_empty() {
        Box::pin(settle.take_back(&limiter)).await;
    }
    Ok(response)
}
