//! The second stage: the planned limits counted in the store. The enforced ones at once,
//! all or nothing (one round trip to a networked store); then each limit on trial alone,
//! so that a limit on trial never turns another's admission into a refusal.

use limiter_core::{Charge, Decision, Receipt, StoreError, Verdict};

use super::each::Each;
use super::plan::{Plan, Planned};
use super::settle::Owned;
use super::Respond;
use crate::counts::Counts;
use crate::jitter::jittered;
use crate::Limiter;

/// What the store counted for a request: a decision per planned limit (`None` for one not
/// decided: on trial and not yet checked, or its store failed), the receipt of the
/// enforced limits' check, and what each limit that counts only some responses may take
/// back.
pub(super) struct Counted<F: Respond> {
    pub(super) decisions: Each<Option<Decision>>,
    pub(super) receipt: Option<Receipt>,
    pub(super) refunds: Vec<(Vec<Owned>, Receipt, Counts<F>)>,
    /// The place in the plan of each refund's limit.
    pub(super) refunded: Vec<usize>,
}

impl<F: Respond> Counted<F> {
    /// The count of a plan of one limit, decided.
    pub(super) fn one(decision: Decision) -> Counted<F> {
        Counted {
            decisions: Each::One(Some(decision)),
            receipt: None,
            refunds: Vec::new(),
            refunded: Vec::new(),
        }
    }

    fn nothing(len: usize) -> Counted<F> {
        Counted {
            decisions: Each::filled(len, || None),
            receipt: None,
            refunds: Vec::new(),
            refunded: Vec::new(),
        }
    }
}

/// The one limit of the common request's plan ([`plan_now`](super::plan::plan_now)),
/// which needs no receipt: it is checked alone, which neither allocates nor keeps what the
/// check counted — and which a networked store may answer from the rejections this
/// instance remembers (every other plan asks the store).
fn alone<'p, 's, F: Respond>(plan: &'p Plan<'s, F>) -> Option<&'p Planned<'s, F>> {
    match plan.items() {
        [p] if plan.lean && !p.dry_run && p.cost == 1 && !p.needs_receipt() => Some(p),
        _ => None,
    }
}

/// [`enforced`] without a future, where the plan is one limit checked alone and the store
/// answers at once: its decision, which is all the lean path needs. `None` otherwise,
/// having counted nothing.
#[inline]
pub(super) fn enforced_now<F: Respond>(
    limiter: &Limiter<F>,
    plan: &Plan<'_, F>,
) -> Option<Verdict<Decision>> {
    let p = alone(plan)?;
    // A check that is not answered at once has not started: dropping it counts nothing.
    let result = limiter.check(&p.limit, p.key.as_bytes()).take_ready()?;
    Some(one_verdict(limiter, p, result))
}

/// The verdict on one limit's check, its decision jittered as the limit says.
#[inline]
fn one_verdict<F: Respond>(
    limiter: &Limiter<F>,
    p: &Planned<'_, F>,
    result: Result<Decision, StoreError>,
) -> Verdict<Decision> {
    match limiter.verdict(result) {
        Verdict::Decided(decision) => Verdict::Decided(jittered(decision, p.jitter_ms())),
        Verdict::Unlimited => Verdict::Unlimited,
        Verdict::Unavailable => Verdict::Unavailable,
    }
}

fn one_decided<F: Respond>(
    limiter: &Limiter<F>,
    p: &Planned<'_, F>,
    result: Result<Decision, StoreError>,
) -> Verdict<Counted<F>> {
    match one_verdict(limiter, p, result) {
        Verdict::Decided(decision) => Verdict::Decided(Counted::one(decision)),
        Verdict::Unlimited => Verdict::Unlimited,
        Verdict::Unavailable => Verdict::Unavailable,
    }
}

/// Counts the plan's enforced limits in one check of the store, all or nothing.
pub(super) async fn enforced<F: Respond>(
    limiter: &Limiter<F>,
    plan: &Plan<'_, F>,
) -> Verdict<Counted<F>> {
    if let Some(p) = alone(plan) {
        let mut check = limiter.check(&p.limit, p.key.as_bytes());
        let result = match check.take_ready() {
            Some(result) => result,
            None => check.await,
        };
        return one_decided(limiter, p, result);
    }
    let items = plan.items();
    let enforced: Vec<&Planned<'_, F>> = items.iter().filter(|p| !p.dry_run).collect();
    if enforced.is_empty() {
        return Verdict::Decided(Counted::nothing(items.len()));
    }
    let charges: Vec<Charge<'_>> = enforced.iter().map(|p| p.charge()).collect();
    let mut check = limiter.check_all(&charges);
    let result = match check.take_ready() {
        Some(result) => result,
        None => check.await,
    };
    let (answers, receipt) = match limiter.verdict(result) {
        Verdict::Decided(checked) => checked.into_parts(),
        Verdict::Unlimited => return Verdict::Unlimited,
        Verdict::Unavailable => return Verdict::Unavailable,
    };
    let mut counted = Counted::nothing(items.len());
    let mut answers = answers.into_iter();
    for (slot, p) in counted.decisions.as_mut_slice().iter_mut().zip(items) {
        if !p.dry_run {
            *slot = answers.next().map(|d| jittered(d, p.jitter_ms()));
        }
    }
    // Each limit that counts only some responses, with its own rule.
    let places = items.iter().enumerate().filter(|(_, p)| !p.dry_run);
    for (i, (place, p)) in places.enumerate() {
        if let Some(counts) = p.counts {
            let receipt = receipt.subset([i]);
            if receipt.counted_anything() {
                counted.refunds.push((vec![p.owned()], receipt, counts));
                counted.refunded.push(place);
            }
        }
    }
    counted.receipt = Some(receipt);
    Verdict::Decided(counted)
}

/// Counts each limit on trial alone, once the enforced ones admitted the request: its
/// decision (`None` where its store failed) goes into `counted`.
pub(super) async fn on_trial<F: Respond>(
    limiter: &Limiter<F>,
    plan: &Plan<'_, F>,
    counted: &mut Counted<F>,
) {
    let items = plan.items();
    for (place, (slot, p)) in counted
        .decisions
        .as_mut_slice()
        .iter_mut()
        .zip(items)
        .enumerate()
        .filter(|(_, (_, p))| p.dry_run)
    {
        *slot = if p.never_admitted() {
            Some(Decision::reject(
                p.limit.policy().max().get(),
                std::time::Duration::ZERO,
            ))
        } else {
            let charges = [p.charge()];
            let mut check = limiter.check_all(&charges);
            let result = match check.take_ready() {
                Some(result) => result,
                None => check.await,
            };
            match result {
                Ok(checked) => {
                    let (answers, receipt) = checked.into_parts();
                    if let Some(counts) = p.counts {
                        if receipt.counted_anything() {
                            counted.refunds.push((vec![p.owned()], receipt, counts));
                            counted.refunded.push(place);
                        }
                    }
                    answers.into_iter().next()
                }
                Err(_) => None,
            }
        };
    }
}
