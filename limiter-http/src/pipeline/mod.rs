//! A request's decision, as four stages run in order, one file each:
//!
//! 1. `plan`: what the request is counted against — its limits' keys, their policies as
//!    overrides and `policy` functions leave them, exemptions, shares on trial, costs;
//! 2. `decide`: every enforced limit at once in the store, all or nothing; then each limit
//!    on trial alone;
//! 3. `answer`: what comes of it — a pass with its header fields, a 429, a 503, a turn to
//!    wait (a bucket's `delay`);
//! 4. `settle`: what the response gives back — what `count = "failures"` (or `fn`) does
//!    not keep, and a preflight a CORS layer answered.
//!
//! Every front end's attribute, middleware and checks inside a handler run it, generic over
//! the front end ([`Front`]): its request is read, and its responses built, through it. The
//! common request — one plain limit on a store that answers at once — runs the same stages
//! with nothing to await: `run_now`.

mod answer;
mod decide;
mod delay;
mod each;
mod inline;
mod plan;
mod respond;
mod settle;
mod slots;

use limiter_core::Limit;

pub use crate::counts::Counts;
use crate::limits::HandlerLimits;
use crate::{Front, Limiter, RateLimitFields};
pub use answer::{rejection_event, would_have_rejected, would_have_waited};
pub use inline::{take_inline_checks, InlineChecks};
pub use plan::{enforces_in, is_exempt};
pub use respond::{failure, failure_response, key_failure, problem_response, rejection, Respond};
pub use settle::{answered, answered_by_cors, gives_back_preflight, Asked, Owned, Refund, Settle};
pub use slots::{take_slots, Slots};

/// What deciding a request came to, when it may go on.
pub struct Decided<F: Front> {
    /// The fields its response carries.
    pub fields: RateLimitFields,
    /// What to take back if its response is a success (`count = "failures"`).
    pub refund: Option<Refund<F>>,
}

impl<F: Front> Decided<F> {
    /// Exempt: nothing counted, no fields.
    pub(crate) fn none() -> Decided<F> {
        Decided {
            fields: RateLimitFields::none(),
            refund: None,
        }
    }

    /// The store failed open: nothing counted, no fields.
    pub(crate) fn undecided() -> Decided<F> {
        Decided {
            fields: RateLimitFields::undecided(),
            refund: None,
        }
    }
}

/// Who asks for a decision, which decides how its answer is given.
pub(crate) enum Asker<'a, F: Respond> {
    /// A handler's limits (the attribute's, or a middleware's): the fields go on its
    /// response, a refusal is answered with them.
    Handler(&'a HandlerLimits<F>),
    /// A check inside a handler (actix's `limiter::check`): its decision waits in the
    /// request for the handler's response; a refusal is answered without fields.
    Inline(&'a F::Request),
}

impl<F: Respond> Clone for Asker<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F: Respond> Copy for Asker<'_, F> {}

impl<'a, F: Respond> Asker<'a, F> {
    fn limits(self) -> Option<&'a HandlerLimits<F>> {
        match self {
            Asker::Handler(limits) => Some(limits),
            Asker::Inline(_) => None,
        }
    }
}

/// Decides `req` against every limit of a set (a handler's, or a middleware's), all or
/// nothing: the header fields (and what to take back later) of an admitted request, or the
/// response of one that is not.
pub async fn run<F: Respond>(
    limiter: &Limiter<F>,
    req: &F::Request,
    limits: &HandlerLimits<F>,
) -> Result<Decided<F>, F::Response> {
    let plan = plan::plan(limiter, req, limits).await?;
    carry_out(limiter, Asker::Handler(limits), plan).await
}

/// [`run`] without a future, when the request takes the lean path (one limit as declared,
/// nothing to exempt or resolve) and the store answers at once: what every request on the
/// default setup does. `None` otherwise, having counted nothing: then `run` it.
#[inline]
// By value: boxing the response would cost every rejected request an allocation.
#[allow(clippy::result_large_err)]
pub fn run_now<F: Respond>(
    limiter: &Limiter<F>,
    req: &F::Request,
    limits: &HandlerLimits<F>,
) -> Option<Result<Decided<F>, F::Response>> {
    let plan = match plan::plan_now(limiter, req, limits)? {
        Ok(plan) => plan,
        Err(response) => return Some(Err(response)),
    };
    let counted = decide::enforced_now(limiter, &plan)?;
    let asker = Asker::Handler(limits);
    Some(answer::at_once(limiter, asker, &plan, counted))
}

/// Decides a limit checked inside a handler for `key`: `Err` is the response to refuse
/// with; the decision itself waits in the request for the handler's response.
pub async fn run_inline<F: Respond>(
    limiter: &Limiter<F>,
    req: &F::Request,
    limit: &Limit,
    key: &str,
    failures_only: bool,
) -> Result<(), F::Response> {
    let plan = plan::inline(limiter, limit, key, failures_only);
    carry_out(limiter, Asker::Inline(req), plan).await.map(drop)
}

/// The stages after the plan.
async fn carry_out<F: Respond>(
    limiter: &Limiter<F>,
    asker: Asker<'_, F>,
    plan: plan::Plan<'_, F>,
) -> Result<Decided<F>, F::Response> {
    if plan.is_empty() {
        return Ok(Decided::none());
    }
    answer::never_admitted(limiter, asker, &plan)?;
    let counted = decide::enforced(limiter, &plan).await;
    let mut counted = match answer::enforced(limiter, asker, &plan, counted).await {
        answer::Enforced::Go(counted) => counted,
        answer::Enforced::Done(done) => return done,
    };
    decide::on_trial(limiter, &plan, &mut counted).await;
    Ok(answer::pass(asker, &plan, counted))
}
