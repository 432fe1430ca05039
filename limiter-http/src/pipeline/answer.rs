//! The third stage: what the store's count comes to. A pass, with the header fields of
//! every limit; a 429 naming the limit that admits the request last; a 503 where the store
//! failed closed; a turn to wait where a bucket admitted the request ahead of its tokens
//! (`delay`), or a 429 where the queue of waiting requests is full. The limits on trial
//! never refuse: their would-be rejections are let through, and said so.

use std::borrow::Cow;
use std::time::Duration;

use limiter_core::{Decision, Verdict};

use super::decide::Counted;
use super::each::Each;
use super::inline::InlineChecks;
use super::plan::{Plan, Planned};
use super::settle::Refund;
use super::Respond;
use super::{Asker, Decided};
use crate::observe::Outcome;
use crate::{ClientKey, Limiter, Member, RateLimitFields};

/// What the enforced limits' count came to: go on (to the limits on trial, and a pass), or
/// the request's answer.
pub(super) enum Enforced<F: Respond> {
    Go(Counted<F>),
    Done(Result<Decided<F>, F::Response>),
}

/// The 429 of a request that costs more than one of its enforced limits ever allows at
/// once: refused before anything is counted.
// By value: boxing the response would cost every rejected request an allocation.
#[allow(clippy::result_large_err)]
pub(super) fn never_admitted<F: Respond>(
    limiter: &Limiter<F>,
    asker: Asker<'_, F>,
    plan: &Plan<'_, F>,
) -> Result<(), F::Response> {
    let Some(never) = plan
        .items()
        .iter()
        .find(|p| !p.dry_run && p.never_admitted())
    else {
        return Ok(());
    };
    never.counted(Outcome::Rejected);
    rejected_event(limiter, never, None);
    let policy = never.limit.policy();
    let units = (never.cost, policy.capacity(), policy.max().get());
    Err(super::respond::never_admitted(
        limiter,
        asker.limits(),
        never.name(),
        never.member(),
        units,
    ))
}

/// What the enforced limits' count comes to, the request's turn waited for where a bucket
/// admitted it ahead of its tokens.
pub(super) async fn enforced<F: Respond>(
    limiter: &Limiter<F>,
    asker: Asker<'_, F>,
    plan: &Plan<'_, F>,
    verdict: Verdict<Counted<F>>,
) -> Enforced<F> {
    let mut counted = match decided(limiter, asker, plan, verdict) {
        Ok(counted) => counted,
        Err(done) => return Enforced::Done(done),
    };
    if let Err(refused) = wait_turn(limiter, asker, plan, &mut counted).await {
        return Enforced::Done(Err(refused));
    }
    match refused(limiter, asker, plan, &counted) {
        Some(response) => Enforced::Done(Err(response)),
        None => Enforced::Go(counted),
    }
}

/// [`enforced`] and [`pass`] for a plan whose one limit is enforced and cannot make the
/// request wait (the lean path): nothing to await.
#[allow(clippy::result_large_err)]
pub(super) fn at_once<F: Respond>(
    limiter: &Limiter<F>,
    asker: Asker<'_, F>,
    plan: &Plan<'_, F>,
    verdict: Verdict<Decision>,
) -> Result<Decided<F>, F::Response> {
    let decision = match verdict {
        Verdict::Decided(decision) => decision,
        Verdict::Unlimited => return store_failed(limiter, asker, plan, false),
        Verdict::Unavailable => return store_failed(limiter, asker, plan, true),
    };
    // One limit as declared that admits the request: its pass, with nothing to name.
    if let ([p], Asker::Handler(_)) = (plan.items(), asker) {
        if decision.allowed() && !p.dry_run && plan.as_declared {
            p.counted(Outcome::of(&decision));
            return Ok(Decided {
                fields: RateLimitFields::one(decision),
                refund: None,
            });
        }
    }
    let counted = Counted::one(decision);
    if let Some(response) = refused(limiter, asker, plan, &counted) {
        return Err(response);
    }
    Ok(pass(asker, plan, counted))
}

/// The count, where the store decided; else the fault policy's answer: the request let
/// through without fields (`FailOpen`), or a 503.
#[allow(clippy::result_large_err)]
fn decided<F: Respond>(
    limiter: &Limiter<F>,
    asker: Asker<'_, F>,
    plan: &Plan<'_, F>,
    verdict: Verdict<Counted<F>>,
) -> Result<Counted<F>, Result<Decided<F>, F::Response>> {
    match verdict {
        Verdict::Decided(counted) => Ok(counted),
        Verdict::Unlimited => Err(store_failed(limiter, asker, plan, false)),
        Verdict::Unavailable => Err(store_failed(limiter, asker, plan, true)),
    }
}

/// The store failed: the request let through without fields (`FailOpen`, and the
/// RateLimit fields are left out), or, `unavailable`, a 503.
#[cold]
#[allow(clippy::result_large_err)]
fn store_failed<F: Respond>(
    limiter: &Limiter<F>,
    asker: Asker<'_, F>,
    plan: &Plan<'_, F>,
    unavailable: bool,
) -> Result<Decided<F>, F::Response> {
    for p in plan.items().iter().filter(|p| !p.dry_run) {
        p.counted(Outcome::StoreError);
    }
    match unavailable {
        false => Ok(Decided::undecided()),
        true => Err(super::respond::failure(
            limiter,
            asker.limits(),
            crate::Failure::StoreUnavailable,
        )),
    }
}

/// The 429 of a request an enforced limit rejected: the one that admits it last names it.
fn refused<F: Respond>(
    limiter: &Limiter<F>,
    asker: Asker<'_, F>,
    plan: &Plan<'_, F>,
    counted: &Counted<F>,
) -> Option<F::Response> {
    let decisions = counted.decisions.as_slice();
    if decisions.iter().flatten().all(Decision::allowed) {
        return None;
    }
    let (p, decision) = plan
        .items()
        .iter()
        .zip(decisions)
        .filter_map(|(p, d)| d.filter(|d| !d.allowed()).map(|d| (p, d)))
        .max_by_key(|(_, d)| d.retry_after())?;
    for (p, d) in plan.items().iter().zip(decisions) {
        if let Some(d) = d.filter(|d| !d.allowed()) {
            p.counted(Outcome::of(&d));
        }
    }
    rejected_event(limiter, p, Some(decision));
    let fields = fields_of(plan, &counted.decisions);
    Some(refuse(limiter, asker, fields, p.name(), decision))
}

/// The 429 naming `name`, with the fields of every limit: on it, or, for a check inside a
/// handler, in the request for the handler's response.
fn refuse<F: Respond>(
    limiter: &Limiter<F>,
    asker: Asker<'_, F>,
    fields: RateLimitFields,
    name: &str,
    decision: Decision,
) -> F::Response {
    match asker {
        Asker::Handler(limits) => F::rejection(limiter, Some((limits, &fields)), name, decision),
        Asker::Inline(req) => {
            record_inline::<F>(req, &fields, Vec::new(), None);
            F::rejection(limiter, None, name, decision)
        }
    }
}

/// Admitted ahead of its tokens (a bucket's `delay`): the request waits its turn — or, the
/// queue full, is refused, its place given back. Afterwards its decisions say where the
/// limits stand once the wait is over.
async fn wait_turn<F: Respond>(
    limiter: &Limiter<F>,
    asker: Asker<'_, F>,
    plan: &Plan<'_, F>,
    counted: &mut Counted<F>,
) -> Result<(), F::Response> {
    let decisions = counted.decisions.as_slice();
    let any_rejected = decisions.iter().flatten().any(|d| !d.allowed());
    let delayed = decisions
        .iter()
        .flatten()
        .filter_map(Decision::delayed)
        .max();
    let (Some(delay), false, Some(receipt)) = (delayed, any_rejected, &counted.receipt) else {
        return Ok(());
    };
    let charges = plan
        .items()
        .iter()
        .filter(|p| !p.dry_run)
        .map(Planned::owned)
        .collect();
    if !super::delay::wait_turn(limiter, delay, charges, receipt.clone()).await {
        let (p, refused, fields) = refused_for_the_queue(plan, decisions, delay);
        p.counted(Outcome::Rejected);
        rejected_event(limiter, p, Some(refused));
        return Err(refuse(limiter, asker, fields, p.name(), refused));
    }
    for (d, p) in counted
        .decisions
        .as_mut_slice()
        .iter_mut()
        .zip(plan.items())
    {
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
    Ok(())
}

/// A request its limits admitted ahead of its tokens, refused because the queue of waiting
/// requests is full (its units given back): the limit that made it wait longest — its
/// `delay`, answered as a rejection with that wait — and the RateLimit fields of every
/// limit as they stand once the units are back (a limit that delayed it has nothing left
/// until its turn; the others one request's cost more than they answered).
fn refused_for_the_queue<'p, 's, F: Respond>(
    plan: &'p Plan<'s, F>,
    decisions: &[Option<Decision>],
    delay: Duration,
) -> (&'p Planned<'s, F>, Decision, RateLimitFields) {
    let mut longest = None;
    let (members, answers): (Vec<Member>, Vec<Decision>) = plan
        .items()
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
    let p = longest.unwrap_or(&plan.items()[0]);
    let refused = Decision::reject(p.limit.policy().max().get(), delay);
    (p, refused, RateLimitFields::of_members(answers, members))
}

/// An admitted request's answer: its fields, the would-be rejections of its limits on
/// trial let through (and said so), and what its response may take back.
pub(super) fn pass<F: Respond>(
    asker: Asker<'_, F>,
    plan: &Plan<'_, F>,
    counted: Counted<F>,
) -> Decided<F> {
    let mut let_through = Vec::new();
    for (p, d) in plan.items().iter().zip(counted.decisions.as_slice()) {
        if !p.dry_run {
            p.counted(d.as_ref().map_or(Outcome::Allowed, Outcome::of));
            continue;
        }
        // The fallback memory's answer counts as the store's error.
        p.counted(match d {
            Some(d) if d.by_fallback() => Outcome::StoreError,
            Some(d) if d.allowed() => Outcome::Allowed,
            Some(_) => Outcome::DryRun,
            None => Outcome::StoreError,
        });
        let scope = p.limit.scope();
        if let Some(decision) = d.filter(|d| !d.allowed()) {
            let_through.push(p.name().clone());
            would_have_rejected(scope, &p.kind(), &decision);
        } else if let Some(wait) = d.and_then(|d| d.delayed()) {
            would_have_waited(scope, &p.kind(), wait);
        }
    }
    let refund = (!counted.refunds.is_empty()).then(|| {
        // The place of each refunded limit's decision among the decided ones: the fields'.
        let decisions = counted.decisions.as_slice();
        let places = counted.refunded.iter().map(|&place| {
            let decided = decisions.get(place)?.is_some();
            decided.then(|| decisions[..place].iter().flatten().count())
        });
        Refund::in_fields(counted.refunds, places.collect())
    });
    let mut fields = fields_of(plan, &counted.decisions);
    match asker {
        Asker::Handler(_) => {
            if !let_through.is_empty() {
                fields.let_through(let_through);
            }
            Decided { fields, refund }
        }
        Asker::Inline(req) => {
            record_inline::<F>(req, &fields, let_through, refund);
            Decided::none()
        }
    }
}

/// The fields of the decided limits: unnamed when they are the set's limits exactly as
/// declared, in order (most requests: no allocation for one), else each named.
fn fields_of<F: Respond>(
    plan: &Plan<'_, F>,
    decisions: &Each<Option<Decision>>,
) -> RateLimitFields {
    let decisions = decisions.as_slice();
    if plan.as_declared && decisions.iter().all(Option::is_some) {
        return match decisions {
            [Some(decision)] => RateLimitFields::one(*decision),
            _ => RateLimitFields::many(decisions.iter().flatten().copied().collect()),
        };
    }
    let (members, answers): (Vec<Member>, Vec<Decision>) = plan
        .items()
        .iter()
        .zip(decisions)
        .filter_map(|(p, d)| d.map(|d| (p.member(), d)))
        .unzip();
    RateLimitFields::of_members(answers, members)
}

/// Keeps the decisions of a check inside a handler in `req`, for the fields of the
/// handler's response (`#[rate_limit]`'s or the middleware's), with what a success takes
/// back and the names of the limits on trial that would have refused it.
fn record_inline<F: Respond>(
    req: &F::Request,
    fields: &RateLimitFields,
    let_through: Vec<Cow<'static, str>>,
    refund: Option<Refund<F>>,
) {
    let checks: Vec<(Member, Decision)> = fields.named().collect();
    // Undecided (its store failed) and nothing to say: the request carries nothing.
    if checks.is_empty() && let_through.is_empty() && refund.is_none() {
        return;
    }
    InlineChecks::<F>::made();
    F::inline_checks(req, |inline| {
        inline.checks.extend(checks);
        inline.refunds.extend(refund);
        inline.let_through.extend(let_through);
    });
}

/// The `debug` event of a rejected request (`decision` is `None` for a cost no budget
/// holds).
fn rejected_event<F: Respond>(
    limiter: &Limiter<F>,
    planned: &Planned<'_, F>,
    decision: Option<Decision>,
) {
    let kind = planned.kind();
    rejection_event(
        limiter,
        planned.limit.scope(),
        &kind,
        &planned.key,
        decision,
    );
}

/// The `debug` event of a rejected request, and the `rate_limit` field of the current
/// span, where it declares one; the rejected client is kept where they are tracked.
#[cold]
pub fn rejection_event<F: Respond>(
    limiter: &Limiter<F>,
    scope: &str,
    kind: &str,
    key: &ClientKey,
    decision: Option<Decision>,
) {
    // No subscriber enables anything (the level filter is off): there is no span to
    // record into, and looking for the current one costs a rejection flood.
    if tracing::level_filters::LevelFilter::current() != tracing::level_filters::LevelFilter::OFF {
        tracing::Span::current().record("rate_limit", "rejected");
    }
    let http = limiter.http();
    if http.track_rejected {
        http.rejected.add(scope, key, limiter.now());
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

/// The `warn` event of a limit on trial that would have rejected the request.
#[cold]
pub fn would_have_rejected(scope: &str, kind: &str, decision: &Decision) {
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
pub fn would_have_waited(scope: &str, kind: &str, wait: Duration) {
    tracing::warn!(
        scope,
        key = %kind,
        wait_ms = wait.as_millis() as u64,
        "rate limit (dry run): this request would have waited its turn"
    );
}
