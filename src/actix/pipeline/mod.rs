//! A request's decision, as four stages run in order, one file each:
//!
//! 1. [`plan`]: what the request is counted against — its limits' keys, their policies as
//!    overrides and `policy` functions leave them, exemptions, shares on trial, costs;
//! 2. [`decide`]: every enforced limit at once in the store, all or nothing; then each limit
//!    on trial alone;
//! 3. [`answer`]: what comes of it — a pass with its header fields, a 429, a 503, a turn to
//!    wait (a bucket's `delay`);
//! 4. [`settle`]: what the response gives back — what `count = "failures"` (or `fn`) does
//!    not keep, and a preflight a CORS layer answered.
//!
//! `#[rate_limit]`, the [`RateLimit`](crate::RateLimit) middleware and [`check`](crate::check)
//! all run it. The common request — one plain limit on a store that answers at once — runs
//! the same stages with nothing to await: [`run_now`].

mod answer;
mod decide;
mod each;
mod plan;
pub(crate) mod settle;

use actix_web::{HttpRequest, HttpResponse};

use super::fields::RateLimitFields;
use super::limits::HandlerLimits;
use crate::{Limit, Limiter};
pub(crate) use plan::is_exempt;
use settle::Refund;

/// What deciding a request came to, when it may go on.
pub(crate) struct Decided {
    /// The fields its response carries.
    pub(crate) fields: RateLimitFields,
    /// What to take back if its response is a success (`count = "failures"`).
    pub(crate) refund: Option<Refund>,
}

impl Decided {
    /// Exempt: nothing counted, no fields.
    pub(crate) fn none() -> Decided {
        Decided {
            fields: RateLimitFields::none(),
            refund: None,
        }
    }

    /// The store failed open: nothing counted, no fields.
    pub(crate) fn undecided() -> Decided {
        Decided {
            fields: RateLimitFields::undecided(),
            refund: None,
        }
    }
}

/// Who asks for a decision, which decides how its answer is given.
#[derive(Clone, Copy)]
pub(crate) enum Asker<'a> {
    /// A handler's limits (the attribute's, or a middleware's): the fields go on its
    /// response, a refusal is answered with them.
    Handler(&'a HandlerLimits),
    /// A check inside a handler ([`check`](crate::check)): its decision waits in the
    /// request for the handler's response; a refusal is answered without fields.
    Inline(&'a HttpRequest),
}

impl<'a> Asker<'a> {
    fn limits(self) -> Option<&'a HandlerLimits> {
        match self {
            Asker::Handler(limits) => Some(limits),
            Asker::Inline(_) => None,
        }
    }
}

/// Decides `req` against every limit of a set (a handler's, or a middleware's), all or
/// nothing: the header fields (and what to take back later) of an admitted request, or the
/// response of one that is not.
pub(crate) async fn run(
    limiter: &Limiter,
    req: &HttpRequest,
    limits: &HandlerLimits,
) -> Result<Decided, HttpResponse> {
    let plan = plan::plan(limiter, req, limits).await?;
    carry_out(limiter, Asker::Handler(limits), plan).await
}

/// [`run`] without a future, when the request takes the lean path (one limit as declared,
/// nothing to exempt or resolve) and the store answers at once: what every request on the
/// default setup does. `None` otherwise, having counted nothing: then `run` it.
#[inline]
// By value: boxing the response would cost every rejected request an allocation.
#[allow(clippy::result_large_err)]
pub(crate) fn run_now(
    limiter: &Limiter,
    req: &HttpRequest,
    limits: &HandlerLimits,
) -> Option<Result<Decided, HttpResponse>> {
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
pub(crate) async fn run_inline(
    limiter: &Limiter,
    req: &HttpRequest,
    limit: &Limit,
    key: &str,
    failures_only: bool,
) -> Result<(), HttpResponse> {
    let plan = plan::inline(limiter, limit, key, failures_only);
    carry_out(limiter, Asker::Inline(req), plan).await.map(drop)
}

/// The stages after the plan.
async fn carry_out(
    limiter: &Limiter,
    asker: Asker<'_>,
    plan: plan::Plan<'_>,
) -> Result<Decided, HttpResponse> {
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
