//! What `#[rate_limit]` expands to at run time: decide every limit of a handler at once, all
//! or nothing, before its extractors run; then run it and put the rate limit fields on its
//! response.

use std::borrow::Cow;
use std::future::Future;

use actix_web::body::BoxBody;
use actix_web::http::header::HeaderValue;
use actix_web::{FromRequest, HttpRequest, HttpResponse, Responder};

use crate::key::{KeyError, KeySpec};
use crate::response::{
    self, complete_rejection, Failure, HeaderOptions, RateLimitFields, Rejection,
};
use crate::{Decision, Limit, Limiter, OnStoreError, Policy};

/// One `#[rate_limit(...)]`: the limit, the name its header fields use, and its key.
#[derive(Debug)]
pub struct LimitSpec {
    limit: Limit,
    name: Cow<'static, str>,
    key: KeySpec,
    handler: String,
}

impl LimitSpec {
    /// A limit as the attribute declares it: its policy was built in a `const`, so every
    /// mistake was a compile error.
    ///
    /// `scope` is the one the attribute names; without one, the budget belongs to the
    /// handler alone and is named after its path ([`handler_path`] of `handler`, the
    /// `type_name` of a type declared in the generated handler), with `#2`, `#3`... for the
    /// stacked limits below the first. `name` is what the header fields call the limit;
    /// characters a header cannot carry are percent-encoded.
    pub fn new(
        scope: Option<&'static str>,
        handler: &'static str,
        position: usize,
        name: &'static str,
        policy: Policy,
        key: KeySpec,
    ) -> LimitSpec {
        let handler = handler_path(handler);
        let scope: Cow<'static, str> = match scope {
            Some(scope) => Cow::Borrowed(scope),
            None if position == 0 => Cow::Owned(handler.clone()),
            None => Cow::Owned(format!("{handler}#{}", position + 1)),
        };
        LimitSpec {
            limit: Limit::new(scope, policy),
            name: response::field_name(name),
            key,
            handler,
        }
    }

    /// The path of the handler it limits.
    pub fn handler(&self) -> &str {
        &self.handler
    }

    /// The limit (scope and policy).
    pub fn limit(&self) -> &Limit {
        &self.limit
    }

    /// The name in the RateLimit header fields.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// The path of a handler, from the `type_name` of a type declared inside its generated
/// function: `my_app::auth::login` for `async fn login` in module `auth`, with the `impl`
/// type or enclosing function when there is one (`my_app::auth::Admin::login`,
/// `my_app::routes::login`), so that two handlers of one name never share a budget by
/// accident. What the route macros and `async` add to the path is removed.
///
/// It is the default scope, and names the budget in Redis: moving or renaming a handler
/// starts a new budget. Name scopes (`scope = "login"`) where budgets must outlive such
/// changes across a rolling deploy.
///
/// ```
/// use limiter_core::handler_path;
/// assert_eq!(handler_path("app::auth::login::{{closure}}::__LimiterHandler"), "app::auth::login");
/// assert_eq!(
///     handler_path("<app::login as actix_web::service::HttpServiceFactory>::register::login::{{closure}}::__LimiterHandler"),
///     "app::login"
/// );
/// ```
pub fn handler_path(marker: &str) -> String {
    let mut segments = split_path(marker);
    if segments.last() == Some(&"__LimiterHandler") {
        segments.pop();
    }
    segments.retain(|s| !(s.starts_with("{{closure") || s.starts_with("{closure")));
    let mut out: Vec<&str> = Vec::with_capacity(segments.len());
    let mut i = 0;
    while i < segments.len() {
        let segment = segments[i];
        // The route macros turn `fn NAME` into a type `NAME` whose
        // `HttpServiceFactory::register` holds the function.
        if let Some(inner) = segment
            .strip_prefix('<')
            .and_then(|s| s.strip_suffix('>'))
            .and_then(|s| s.split_once(" as "))
            .filter(|(_, t)| t.ends_with("HttpServiceFactory"))
            .map(|(ty, _)| ty)
        {
            if segments.get(i + 1) == Some(&"register") {
                out.extend(split_path(inner));
                i += 3; // the type, `register`, and the function of the same name
                continue;
            }
        }
        out.push(segment);
        i += 1;
    }
    out.join("::")
}

/// Splits a Rust path on `::`, except inside `<...>`.
fn split_path(path: &str) -> Vec<&str> {
    let mut segments = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    let bytes = path.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'<' => depth += 1,
            b'>' => depth = depth.saturating_sub(1),
            b':' if depth == 0 && bytes.get(i + 1) == Some(&b':') => {
                segments.push(&path[start..i]);
                start = i + 2;
                i += 1;
            }
            _ => {}
        }
        i += 1;
    }
    segments.push(&path[start..]);
    segments
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
    pub fn new(limits: Vec<LimitSpec>) -> HandlerLimits {
        let mut policy = String::new();
        for spec in &limits {
            let p = spec.limit.policy();
            response::policy_member(&mut policy, &spec.name, p.max().get(), p.window_ms());
        }
        HandlerLimits {
            // Names are made of what a header carries, so this cannot fail; if it did, the
            // field would be left empty rather than the handler broken.
            policy: HeaderValue::from_str(&policy).unwrap_or(HeaderValue::from_static("")),
            prefixes: limits
                .iter()
                .map(|s| response::member_prefix(&s.name))
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
    ///
    /// A program that built a `Limiter` and handed it to no `App` gets one `warn` event at
    /// the first request that falls back to the global one.
    pub fn of(req: &HttpRequest) -> &Limiter {
        if let Some(limiter) = req.app_data::<Limiter>() {
            return limiter;
        }
        if let Some(data) = req.app_data::<actix_web::web::Data<Limiter>>() {
            return data;
        }
        if let Some(shared) = req.app_data::<std::sync::Arc<Limiter>>() {
            return shared;
        }
        crate::mistakes::counted_by_the_global_limiter();
        Limiter::global()
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
    let fields = match limiter.decide(&req, limits).await {
        Ok(fields) => fields,
        Err(response) => {
            limiter.discard_small_body(&req, &mut payload).await;
            return Guarded(Outcome::Refused(*response));
        }
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

impl Limiter {
    /// Reads and drops the body of a refused request when its `Content-Length` is small
    /// enough ([`LimiterBuilder::keep_alive_body_limit`](crate::LimiterBuilder)): a body
    /// left unread makes actix close the connection, and a client that is told to wait
    /// would then pay a new connection for its next request. Larger bodies, and bodies of
    /// unknown length, are not read: their connection closes. Nothing is ever parsed.
    async fn discard_small_body(&self, req: &HttpRequest, payload: &mut actix_web::dev::Payload) {
        let limit = self.keep_alive_body_limit();
        let length = req
            .headers()
            .get(actix_web::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        let Some(length) = length.filter(|&n| n > 0 && n <= limit) else {
            return;
        };
        let mut read = 0;
        while read < length {
            let next = std::future::poll_fn(|cx| {
                futures_core::Stream::poll_next(std::pin::Pin::new(&mut *payload), cx)
            });
            match next.await {
                Some(Ok(chunk)) => read += chunk.len(),
                _ => break,
            }
        }
    }

    /// Decides `req` against every limit of a handler, all or nothing: the header fields
    /// for an admitted request, or the response for one that is not.
    async fn decide(
        &self,
        req: &HttpRequest,
        limits: &HandlerLimits,
    ) -> Result<RateLimitFields, Box<HttpResponse>> {
        let mut keys = Vec::with_capacity(limits.limits.len());
        for spec in &limits.limits {
            match spec.key.key_of(req, self) {
                Ok(key) => keys.push(key),
                Err(error) => return Err(Box::new(self.key_failure(limits, &error))),
            }
        }
        let decided = match (limits.limits.as_slice(), keys.as_slice()) {
            ([spec], [key]) => {
                let mut check = self.check(&spec.limit, key.as_bytes());
                let result = match check.take_ready() {
                    Some(result) => result,
                    None => check.await,
                };
                result.map(RateLimitFields::one)
            }
            _ => {
                let requests: Vec<(&Limit, &[u8])> = limits
                    .limits
                    .iter()
                    .zip(&keys)
                    .map(|(spec, key)| (&spec.limit, key.as_bytes()))
                    .collect();
                let mut check = self.check_all(&requests);
                let result = match check.take_ready() {
                    Some(result) => result,
                    None => check.await,
                };
                result.map(RateLimitFields::many)
            }
        };
        match decided {
            Ok(fields) => match fields.rejection() {
                None => Ok(fields),
                Some((index, decision)) => {
                    Err(Box::new(self.rejection(limits, &fields, index, decision)))
                }
            },
            // Unlimited meanwhile; the RateLimit fields are left out.
            Err(_) if self.on_store_error() == OnStoreError::FailOpen => {
                Ok(RateLimitFields::undecided())
            }
            Err(_) => Err(Box::new(self.failure(limits, Failure::StoreUnavailable))),
        }
    }

    /// The 429 (or the configured rejection response) for a request some limits rejected:
    /// `decision` says when every one of them admits it again.
    fn rejection(
        &self,
        limits: &HandlerLimits,
        fields: &RateLimitFields,
        index: usize,
        decision: Decision,
    ) -> HttpResponse {
        let name = &limits.limits[index].name;
        let rejection = Rejection::new(name, decision, self.rejection_message());
        let custom = self.rejection_response().is_some();
        let mut response = match self.rejection_response() {
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
            self.header_options(),
            custom,
        );
        response
    }

    fn key_failure(&self, limits: &HandlerLimits, error: &KeyError) -> HttpResponse {
        match error {
            KeyError::NoClientAddress => {
                tracing::debug!(
                    "rate limit: a request without a peer address on a route keyed by address"
                );
                self.failure(limits, Failure::NoClientAddress)
            }
            KeyError::Contradiction(contradiction) => {
                tracing::debug!(%contradiction, "rate limit: contradictory forwarding headers");
                crate::mistakes::contradictory_forwarding(contradiction);
                self.failure(limits, Failure::ContradictoryForwarding)
            }
        }
    }

    /// The response for a request the limiter could not decide: the default problem, or
    /// the configured one, with what every such response carries.
    fn failure(&self, limits: &HandlerLimits, failure: Failure) -> HttpResponse {
        let mut response = match self.failure_response() {
            Some(build) => build(&failure),
            None => failure.problem_response(),
        };
        failure.complete(&mut response, &limits.policy, self.header_options());
        response
    }
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
