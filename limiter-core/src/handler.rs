//! What `#[rate_limit]` expands to at run time: decide every limit of a handler, in order,
//! before its extractors run; then run it and put the rate limit fields on its response.

use std::future::Future;
use std::time::Duration;

use actix_web::body::BoxBody;
use actix_web::http::header::HeaderValue;
use actix_web::http::StatusCode;
use actix_web::{FromRequest, HttpRequest, HttpResponse, Responder};

use crate::key::{KeySpec, NoClientAddress};
use crate::response::{
    self, complete_rejection, problem, HeaderOptions, RateLimitFields, Rejection,
};
use crate::{Algorithm, Decision, Limit, Limiter, OnStoreError, Policy, StoreError};

/// One `#[rate_limit(...)]`: the limit, the name its header fields use, and its key.
#[derive(Debug)]
pub struct LimitSpec {
    limit: Limit,
    name: &'static str,
    key: KeySpec,
}

impl LimitSpec {
    /// A limit as the attribute declares it. The attribute has checked every value at
    /// compile time, so the policy is valid.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        scope: &'static str,
        name: &'static str,
        max: u32,
        window_ms: u64,
        algorithm: Algorithm,
        burst: Option<u32>,
        key: KeySpec,
    ) -> LimitSpec {
        let policy = Policy::for_algorithm(algorithm, max, Duration::from_millis(window_ms))
            .and_then(|policy| match burst {
                Some(burst) => policy.with_burst(burst),
                None => Ok(policy),
            })
            .unwrap_or_else(|error| panic!("#[rate_limit] on `{name}`: {error}"));
        LimitSpec {
            limit: Limit::new(scope, policy),
            name,
            key,
        }
    }

    /// The limit (scope and policy).
    pub fn limit(&self) -> &Limit {
        &self.limit
    }

    /// The name in the RateLimit header fields.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

/// The limits of one handler, in the order they are checked, and their fixed
/// `RateLimit-Policy` value.
#[derive(Debug)]
pub struct HandlerLimits {
    limits: Vec<LimitSpec>,
    policy: HeaderValue,
    prefixes: Vec<Box<str>>,
}

impl HandlerLimits {
    /// The limits of a handler, first checked first.
    ///
    /// Handlers keep theirs in a `static` for the life of the process, so its fixed
    /// `RateLimit-Policy` value is leaked once, to be sent without copying.
    pub fn new(limits: Vec<LimitSpec>) -> HandlerLimits {
        let mut policy = String::new();
        for spec in &limits {
            let p = spec.limit.policy();
            response::policy_member(&mut policy, spec.name, p.max().get(), p.window_ms());
        }
        let policy: &'static str = Box::leak(policy.into_boxed_str());
        HandlerLimits {
            policy: HeaderValue::from_str(policy)
                .map(|_| HeaderValue::from_static(policy))
                .unwrap_or(HeaderValue::from_static("")),
            prefixes: limits
                .iter()
                .map(|s| response::member_prefix(s.name))
                .collect(),
            limits,
        }
    }

    /// The limits, in order.
    pub fn limits(&self) -> &[LimitSpec] {
        &self.limits
    }
}

impl Limiter {
    /// The limiter a request is counted by: the `Limiter` in its app data (given as
    /// `.app_data(limiter)` or, as actix habits go, `.app_data(web::Data::new(limiter))`),
    /// else [`Limiter::global`].
    pub fn of(req: &HttpRequest) -> &Limiter {
        if let Some(limiter) = req.app_data::<Limiter>() {
            return limiter;
        }
        match req.app_data::<actix_web::web::Data<Limiter>>() {
            Some(data) => data,
            None => Limiter::global(),
        }
    }
}

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
    let decided = match limiter.decide_now(&req, limits) {
        Some(decided) => decided,
        None => decide(limiter, &req, limits).await,
    };
    let fields = match decided {
        Ok(fields) => fields,
        Err(response) => return Guarded(Outcome::Refused(*response)),
    };
    let headers = Fields {
        fields,
        limits,
        options: limiter.header_options(),
    };
    match Args::from_request(&req, &mut payload).await {
        Ok(args) => Guarded(Outcome::Admitted(handler(args).await, headers)),
        Err(error) => Guarded(Outcome::ExtractorFailed(error.into(), headers)),
    }
}

/// Checks each limit in order; the first rejection ends the run, so the limits after it
/// consume nothing. This is the path of stores that answer later (Redis).
async fn decide(
    limiter: &Limiter,
    req: &HttpRequest,
    limits: &HandlerLimits,
) -> Result<RateLimitFields, Box<HttpResponse>> {
    let mut fields = RateLimitFields::new();
    for (index, spec) in limits.limits.iter().enumerate() {
        let key = match spec.key.key_of(req, limiter) {
            Ok(key) => key,
            Err(NoClientAddress) => return Err(Box::new(no_client_address())),
        };
        let decision = match limiter.check(&spec.limit, key.as_bytes()).await {
            Ok(decision) => decision,
            // Unlimited meanwhile; the limit's RateLimit member is left out.
            Err(_) if limiter.on_store_error() == OnStoreError::FailOpen => {
                fields.skip();
                continue;
            }
            Err(error) => return Err(Box::new(store_failed(&error))),
        };
        record(limiter, limits, &mut fields, index, decision)?;
    }
    Ok(fields)
}

/// The same as [`decide`], for a store that answers at once (the in-memory one): no future
/// to build, poll and carry inside the handler's.
impl Limiter {
    fn decide_now(
        &self,
        req: &HttpRequest,
        limits: &HandlerLimits,
    ) -> Option<Result<RateLimitFields, Box<HttpResponse>>> {
        let memory = self.memory_store()?;
        let now = self.clock().now();
        let mut fields = RateLimitFields::new();
        for (index, spec) in limits.limits.iter().enumerate() {
            let key = match spec.key.key_of(req, self) {
                Ok(key) => key,
                Err(NoClientAddress) => return Some(Err(Box::new(no_client_address()))),
            };
            let decision = memory.check_at(&spec.limit, key.as_bytes(), now);
            if let Err(response) = record(self, limits, &mut fields, index, decision) {
                return Some(Err(response));
            }
        }
        Some(Ok(fields))
    }
}

/// Keeps a decision for the header fields; a rejection becomes the response.
fn record(
    limiter: &Limiter,
    limits: &HandlerLimits,
    fields: &mut RateLimitFields,
    index: usize,
    decision: Decision,
) -> Result<(), Box<HttpResponse>> {
    fields.add(decision);
    if decision.allowed() {
        return Ok(());
    }
    let name = limits.limits[index].name;
    let rejection = Rejection::new(name, decision, limiter.rejection_message());
    let custom = limiter.rejection_response().is_some();
    let mut response = match limiter.rejection_response() {
        Some(build) => {
            let mut response = build(&rejection);
            complete_rejection(&mut response, rejection.retry_after_secs());
            response
        }
        None => rejection.problem_response(),
    };
    fields.apply(
        response.headers_mut(),
        &limits.policy,
        &limits.prefixes,
        limiter.header_options(),
        custom,
    );
    Err(Box::new(response))
}

/// Fail closed: `503` with `Retry-After: 1`, the store's error in the detail.
fn store_failed(error: &StoreError) -> HttpResponse {
    let mut response = problem(
        StatusCode::SERVICE_UNAVAILABLE,
        "Rate Limit Store Unavailable",
        &format!("the rate limit store failed: {error}"),
    );
    complete_rejection(&mut response, 1);
    response
}

/// The documented outcome for a request without a peer address (a Unix socket, or a test
/// request built without `.peer_addr(...)`): it cannot be told apart from anyone, and
/// counting it in a shared bucket would silently throttle or free everyone alike.
fn no_client_address() -> HttpResponse {
    problem(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Client Address Unknown",
        "the rate limiter keys this route by client address, and the request has no peer \
         address (a Unix socket, or a test request without .peer_addr(...))",
    )
}

/// The response of a rate-limited handler.
pub struct Guarded<R>(Outcome<R>);

enum Outcome<R> {
    Admitted(R, Fields),
    ExtractorFailed(actix_web::Error, Fields),
    Refused(HttpResponse),
}

/// The header fields to add once the handler has answered.
struct Fields {
    fields: RateLimitFields,
    limits: &'static HandlerLimits,
    options: HeaderOptions,
}

impl Fields {
    fn apply(self, response: &mut HttpResponse) {
        self.fields.apply(
            response.headers_mut(),
            &self.limits.policy,
            &self.limits.prefixes,
            self.options,
            false,
        );
    }
}

impl<R: Responder> Responder for Guarded<R> {
    type Body = BoxBody;

    fn respond_to(self, req: &HttpRequest) -> HttpResponse<BoxBody> {
        match self.0 {
            Outcome::Admitted(inner, fields) => {
                let mut response = inner.respond_to(req).map_into_boxed_body();
                fields.apply(&mut response);
                response
            }
            Outcome::ExtractorFailed(error, fields) => {
                let mut response = HttpResponse::from_error(error);
                fields.apply(&mut response);
                response
            }
            Outcome::Refused(response) => response,
        }
    }
}
