//! The first stage: what a request is counted against. For each limit of its set, the
//! limit as it applies (declared, overridden by configuration, or chosen by a `policy`
//! function), its key, its cost, whether it is enforced on this client or on trial, and
//! which responses keep it counted; limits that exempt the request are left out.

use std::borrow::Cow;
use std::sync::Arc;

use limiter_core::{Charge, Limit};

use super::each::Each;
use super::settle::{gives_back_preflight, Owned};
use super::Respond;
use crate::counts::Counts;
use crate::limits::{HandlerLimits, LimitSpec};
use crate::observe::Outcome;
use crate::{ClientKey, Limiter, Member, Share};

/// A limit as it applies to one request: as declared, or overridden by configuration, or
/// chosen for it.
#[derive(Clone, Debug)]
pub(super) enum LimitRef<'a> {
    Declared(&'a Limit),
    Shared(Arc<Limit>),
}

impl std::ops::Deref for LimitRef<'_> {
    type Target = Limit;

    fn deref(&self) -> &Limit {
        match self {
            LimitRef::Declared(limit) => limit,
            LimitRef::Shared(limit) => limit,
        }
    }
}

/// Where a planned limit comes from.
pub(super) enum Source<'s, F: Respond> {
    /// A limit a handler or a middleware declares.
    Declared(&'s LimitSpec<F>),
    /// A limit checked inside a handler, under its field name.
    Checked(Cow<'static, str>),
}

/// One limit to check for a request.
pub(super) struct Planned<'s, F: Respond> {
    pub(super) source: Source<'s, F>,
    pub(super) limit: LimitRef<'s>,
    pub(super) key: ClientKey,
    pub(super) cost: u32,
    /// On trial: decided and counted, never enforced.
    pub(super) dry_run: bool,
    /// Which responses keep the request counted, where some may not.
    pub(super) counts: Option<Counts<F>>,
}

impl<F: Respond> Planned<'_, F> {
    pub(super) fn charge(&self) -> Charge<'_> {
        Charge::new(&self.limit, self.key.as_bytes()).cost(self.cost)
    }

    /// Its charge, owned, to take back once the response is known.
    pub(super) fn owned(&self) -> Owned {
        let limit = match &self.limit {
            LimitRef::Declared(limit) => Arc::new(Limit::clone(limit)),
            LimitRef::Shared(limit) => Arc::clone(limit),
        };
        (limit, self.key.clone(), self.cost)
    }

    /// Its name in the header fields.
    pub(super) fn name(&self) -> &Cow<'static, str> {
        match &self.source {
            Source::Declared(spec) => &spec.name,
            Source::Checked(name) => name,
        }
    }

    pub(super) fn member(&self) -> Member {
        Member {
            name: self.name().clone(),
            policy: *self.limit.policy(),
        }
    }

    /// What kind of key it is, for logs.
    pub(super) fn kind(&self) -> Cow<'static, str> {
        match &self.source {
            Source::Declared(spec) => spec.key.kind(),
            Source::Checked(_) => Cow::Borrowed("checked"),
        }
    }

    pub(super) fn jitter_ms(&self) -> u32 {
        match &self.source {
            Source::Declared(spec) => spec.options.jitter_ms,
            Source::Checked(_) => 0,
        }
    }

    /// Counts what became of the request for this limit (feature `metrics`).
    pub(super) fn counted(&self, outcome: Outcome) {
        match &self.source {
            Source::Declared(spec) => spec.counters.add(self.limit.scope(), outcome),
            Source::Checked(_) => crate::observe::count(self.limit.scope(), outcome),
        }
    }

    /// Whether the request costs more than the limit ever allows at once.
    pub(super) fn never_admitted(&self) -> bool {
        self.cost > self.limit.policy().capacity()
    }

    /// Whether what its check counted is needed past the decision: to take back, or to
    /// give a waiting place back.
    pub(super) fn needs_receipt(&self) -> bool {
        self.counts.is_some() || self.limit.policy().delay().is_some()
    }
}

/// A request's limits, planned.
pub(super) struct Plan<'s, F: Respond> {
    items: Each<Planned<'s, F>>,
    /// Every limit of the set, in order, as declared: the fields need not name them.
    pub(super) as_declared: bool,
    /// The common request's plan ([`plan_now`]): one plain limit as declared, which a
    /// store may answer from the rejections it remembers.
    pub(super) lean: bool,
}

impl<'s, F: Respond> Plan<'s, F> {
    fn one(planned: Planned<'s, F>, as_declared: bool, lean: bool) -> Plan<'s, F> {
        Plan {
            items: Each::One(planned),
            as_declared,
            lean,
        }
    }

    pub(super) fn items(&self) -> &[Planned<'s, F>] {
        self.items.as_slice()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.items().is_empty()
    }
}

/// The plan of `req` against `limits`.
pub(super) async fn plan<'s, F: Respond>(
    limiter: &Limiter<F>,
    req: &F::Request,
    limits: &'s HandlerLimits<F>,
) -> Result<Plan<'s, F>, F::Response> {
    if let Some(lean) = plan_now(limiter, req, limits) {
        return lean;
    }
    let preflight = gives_back_preflight(limiter, req, limits);
    let mut items = Vec::with_capacity(limits.limits.len());
    let exempt = is_exempt(limiter, req);
    for spec in &limits.limits {
        if exempt || spec.options.exempt.is_some_and(|exempt| exempt(req)) {
            spec.counters.add(spec.limit.scope(), Outcome::Exempt);
            continue;
        }
        let key = spec
            .key
            .key_for(req, limiter.http())
            .await
            .map_err(|error| super::respond::key_failure(limiter, limits, &error))?;
        items.push(Planned {
            source: Source::Declared(spec),
            limit: limit_for(limiter, limits, spec, req).await,
            dry_run: !enforces_in(limiter, spec.limit.scope(), spec.options.enforce, &key),
            key,
            cost: spec.options.cost.of(req),
            // A preflight a CORS layer may answer is counted, and given back if it does.
            counts: spec.options.counts.or(preflight.then_some(Counts::Always)),
        });
    }
    let as_declared = items.len() == limits.limits.len()
        && items
            .iter()
            .all(|p| matches!(p.limit, LimitRef::Declared(_)));
    Ok(Plan {
        items: Each::Many(items),
        as_declared,
        lean: false,
    })
}

/// The plan of the common request, made without a future: one limit, as declared — no
/// exemption, no cost, no policy function, no override, no dry run, no preflight to give
/// back. `None` when it does not apply.
#[inline]
// By value: boxing the response would cost every rejected request an allocation.
#[allow(clippy::result_large_err)]
pub(super) fn plan_now<'s, F: Respond>(
    limiter: &Limiter<F>,
    req: &F::Request,
    limits: &'s HandlerLimits<F>,
) -> Option<Result<Plan<'s, F>, F::Response>> {
    let [spec] = limits.limits.as_slice() else {
        return None;
    };
    let http = limiter.http();
    let lean = limits.plain
        && http.plain()
        && http.enforcement.of(spec.limit.scope()).is_none()
        && limiter.overridden(&spec.limit).is_none()
        && !gives_back_preflight(limiter, req, limits);
    if !lean {
        return None;
    }
    let key = match spec.key.key_of(req, limiter.http()) {
        Ok(key) => key,
        Err(error) => return Some(Err(super::respond::key_failure(limiter, limits, &error))),
    };
    let planned = Planned {
        source: Source::Declared(spec),
        limit: LimitRef::Declared(&spec.limit),
        key,
        cost: 1,
        dry_run: false,
        counts: None,
    };
    Some(Ok(Plan::one(planned, true, true)))
}

/// The plan of a limit checked inside a handler for `key` (a value the handler read from
/// the request): its key in a namespace of its own, its policy as configuration overrides
/// it, on trial where the limiter enforces nothing.
pub(super) fn inline<'s, F: Respond>(
    limiter: &Limiter<F>,
    declared: &'s Limit,
    key: &str,
    failures_only: bool,
) -> Plan<'s, F> {
    let limit = match limiter.overridden(declared) {
        Some(limit) => LimitRef::Shared(limit),
        None => LimitRef::Declared(declared),
    };
    // So that `Limiter::reset` finds this budget: a limit checked inline is declared nowhere.
    limiter.remember(&limit);
    let key = ClientKey::checked(key.as_bytes());
    let name = Cow::Owned(limit.scope().to_string());
    let planned = Planned {
        dry_run: !enforces_in(limiter, limit.scope(), Share::ALL, &key),
        source: Source::Checked(crate::field_name(name)),
        limit,
        key,
        cost: 1,
        counts: failures_only.then_some(Counts::Failures),
    };
    Plan::one(planned, false, false)
}

/// Whether a limit of `scope` declared enforced on `declared` of the clients is enforced
/// on the client `key` names: not in a dry run, and within the share configuration (else
/// the declaration) sets for the scope. A limit checked inside a handler is declared on
/// all.
pub fn enforces_in<F: Respond>(
    limiter: &Limiter<F>,
    scope: &str,
    declared: Share,
    key: &ClientKey,
) -> bool {
    let http = limiter.http();
    if http.dry_run {
        return false;
    }
    let share = http.enforcement.of(scope).unwrap_or(declared);
    share.includes(scope, key.as_bytes())
}

/// Whether the limiter exempts `req`: its client address, or its own rule.
pub fn is_exempt<F: Respond>(limiter: &Limiter<F>, req: &F::Request) -> bool {
    let http = limiter.http();
    if http.exempt_when.as_ref().is_some_and(|exempt| exempt(req)) {
        return true;
    }
    if http.exempt.is_empty() {
        return false;
    }
    matches!(
        crate::client(&F::head(req), &limiter.http().clients),
        Ok(crate::Client::Address(ip)) if http.exempt.contains(ip)
    )
}

/// The limit `spec` applies to `req`: the policy its `policy` function chooses, else the
/// one configuration sets for its scope, else the declared one.
async fn limit_for<'s, F: Respond>(
    limiter: &Limiter<F>,
    limits: &'s HandlerLimits<F>,
    spec: &'s LimitSpec<F>,
    req: &F::Request,
) -> LimitRef<'s> {
    let chosen = match &spec.options.policy {
        Some(choose) => {
            let timeout = limiter.http().resolver_timeout;
            crate::resolve::within(choose, req, timeout, "policy").await
        }
        None => None,
    };
    if let Some(policy) = chosen {
        let declared = spec.limit.policy();
        // As with configuration: a policy that names no algorithm keeps the declared
        // one, and one without a penalty the declared penalty.
        let policy = policy.over(declared).unwrap_or(policy);
        if policy != *declared {
            return LimitRef::Shared(limits.tier(limiter, &spec.limit, policy));
        }
    }
    match limiter.overridden(&spec.limit) {
        Some(limit) => LimitRef::Shared(limit),
        None => LimitRef::Declared(&spec.limit),
    }
}
