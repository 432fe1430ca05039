//! What `#[rate_limit]` expands to at run time: decide every limit of a handler at once, all
//! or nothing, before its extractors run; then run it and put the rate limit fields on its
//! response.

use std::borrow::Cow;
use std::future::Future;

use actix_web::body::BoxBody;
use actix_web::http::header::HeaderValue;
use actix_web::{FromRequest, HttpRequest, HttpResponse, Responder};

use super::keys::KeySpec;
use super::response::{self, HeaderOptions, RateLimitFields, Write};
use crate::{Limit, Limiter, Policy};

/// One `#[rate_limit(...)]`: the limit, the name its header fields use, and its key.
#[derive(Debug)]
pub struct LimitSpec {
    pub(crate) limit: Limit,
    pub(crate) name: Cow<'static, str>,
    pub(crate) key: KeySpec,
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
            name: response::field_name(Cow::Borrowed(name)),
            key,
            handler,
        }
    }

    /// The limit of a [`RateLimit`](super::RateLimit) middleware: named after its scope.
    pub(crate) fn for_middleware(
        scope: Cow<'static, str>,
        policy: Policy,
        key: KeySpec,
    ) -> LimitSpec {
        LimitSpec {
            name: response::field_name(scope.clone()),
            handler: format!("RateLimit middleware \"{scope}\""),
            limit: Limit::new(scope, policy),
            key,
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
    pub(crate) limits: Vec<LimitSpec>,
    pub(crate) policy: HeaderValue,
    pub(crate) prefixes: Vec<Box<str>>,
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

impl crate::registry::Declares for HandlerLimits {
    fn owner(&self) -> &str {
        self.limits.first().map_or("", |spec| spec.handler())
    }

    fn limits(&self) -> Vec<&Limit> {
        self.limits.iter().map(|spec| &spec.limit).collect()
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
        options: limiter.http().headers,
    };
    match Args::from_request(&req, &mut payload).await {
        Ok(args) => Guarded(Outcome::Admitted(handler(args).await, headers)),
        Err(error) => Guarded(Outcome::ExtractorFailed(error.into(), headers)),
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
            Write::Replace,
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
