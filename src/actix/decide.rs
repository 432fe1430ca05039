//! The one decide path of the glue, shared by `#[rate_limit]` and the [`RateLimit`]
//! middleware: the limiter a request is counted by, the keys of its limits, one check of
//! them all, and the header fields or the response that come of it.
//!
//! [`RateLimit`]: super::RateLimit

use actix_web::{HttpRequest, HttpResponse};

use std::sync::Arc;
use std::time::Duration;

use super::fields::{Member, RateLimitFields};
use super::keys::ClientKey;
use super::limits::{HandlerLimits, LimitSpec};
use super::observe::Outcome;
use super::problem::Failure;
use super::refund::{Counts, Owned, Refund};
use crate::{Charge, Decision, Limit, Limiter, Share, Verdict};

/// What deciding a request came to, when it may go on.
pub(crate) struct Decided {
    /// The fields its response carries.
    pub(crate) fields: RateLimitFields,
    /// What to take back if its response is a success (`count = "failures"`).
    pub(crate) refund: Option<Refund>,
}

impl Decided {
    /// Exempt: nothing counted, no fields.
    pub(super) fn none() -> Decided {
        Decided {
            fields: RateLimitFields::none(),
            refund: None,
        }
    }

    /// The store failed open: nothing counted, no fields.
    pub(super) fn undecided() -> Decided {
        Decided {
            fields: RateLimitFields::undecided(),
            refund: None,
        }
    }
}

/// A limit as it applies to one request: as declared, overridden by configuration, or
/// chosen for it.
#[derive(Clone, Debug)]
pub(crate) enum LimitRef<'a> {
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

/// One limit to check for a request.
struct Planned<'s> {
    spec: &'s LimitSpec,
    limit: LimitRef<'s>,
    key: ClientKey,
    cost: u32,
    dry_run: bool,
}

impl Planned<'_> {
    fn charge(&self) -> Charge<'_> {
        Charge::new(&self.limit, self.key.as_bytes()).cost(self.cost)
    }

    /// Its charge, owned, to take back once the response is known.
    fn owned(&self) -> Owned {
        let limit = match &self.limit {
            LimitRef::Declared(limit) => Arc::new(Limit::clone(limit)),
            LimitRef::Shared(limit) => Arc::clone(limit),
        };
        (limit, self.key.clone(), self.cost)
    }

    fn member(&self) -> Member {
        Member {
            name: self.spec.name.clone(),
            policy: *self.limit.policy(),
        }
    }

    /// Counts what became of the request for this limit (feature `metrics`).
    fn counted(&self, outcome: Outcome) {
        self.spec.counters.add(self.limit.scope(), outcome);
    }

    /// Which responses keep the request counted, where some may not: the limit's `count`
    /// rule, and for a preflight a CORS layer may answer, every response but that answer.
    fn counts(&self, preflight: bool) -> Option<Counts> {
        self.spec
            .options
            .counts
            .or(preflight.then_some(Counts::Always))
    }

    /// Whether the request costs more than the limit ever allows at once.
    fn never_admitted(&self) -> bool {
        self.cost > self.limit.policy().capacity()
    }
}

impl Limiter {
    /// Decides `req` against every limit of a set (a handler's, or a middleware's), all or
    /// nothing: the header fields (and what to take back later) for an admitted request,
    /// or the response for one that is not.
    pub(crate) async fn decide(
        &self,
        req: &HttpRequest,
        limits: &HandlerLimits,
    ) -> Result<Decided, HttpResponse> {
        // A preflight a CORS layer may answer is counted, and given back if it does.
        let preflight = self.gives_back_preflight(req, limits);
        if let Some(spec) = self.lean(limits).filter(|_| !preflight) {
            return self.decide_one(req, limits, spec).await;
        }
        if self.is_exempt(req) {
            for spec in &limits.limits {
                spec.counters.add(spec.limit.scope(), Outcome::Exempt);
            }
            return Ok(Decided::none());
        }
        let mut planned = Vec::with_capacity(limits.limits.len());
        for spec in &limits.limits {
            if spec.options.exempt.is_some_and(|exempt| exempt(req)) {
                spec.counters.add(spec.limit.scope(), Outcome::Exempt);
                continue;
            }
            let key = spec
                .key
                .key_for(req, self)
                .await
                .map_err(|error| self.key_failure(limits, &error))?;
            planned.push(Planned {
                spec,
                limit: self.limit_for(limits, spec, req).await,
                dry_run: !self.enforces(spec, &key),
                key,
                cost: spec.options.cost.of(req),
            });
        }
        if planned.is_empty() {
            return Ok(Decided::none());
        }
        let mut refunds = Vec::new();
        let mut let_through = Vec::new();
        // Enforced limits first, all or nothing.
        let enforced: Vec<&Planned<'_>> = planned.iter().filter(|p| !p.dry_run).collect();
        let mut decisions: Vec<Option<Decision>> = vec![None; planned.len()];
        if let Some(never) = enforced.iter().find(|p| p.never_admitted()) {
            never.counted(Outcome::Rejected);
            self.rejected_event(never, None);
            let capacity = never.limit.policy().capacity();
            let max = never.limit.policy().max().get();
            return Err(self.never_admitted(
                limits,
                &never.spec.name,
                never.member(),
                (never.cost, capacity, max),
            ));
        }
        if !enforced.is_empty() {
            let charges: Vec<Charge<'_>> = enforced.iter().map(|p| p.charge()).collect();
            let mut check = self.check_all(&charges);
            let result = match check.take_ready() {
                Some(result) => result,
                None => check.await,
            };
            // What the enforced limits' check counted, for a request that waits its turn.
            let counted: crate::Receipt;
            match self.verdict(result) {
                Verdict::Decided(checked) => {
                    let (answers, receipt) = checked.into_parts();
                    let mut answers = answers.into_iter();
                    for (slot, p) in decisions.iter_mut().zip(&planned) {
                        if !p.dry_run {
                            *slot = answers
                                .next()
                                .map(|d| super::jitter::jittered(d, p.spec.options.jitter_ms));
                        }
                    }
                    counted = receipt.clone();
                    // Each limit that counts only some responses, with its own rule.
                    for (i, p) in enforced.iter().enumerate() {
                        if let Some(counts) = p.counts(preflight) {
                            let receipt = receipt.subset(vec![i]);
                            if receipt.counted_anything() {
                                refunds.push((vec![p.owned()], receipt, counts));
                            }
                        }
                    }
                }
                // Unlimited meanwhile; the RateLimit fields are left out.
                Verdict::Unlimited => {
                    enforced.iter().for_each(|p| p.counted(Outcome::StoreError));
                    return Ok(Decided::undecided());
                }
                Verdict::Unavailable => {
                    enforced.iter().for_each(|p| p.counted(Outcome::StoreError));
                    return Err(self.failure(Some(limits), Failure::StoreUnavailable));
                }
            }
            let rejected = planned
                .iter()
                .zip(&decisions)
                .filter_map(|(p, d)| d.filter(|d| !d.allowed()).map(|d| (p, d)))
                .max_by_key(|(_, d)| d.retry_after());
            // Admitted ahead of its tokens (a bucket's `delay`): it waits its turn — or, the
            // queue full, is refused, its place given back.
            let delayed = decisions
                .iter()
                .flatten()
                .filter_map(Decision::delayed)
                .max();
            if let (None, Some(delay)) = (&rejected, delayed) {
                let charges = enforced.iter().map(|p| p.owned()).collect();
                if !self.wait_turn(delay, charges, counted).await {
                    let (p, refused, fields) = refused_for_the_queue(&planned, &decisions, delay);
                    p.counted(Outcome::Rejected);
                    self.rejected_event(p, Some(refused));
                    return Err(self.rejection(Some(limits), Some(&fields), &p.spec.name, refused));
                }
                // Its wait is over: the fields say where the limits stand now.
                for (d, p) in decisions.iter_mut().zip(&planned) {
                    *d = d.map(|d| match d.delayed() {
                        Some(_) => super::delay::after_the_wait(d, p.limit.policy()),
                        None if d.allowed() => Decision::allow(
                            d.limit(),
                            d.remaining(),
                            d.reset_after().saturating_sub(delay),
                        ),
                        None => d,
                    });
                }
            }
            if let Some((p, decision)) = rejected {
                for (p, d) in planned.iter().zip(&decisions) {
                    if let Some(d) = d.filter(|d| !d.allowed()) {
                        p.counted(Outcome::of(&d));
                    }
                }
                self.rejected_event(p, Some(decision));
                let (members, answers): (Vec<Member>, Vec<Decision>) = planned
                    .iter()
                    .zip(&decisions)
                    .filter_map(|(p, d)| d.map(|d| (p.member(), d)))
                    .unzip();
                let fields = RateLimitFields::of_members(answers, members);
                return Err(self.rejection(Some(limits), Some(&fields), &p.spec.name, decision));
            }
        }
        for (p, d) in planned.iter().zip(&decisions).filter(|(p, _)| !p.dry_run) {
            p.counted(d.as_ref().map_or(Outcome::Allowed, Outcome::of));
        }
        // Then the limits on trial, each on its own: decided and counted, never enforced.
        for (slot, p) in decisions
            .iter_mut()
            .zip(&planned)
            .filter(|(_, p)| p.dry_run)
        {
            let decision = if p.never_admitted() {
                Some(Decision::reject(
                    p.limit.policy().max().get(),
                    Duration::ZERO,
                ))
            } else {
                let charges = [p.charge()];
                let mut check = self.check_all(&charges);
                let result = match check.take_ready() {
                    Some(result) => result,
                    None => check.await,
                };
                match result {
                    Ok(checked) => {
                        let (answers, receipt) = checked.into_parts();
                        if let Some(counts) = p.counts(preflight) {
                            if receipt.counted_anything() {
                                refunds.push((vec![p.owned()], receipt, counts));
                            }
                        }
                        answers.into_iter().next()
                    }
                    Err(_) => None,
                }
            };
            p.counted(match decision {
                Some(d) if d.by_fallback() => Outcome::StoreError,
                Some(d) if d.allowed() => Outcome::Allowed,
                Some(_) => Outcome::DryRun,
                None => Outcome::StoreError,
            });
            if let Some(decision) = decision.filter(|d| !d.allowed()) {
                let_through.push(p.spec.name.clone());
                Limiter::would_have_rejected(p.limit.scope(), &p.spec.key.kind(), &decision);
            } else if let Some(wait) = decision.and_then(|d| d.delayed()) {
                Limiter::would_have_waited(p.limit.scope(), &p.spec.key.kind(), wait);
            }
            *slot = decision;
        }
        let (members, answers): (Vec<Member>, Vec<Decision>) = planned
            .iter()
            .zip(&decisions)
            .filter_map(|(p, d)| d.map(|d| (p.member(), d)))
            .unzip();
        let mut fields = RateLimitFields::of_members(answers, members);
        fields.let_through(let_through);
        Ok(Decided {
            fields,
            refund: (!refunds.is_empty()).then(|| Refund::new(refunds)),
        })
    }
}

/// A request its limits admitted ahead of its tokens, refused because the queue of waiting
/// requests is full (its units given back): the limit that made it wait longest — its
/// `delay`, answered as a rejection with that wait — and the RateLimit fields of every
/// limit as they stand once the units are back (a limit that delayed it has nothing left
/// until its turn; the others one request's cost more than they answered).
fn refused_for_the_queue<'p, 's>(
    planned: &'p [Planned<'s>],
    decisions: &[Option<Decision>],
    delay: Duration,
) -> (&'p Planned<'s>, Decision, RateLimitFields) {
    let mut longest = None;
    let (members, answers): (Vec<Member>, Vec<Decision>) = planned
        .iter()
        .zip(decisions)
        .filter_map(|(p, d)| {
            let d = (*d)?;
            let now = match d.delayed() {
                Some(wait) => {
                    if wait == delay && longest.is_none() {
                        longest = Some(p);
                    }
                    Decision::reject(d.limit(), wait)
                }
                None if d.allowed() => Decision::allow(
                    d.limit(),
                    d.remaining().saturating_add(p.cost).min(d.limit()),
                    d.reset_after(),
                ),
                None => d,
            };
            Some((p.member(), now))
        })
        .unzip();
    let p = longest.unwrap_or(&planned[0]);
    let refused = Decision::reject(p.limit.policy().max().get(), delay);
    (p, refused, RateLimitFields::of_members(answers, members))
}

impl Limiter {
    /// Whether `spec`'s limit is enforced on the client `key` names: not in a dry run, and
    /// within the share of clients configuration (else the attribute) sets for its scope.
    fn enforces(&self, spec: &LimitSpec, key: &ClientKey) -> bool {
        self.enforces_in(spec.limit.scope(), spec.options.enforce, key)
    }

    /// Whether a limit of `scope` declared enforced on `declared` of the clients is enforced
    /// on the client `key` names: not in a dry run, and within the share configuration (else
    /// the declaration) sets for the scope. A limit checked inside a handler
    /// ([`check`](crate::check)) is declared on all.
    pub(crate) fn enforces_in(&self, scope: &str, declared: Share, key: &ClientKey) -> bool {
        let http = self.http();
        if http.dry_run {
            return false;
        }
        let share = http.enforcement.of(scope).unwrap_or(declared);
        share.includes(scope, key.as_bytes())
    }

    /// The `warn` event of a limit on trial that would have rejected the request.
    #[cold]
    pub(crate) fn would_have_rejected(scope: &str, kind: &str, decision: &Decision) {
        tracing::warn!(
            scope,
            key = %kind,
            retry_after_secs = decision.retry_after_secs(),
            "rate limit (dry run): this request would have been rejected"
        );
    }

    /// The `warn` event of a limit on trial that would have made the request wait its turn
    /// (a `delay`): not a rejection, but what enforcing would change for this client.
    #[cold]
    pub(crate) fn would_have_waited(scope: &str, kind: &str, wait: Duration) {
        tracing::warn!(
            scope,
            key = %kind,
            wait_ms = wait.as_millis() as u64,
            "rate limit (dry run): this request would have waited its turn"
        );
    }

    /// The `debug` event of a rejected request (`decision` is `None` for a cost no budget
    /// holds), and the `rate_limit` field of the current span, where it declares one.
    fn rejected_event(&self, planned: &Planned<'_>, decision: Option<Decision>) {
        let kind = planned.spec.key.kind();
        self.rejection_event(planned.limit.scope(), &kind, &planned.key, decision);
    }

    #[cold]
    pub(crate) fn rejection_event(
        &self,
        scope: &str,
        kind: &str,
        key: &ClientKey,
        decision: Option<Decision>,
    ) {
        // No subscriber enables anything (the level filter is off): there is no span to
        // record into, and looking for the current one costs a rejection flood.
        if tracing::level_filters::LevelFilter::current()
            != tracing::level_filters::LevelFilter::OFF
        {
            tracing::Span::current().record("rate_limit", "rejected");
        }
        let http = self.http();
        if http.track_rejected {
            http.rejected.add(scope, key, self.now());
        }
        let retry_after_secs = decision.map(|d| d.retry_after_secs());
        if http.trace_keys {
            tracing::debug!(
                scope,
                key = kind,
                client = %key.describe(),
                retry_after_secs,
                "rate limit: request rejected"
            );
        } else {
            tracing::debug!(
                scope,
                key = kind,
                retry_after_secs,
                "rate limit: request rejected"
            );
        }
    }

    /// Whether `req` is a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`)
    /// that a [`RateLimit`](crate::RateLimit) middleware counts and gives back when the
    /// answer is a CORS layer's own (it ran no handler): a browser sends one before the
    /// request it asks about, which is counted. A preflight that reaches a handler runs it,
    /// and is counted as any request; `.count_preflights(true)` counts them all.
    #[inline]
    pub(crate) fn gives_back_preflight(&self, req: &HttpRequest, limits: &HandlerLimits) -> bool {
        limits.around_service && !self.http().count_preflights && is_preflight(req)
    }

    /// Whether the limiter exempts `req`: its client address, or its own rule.
    pub(crate) fn is_exempt(&self, req: &HttpRequest) -> bool {
        let http = self.http();
        if http.exempt_when.as_ref().is_some_and(|exempt| exempt(req)) {
            return true;
        }
        if http.exempt.is_empty() {
            return false;
        }
        matches!(
            super::keys::client(req, self),
            Ok(crate::Client::Address(ip)) if http.exempt.contains(ip)
        )
    }

    /// The limit `spec` applies to `req`: the policy its `policy` function chooses, else the
    /// one configuration sets for its scope, else the declared one.
    async fn limit_for<'s>(
        &self,
        limits: &'s HandlerLimits,
        spec: &'s LimitSpec,
        req: &HttpRequest,
    ) -> LimitRef<'s> {
        let chosen = match &spec.options.policy {
            Some(choose) => {
                let timeout = self.http().resolver_timeout;
                super::resolve::within(choose, req, timeout, "policy").await
            }
            None => None,
        };
        if let Some(policy) = chosen {
            let declared = spec.limit.policy();
            // As with configuration: a policy that names no algorithm keeps the declared
            // one, and one without a penalty the declared penalty.
            let policy = policy.over(declared).unwrap_or(policy);
            if policy != *declared {
                return LimitRef::Shared(limits.tier(self, &spec.limit, policy));
            }
        }
        match self.overridden(&spec.limit) {
            Some(limit) => LimitRef::Shared(limit),
            None => LimitRef::Declared(&spec.limit),
        }
    }
}

/// Whether `req` is a CORS preflight: `OPTIONS` with `Access-Control-Request-Method`.
pub(crate) fn is_preflight(req: &HttpRequest) -> bool {
    req.method() == actix_web::http::Method::OPTIONS
        && req
            .headers()
            .contains_key(actix_web::http::header::ACCESS_CONTROL_REQUEST_METHOD)
}

/// Whether `headers` are those of a CORS layer's answer to a preflight (`actix-cors` and its
/// peers answer with `Access-Control-Allow-Methods`), which ran no handler.
pub(crate) fn answered_by_cors(headers: &actix_web::http::header::HeaderMap) -> bool {
    headers.contains_key(actix_web::http::header::ACCESS_CONTROL_ALLOW_METHODS)
}
