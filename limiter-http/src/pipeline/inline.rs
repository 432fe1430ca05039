//! The decisions of limits checked inside a handler, which wait in its request (the front
//! end keeps them there) for the fields of the handler's response.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};

use limiter_core::Decision;

use super::settle::Refund;
use super::Respond;
use crate::{Front, Member, RateLimitFields};

/// The decisions of limits checked inside a handler, waiting in the request for the
/// response's fields, and what a success takes back (`check_failures`).
pub struct InlineChecks<F: Front> {
    pub(crate) checks: Vec<(Member, Decision)>,
    pub(crate) refunds: Vec<Refund<F>>,
    /// The names of those that would have rejected the request and were on trial.
    pub(crate) let_through: Vec<Cow<'static, str>>,
}

impl<F: Front> Default for InlineChecks<F> {
    fn default() -> InlineChecks<F> {
        InlineChecks {
            checks: Vec::new(),
            refunds: Vec::new(),
            let_through: Vec::new(),
        }
    }
}

/// Whether any request of this process was checked inside its handler: until one is, no
/// response looks for their decisions in its request (a lookup per request).
static ANY_INLINE: AtomicBool = AtomicBool::new(false);

impl<F: Front> InlineChecks<F> {
    /// Called before a request's first inline check is stored: the request is answered on
    /// the thread that checked it, so its response then looks.
    pub(crate) fn made() {
        if !ANY_INLINE.load(Ordering::Relaxed) {
            ANY_INLINE.store(true, Ordering::Relaxed);
        }
    }
}

/// Adds to `fields` the decisions of limits checked inside the handler, which the request
/// carries; returns what a success takes back of them.
#[inline]
pub fn take_inline_checks<F: Respond>(
    fields: &mut RateLimitFields,
    req: &F::Request,
    declared: impl FnOnce() -> Vec<Member>,
) -> Vec<Refund<F>> {
    match ANY_INLINE.load(Ordering::Relaxed) {
        false => Vec::new(),
        true => take_inline_checks_made(fields, req, declared),
    }
}

/// [`take_inline_checks`] once this process has checked a limit inside a handler: out of
/// line, so that every other response pays a load.
#[inline(never)]
fn take_inline_checks_made<F: Respond>(
    fields: &mut RateLimitFields,
    req: &F::Request,
    declared: impl FnOnce() -> Vec<Member>,
) -> Vec<Refund<F>> {
    let Some(checked) = F::take_inline_checks(req) else {
        return Vec::new();
    };
    fields.add_checked(checked.checks, checked.let_through, declared);
    checked.refunds
}
