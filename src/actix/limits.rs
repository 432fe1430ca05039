//! A handler's limits as the attribute declares them: each limit's spec (scope, policy,
//! key, name in the header fields, options), and the set checked together, with its fixed
//! `RateLimit-Policy` value.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use actix_web::http::header::HeaderValue;
use actix_web::HttpRequest;

use super::fields::{self, Member};
use super::keys::KeySpec;
use super::resolve::Resolver;
use crate::{Limit, Limiter, Policy, Share};

/// One `#[rate_limit(...)]`: the limit, the name its header fields use, and its key.
#[derive(Debug)]
pub struct LimitSpec {
    pub(crate) limit: Limit,
    pub(crate) name: Cow<'static, str>,
    pub(crate) key: KeySpec,
    handler: String,
    pub(crate) options: Options,
    /// Its decision counters (feature `metrics`; nothing without it).
    pub(crate) counters: limiter_http::plumbing::Counters,
}

/// What a limit does besides counting one unit per request: the attribute's `exempt`,
/// `cost`, `count`, `dry_run`, `enforce` and `policy`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Options {
    pub(crate) exempt: Option<fn(&HttpRequest) -> bool>,
    pub(crate) cost: Cost,
    /// Which responses keep the request counted (`count = "failures"`, `count = fn`);
    /// `None`: all of them.
    pub(crate) counts: Option<super::pipeline::settle::Counts>,
    /// The share of clients it is enforced on ([`Share::NONE`]: a dry run).
    pub(crate) enforce: Share,
    pub(crate) policy: Option<Resolver<Policy>>,
    /// Up to this many ms added to a rejection's wait, drawn per response (`jitter`).
    pub(crate) jitter_ms: u32,
}

/// The longest jitter: an hour.
const MAX_JITTER_MS: u32 = 3_600_000;

/// A jitter in whole ms, at most [`MAX_JITTER_MS`].
pub(crate) fn jitter_ms(jitter: Duration) -> u32 {
    jitter.as_millis().min(u128::from(MAX_JITTER_MS)) as u32
}

/// The units a request takes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Cost {
    Units(u32),
    Computed(fn(&HttpRequest) -> u32),
}

impl Default for Cost {
    fn default() -> Cost {
        Cost::Units(1)
    }
}

impl Options {
    /// Whether nothing but counting one unit is asked.
    fn is_plain(&self) -> bool {
        self.exempt.is_none()
            && matches!(self.cost, Cost::Units(1))
            && self.counts.is_none()
            && self.enforce.is_all()
            && self.policy.is_none()
            && self.jitter_ms == 0
    }
}

impl Cost {
    /// The units `req` takes: at least 1.
    pub(crate) fn of(&self, req: &HttpRequest) -> u32 {
        match self {
            Cost::Units(units) => (*units).max(1),
            Cost::Computed(compute) => compute(req).max(1),
        }
    }
}

impl LimitSpec {
    /// A limit as the attribute declares it: its policy was built in a `const`, so every
    /// mistake was a compile error.
    ///
    /// `scope` is the one the attribute names; without one, the budget belongs to the
    /// handler alone and is named after `path` — `module_path!()` and the fn's name, as the
    /// attribute writes them: the same with every compiler and on every platform (Redis key
    /// names carry it) — with `#2`, `#3`... for the stacked limits below the first. `marker`
    /// is the `type_name` of a type declared in the generated handler: it names the handler
    /// in the route table ([`handler_path`]), and the default scope of two handlers that
    /// share a `path` (two `impl` blocks, or two functions, of one module, each with a
    /// handler of that name), so that they never share a budget by accident — a name the
    /// standard library does not promise to keep, so give such handlers a `scope`. `name`
    /// is what the header fields call the limit; characters a header cannot carry are
    /// percent-encoded.
    pub fn new(
        scope: Option<&'static str>,
        path: &'static str,
        marker: &'static str,
        position: usize,
        name: &'static str,
        policy: Policy,
        key: KeySpec,
    ) -> LimitSpec {
        let handler = handler_path(marker);
        let own: Cow<'static, str> = if limiter_core::__private::path_is_shared(path) {
            Cow::Owned(handler.clone())
        } else {
            Cow::Borrowed(path)
        };
        let scope: Cow<'static, str> = match scope {
            Some(scope) => Cow::Borrowed(scope),
            None if position == 0 => own,
            None => Cow::Owned(format!("{own}#{}", position + 1)),
        };
        LimitSpec {
            limit: Limit::new(scope, policy),
            name: fields::field_name(Cow::Borrowed(name)),
            key,
            handler,
            options: Options::default(),
            counters: Default::default(),
        }
    }

    /// Requests for which `exempt` says so are not counted, and carry no RateLimit fields
    /// (`exempt = path`).
    pub fn exempt_when(mut self, exempt: fn(&HttpRequest) -> bool) -> LimitSpec {
        self.options.exempt = Some(exempt);
        self
    }

    /// Each request takes `units` (`cost = N`, at least 1).
    pub fn cost(mut self, units: u32) -> LimitSpec {
        self.options.cost = Cost::Units(units);
        self
    }

    /// Each request takes what `compute` says (`cost = path`, at least 1).
    pub fn cost_of(mut self, compute: fn(&HttpRequest) -> u32) -> LimitSpec {
        self.options.cost = Cost::Computed(compute);
        self
    }

    /// Only requests whose response fails (status 400 or above) are counted: an admitted
    /// request is counted, then taken back when its response is a success
    /// (`count = "failures"`).
    pub fn failures_only(mut self) -> LimitSpec {
        self.options.counts = Some(super::pipeline::settle::Counts::Failures);
        self
    }

    /// Only requests whose response `counts` says so are counted: an admitted request is
    /// counted, then taken back when `counts(status)` is `false` (`count = path`).
    pub fn count_when(mut self, counts: fn(actix_web::http::StatusCode) -> bool) -> LimitSpec {
        self.options.counts = Some(super::pipeline::settle::Counts::When(counts));
        self
    }

    /// Decided and counted, but never enforced: a would-be rejection passes, with a `warn`
    /// event (`dry_run = true`).
    pub fn dry_run(mut self) -> LimitSpec {
        self.options.enforce = Share::NONE;
        self
    }

    /// Enforced on `share` of the clients, each consistently in or out; the others'
    /// would-be rejections pass as in a dry run (`enforce = "10%"`).
    pub fn enforce(mut self, share: Share) -> LimitSpec {
        self.options.enforce = share;
        self
    }

    /// The policy for each request: `choose` says, or `None` for the declared one
    /// (`policy = path`).
    pub fn choose_policy(self, choose: fn(&HttpRequest) -> Option<Policy>) -> LimitSpec {
        self.resolve_policy(Resolver::new(choose))
    }

    /// The policy for each request, as [`choose_policy`](Self::choose_policy), from a
    /// resolver that may be `async` (awaited within the limiter's
    /// [`resolver_timeout`](crate::LimiterBuilder::resolver_timeout); late or `None`: the
    /// declared policy).
    pub fn resolve_policy(mut self, resolve: Resolver<Policy>) -> LimitSpec {
        self.options.policy = Some(resolve);
        self
    }

    /// A rejection's wait lengthened by a random part of `jitter` (`jitter = "1s"`), so
    /// that clients refused together come back apart. At most an hour.
    pub fn jitter(mut self, jitter: Duration) -> LimitSpec {
        self.options.jitter_ms = jitter_ms(jitter);
        self
    }

    /// The limit of a [`RateLimit`](super::RateLimit) middleware: named after its scope.
    pub(crate) fn for_middleware(
        scope: Cow<'static, str>,
        policy: Policy,
        key: KeySpec,
    ) -> LimitSpec {
        LimitSpec {
            name: fields::field_name(scope.clone()),
            handler: format!("RateLimit middleware \"{scope}\""),
            limit: Limit::new(scope, policy),
            key,
            options: Options::default(),
            counters: Default::default(),
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
/// use limiter::__private::handler_path;
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

/// The limits chosen per request kept per handler, at most.
const MOST_TIERS: usize = 256;

/// The limits of one handler, in the order they are checked, and their fixed
/// `RateLimit-Policy` value.
#[derive(Debug)]
pub struct HandlerLimits {
    pub(crate) limits: Vec<LimitSpec>,
    pub(crate) policy: HeaderValue,
    pub(crate) prefixes: Vec<Box<str>>,
    /// Whether every limit counts one unit per request as declared: the lean path is open.
    pub(crate) plain: bool,
    /// The limits chosen per request by `policy` functions (a plan's, a tenant's), made once
    /// each: building a limit hashes its name.
    tiers: parking_lot::Mutex<Vec<Arc<Limit>>>,
    /// Its concurrency limits (`#[concurrency_limit]`), checked before the others.
    pub(crate) in_flight: Vec<super::in_flight::InFlightSpec>,
    /// Whether a middleware checks them around a service, which a CORS layer inside it may
    /// answer without a handler; a handler's limits are checked only where the handler runs.
    pub(crate) around_service: bool,
}

impl HandlerLimits {
    /// The limits of a handler, first checked first.
    pub fn new(limits: Vec<LimitSpec>) -> HandlerLimits {
        let mut policy = String::new();
        for spec in &limits {
            let p = spec.limit.policy();
            fields::policy_member(&mut policy, &spec.name, p.max().get(), p.window_ms());
        }
        HandlerLimits {
            // Names are made of what a header carries, so this cannot fail; if it did, the
            // field would be left empty rather than the handler broken.
            policy: HeaderValue::from_str(&policy).unwrap_or(HeaderValue::from_static("")),
            prefixes: limits
                .iter()
                .map(|s| fields::member_prefix(&s.name))
                .collect(),
            // A bucket with a delay may make a request wait: the full path.
            plain: limits.iter().all(|s| {
                s.options.is_plain() && s.limit.policy().delay().is_none() && !s.key.is_async()
            }),
            tiers: parking_lot::Mutex::new(Vec::new()),
            in_flight: Vec::new(),
            around_service: false,
            limits,
        }
    }

    /// The limits of a middleware, checked around the service it wraps.
    pub(crate) fn around_service(mut self) -> HandlerLimits {
        self.around_service = true;
        self
    }

    /// The limit of `declared`'s scope under `policy`, chosen for one request: made once,
    /// and remembered by the limiter so that a reset of the scope finds its budget. At most
    /// [`MOST_TIERS`] are kept per handler: a `policy` function that chooses from more
    /// (a number read from the request, say) gets its limits made per request instead.
    pub(crate) fn tier(&self, limiter: &Limiter, declared: &Limit, policy: Policy) -> Arc<Limit> {
        let mut tiers = self.tiers.lock();
        if let Some(tier) = tiers
            .iter()
            .find(|t| t.scope() == declared.scope() && *t.policy() == policy)
        {
            return Arc::clone(tier);
        }
        let tier = Arc::new(Limit::new(declared.scope().to_string(), policy));
        limiter.remember(&tier);
        if tiers.len() < MOST_TIERS {
            tiers.push(Arc::clone(&tier));
        }
        tier
    }

    /// The limits, in order.
    pub fn limits(&self) -> &[LimitSpec] {
        &self.limits
    }

    /// Its limits as declared, as the fields name them.
    #[inline]
    pub(crate) fn declared(&self) -> fields::Declared<'_, HeaderValue> {
        fields::Declared {
            policy: &self.policy,
            prefixes: &self.prefixes,
        }
    }

    /// The list members of its limits as declared, in order.
    pub(crate) fn members(&self) -> Vec<Member> {
        self.limits
            .iter()
            .map(|spec| Member {
                name: spec.name.clone(),
                policy: *spec.limit.policy(),
            })
            .collect()
    }
}

impl limiter_core::__private::Declares for HandlerLimits {
    fn owner(&self) -> &str {
        match (self.limits.first(), self.in_flight.first()) {
            (Some(spec), _) => spec.handler(),
            (None, Some(spec)) => spec.handler(),
            (None, None) => "",
        }
    }

    fn in_flight(&self) -> Vec<(&limiter_core::Concurrency, String)> {
        self.in_flight
            .iter()
            .map(|spec| (spec.limit(), spec.key().kind().into_owned()))
            .collect()
    }

    fn limits(&self) -> Vec<&Limit> {
        self.limits.iter().map(|spec| &spec.limit).collect()
    }

    fn details(&self) -> Vec<(String, Vec<String>)> {
        self.limits
            .iter()
            .map(|spec| (spec.key.kind().into_owned(), spec.options.described()))
            .collect()
    }

    fn refunded_scopes(&self) -> Vec<&str> {
        self.limits
            .iter()
            .filter(|spec| spec.options.counts.is_some())
            .map(|spec| spec.limit.scope())
            .collect()
    }
}

impl Options {
    /// The options in words, as the route table shows them.
    fn described(&self) -> Vec<String> {
        let mut words = Vec::new();
        match self.cost {
            Cost::Units(1) => {}
            Cost::Units(units) => words.push(format!("cost={units}")),
            Cost::Computed(_) => words.push("cost=fn".to_string()),
        }
        match self.counts {
            None | Some(super::pipeline::settle::Counts::Always) => {}
            Some(super::pipeline::settle::Counts::Failures) => {
                words.push("count=failures".to_string())
            }
            Some(super::pipeline::settle::Counts::When(_)) => words.push("count=fn".to_string()),
        }
        if self.exempt.is_some() {
            words.push("exempt=fn".to_string());
        }
        match self.enforce {
            Share::ALL => {}
            Share::NONE => words.push("dry_run".to_string()),
            share => words.push(format!("enforce={share}")),
        }
        match &self.policy {
            None => {}
            Some(policy) if policy.is_async() => words.push("policy=async-fn".to_string()),
            Some(_) => words.push("policy=fn".to_string()),
        }
        if self.jitter_ms > 0 {
            words.push(format!("jitter={}ms", self.jitter_ms));
        }
        words
    }
}
