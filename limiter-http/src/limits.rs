//! A handler's limits as the attribute declares them: each limit's spec (scope, policy,
//! key, name in the header fields, options), and the set checked together, with its fixed
//! `RateLimit-Policy` value.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use limiter_core::{Limit, Policy};

use crate::counts::Counts;
use crate::fields::{self, Member};
use crate::handler_path::handler_path;
use crate::{FieldMap, Front, KeySpec, Limiter, Resolver, Share};

/// A header value of the front end `F`'s responses.
type Value<F> = <<F as Front>::Map as FieldMap>::Value;

/// One `#[rate_limit(...)]`: the limit, the name its header fields use, and its key.
#[doc(hidden)]
#[derive(Debug)]
pub struct LimitSpec<F: Front> {
    pub(crate) limit: Limit,
    pub(crate) name: Cow<'static, str>,
    pub(crate) key: KeySpec<F>,
    handler: String,
    pub(crate) options: Options<F>,
    /// Its decision counters (feature `metrics`; nothing without it).
    pub(crate) counters: crate::observe::Counters,
}

/// What a limit does besides counting one unit per request: the attribute's `exempt`,
/// `cost`, `count`, `dry_run`, `enforce` and `policy`.
pub(crate) struct Options<F: Front> {
    pub(crate) exempt: Option<fn(&F::Request) -> bool>,
    pub(crate) cost: Cost<F>,
    /// Which responses keep the request counted (`count = "failures"`, `count = fn`);
    /// `None`: all of them.
    pub(crate) counts: Option<Counts<F>>,
    /// The share of clients it is enforced on ([`Share::NONE`]: a dry run).
    pub(crate) enforce: Share,
    pub(crate) policy: Option<Resolver<F, Policy>>,
    /// Up to this many ms added to a rejection's wait, drawn per response (`jitter`).
    pub(crate) jitter_ms: u32,
}

impl<F: Front> std::fmt::Debug for Options<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.described()).finish()
    }
}

impl<F: Front> Default for Options<F> {
    fn default() -> Options<F> {
        Options {
            exempt: None,
            cost: Cost::Units(1),
            counts: None,
            enforce: Share::ALL,
            policy: None,
            jitter_ms: 0,
        }
    }
}

/// The longest jitter: an hour.
const MAX_JITTER_MS: u32 = 3_600_000;

/// A jitter in whole ms, at most an hour.
#[doc(hidden)]
pub fn jitter_ms(jitter: Duration) -> u32 {
    jitter.as_millis().min(u128::from(MAX_JITTER_MS)) as u32
}

/// The units a request takes.
pub(crate) enum Cost<F: Front> {
    Units(u32),
    Computed(fn(&F::Request) -> u32),
}

impl<F: Front> Clone for Cost<F> {
    fn clone(&self) -> Cost<F> {
        *self
    }
}

impl<F: Front> Copy for Cost<F> {}

impl<F: Front> Options<F> {
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

impl<F: Front> Cost<F> {
    /// The units `req` takes: at least 1.
    pub(crate) fn of(&self, req: &F::Request) -> u32 {
        match self {
            Cost::Units(units) => (*units).max(1),
            Cost::Computed(compute) => compute(req).max(1),
        }
    }
}

impl<F: Front> LimitSpec<F> {
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
        key: KeySpec<F>,
    ) -> LimitSpec<F> {
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
    pub fn exempt_when(mut self, exempt: fn(&F::Request) -> bool) -> LimitSpec<F> {
        self.options.exempt = Some(exempt);
        self
    }

    /// Each request takes `units` (`cost = N`, at least 1).
    pub fn cost(mut self, units: u32) -> LimitSpec<F> {
        self.options.cost = Cost::Units(units);
        self
    }

    /// Each request takes what `compute` says (`cost = path`, at least 1).
    pub fn cost_of(mut self, compute: fn(&F::Request) -> u32) -> LimitSpec<F> {
        self.options.cost = Cost::Computed(compute);
        self
    }

    /// Only requests whose response fails (status 400 or above) are counted: an admitted
    /// request is counted, then taken back when its response is a success
    /// (`count = "failures"`).
    pub fn failures_only(mut self) -> LimitSpec<F> {
        self.options.counts = Some(Counts::Failures);
        self
    }

    /// Only requests whose response `counts` says so are counted: an admitted request is
    /// counted, then taken back when `counts(status)` is `false` (`count = path`).
    pub fn count_when(mut self, counts: fn(F::Status) -> bool) -> LimitSpec<F> {
        self.options.counts = Some(Counts::When(counts));
        self
    }

    /// Decided and counted, but never enforced: a would-be rejection passes, with a `warn`
    /// event (`dry_run = true`).
    pub fn dry_run(mut self) -> LimitSpec<F> {
        self.options.enforce = Share::NONE;
        self
    }

    /// Enforced on `share` of the clients, each consistently in or out; the others'
    /// would-be rejections pass as in a dry run (`enforce = "10%"`).
    pub fn enforce(mut self, share: Share) -> LimitSpec<F> {
        self.options.enforce = share;
        self
    }

    /// The policy for each request: `choose` says, or `None` for the declared one
    /// (`policy = path`).
    pub fn choose_policy(self, choose: fn(&F::Request) -> Option<Policy>) -> LimitSpec<F> {
        self.resolve_policy(Resolver::new(choose))
    }

    /// The policy for each request, as [`choose_policy`](Self::choose_policy), from a
    /// resolver that may be `async` (awaited within the limiter's
    /// [`resolver_timeout`](crate::LimiterBuilder::resolver_timeout); late or `None`: the
    /// declared policy).
    pub fn resolve_policy(mut self, resolve: Resolver<F, Policy>) -> LimitSpec<F> {
        self.options.policy = Some(resolve);
        self
    }

    /// A rejection's wait lengthened by a random part of `jitter` (`jitter = "1s"`), so
    /// that clients refused together come back apart. At most an hour.
    pub fn jitter(mut self, jitter: Duration) -> LimitSpec<F> {
        self.options.jitter_ms = jitter_ms(jitter);
        self
    }

    /// The limit of a middleware (actix's `RateLimit`, the tower layer): named after its
    /// scope.
    #[doc(hidden)]
    pub fn for_middleware(
        scope: Cow<'static, str>,
        policy: Policy,
        key: KeySpec<F>,
    ) -> LimitSpec<F> {
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

/// The limits chosen per request kept per handler, at most.
const MOST_TIERS: usize = 256;

/// The limits of one handler, in the order they are checked, and their fixed
/// `RateLimit-Policy` value.
#[doc(hidden)]
#[derive(Debug)]
pub struct HandlerLimits<F: Front> {
    pub(crate) limits: Vec<LimitSpec<F>>,
    /// Its `RateLimit-Policy` value.
    #[doc(hidden)]
    pub policy: Value<F>,
    /// Each limit's `RateLimit` member up to its numbers.
    #[doc(hidden)]
    pub prefixes: Vec<Box<str>>,
    /// Whether every limit counts one unit per request as declared: the lean path is open.
    pub(crate) plain: bool,
    /// The limits chosen per request by `policy` functions (a plan's, a tenant's), made once
    /// each: building a limit hashes its name.
    tiers: parking_lot::Mutex<Vec<Arc<Limit>>>,
    /// Its concurrency limits (`#[concurrency_limit]`), checked before the others.
    #[doc(hidden)]
    pub in_flight: Vec<crate::InFlightSpec<F>>,
    /// Whether a middleware checks them around a service, which a CORS layer inside it may
    /// answer without a handler; a handler's limits are checked only where the handler runs.
    pub(crate) around_service: bool,
}

impl<F: Front> HandlerLimits<F> {
    /// The limits of a handler, first checked first.
    pub fn new(limits: Vec<LimitSpec<F>>) -> HandlerLimits<F> {
        let mut policy = String::new();
        for spec in &limits {
            let p = spec.limit.policy();
            fields::policy_member(&mut policy, &spec.name, p.max().get(), p.window_ms());
        }
        HandlerLimits {
            // Names are made of what a header carries, so this cannot fail; if it did, the
            // field would be left empty rather than the handler broken.
            policy: F::Map::value(policy.into())
                .unwrap_or_else(|| <F::Map as FieldMap>::value_static("")),
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

    /// Whether deciding a request awaits an `async` key or policy function (of a rate or a
    /// concurrency limit): its answers are then kept in the request, where a front end
    /// must make room for them.
    #[doc(hidden)]
    pub fn awaits(&self) -> bool {
        let rates = self
            .limits
            .iter()
            .any(|s| s.key.is_async() || s.options.policy.as_ref().is_some_and(Resolver::is_async));
        rates || self.in_flight.iter().any(|s| s.key.is_async())
    }

    /// The limits of a middleware, checked around the service it wraps.
    #[doc(hidden)]
    pub fn around_service(mut self) -> HandlerLimits<F> {
        self.around_service = true;
        self
    }

    /// The limit of `declared`'s scope under `policy`, chosen for one request: made once,
    /// and remembered by the limiter so that a reset of the scope finds its budget. At most
    /// [`MOST_TIERS`] are kept per handler: a `policy` function that chooses from more
    /// (a number read from the request, say) gets its limits made per request instead.
    pub(crate) fn tier(
        &self,
        limiter: &Limiter<F>,
        declared: &Limit,
        policy: Policy,
    ) -> Arc<Limit> {
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
    pub fn limits(&self) -> &[LimitSpec<F>] {
        &self.limits
    }

    /// Its limits as declared, as the fields name them.
    #[inline]
    #[doc(hidden)]
    pub fn declared(&self) -> fields::Declared<'_, Value<F>> {
        fields::Declared {
            policy: &self.policy,
            prefixes: &self.prefixes,
        }
    }

    /// The list members of its limits as declared, in order.
    #[doc(hidden)]
    pub fn members(&self) -> Vec<Member> {
        self.limits
            .iter()
            .map(|spec| Member {
                name: spec.name.clone(),
                policy: *spec.limit.policy(),
            })
            .collect()
    }
}

impl<F: Front> limiter_core::__private::Declares for HandlerLimits<F> {
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

impl<F: Front> Options<F> {
    /// The options in words, as the route table shows them.
    fn described(&self) -> Vec<String> {
        let mut words = Vec::new();
        match self.cost {
            Cost::Units(1) => {}
            Cost::Units(units) => words.push(format!("cost={units}")),
            Cost::Computed(_) => words.push("cost=fn".to_string()),
        }
        match self.counts {
            None | Some(Counts::Always) => {}
            Some(Counts::Failures) => words.push("count=failures".to_string()),
            Some(Counts::When(_)) => words.push("count=fn".to_string()),
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

impl<F: Front> HandlerLimits<F> {
    /// The same limits, with concurrency limits checked before them (`#[concurrency_limit]`).
    pub fn in_flight(mut self, specs: Vec<crate::InFlightSpec<F>>) -> HandlerLimits<F> {
        self.in_flight = specs;
        self
    }
}
