//! `delay = "2s"` at run time: a request a token bucket admitted ahead of its tokens waits
//! for them — asleep on the runtime's timer, never holding a worker thread — then runs.
//! Waiting requests are bounded in total ([`LimiterBuilder::most_waiting`]), and budgeted per
//! limit: with every place taken, a limit holding fewer than its share (the bound over the
//! limits waiting) still gets one, so one limit's flood never takes another's places (at
//! most twice the bound in all); per key the delay bounds them (a bucket holds at most
//! `delay / interval` places ahead). A request
//! that goes away while it waits gives its place back: its tokens are refunded, exactly, as
//! its receipt says. A full queue answers 429 at once, its place given back too.
//!
//! [`LimiterBuilder::most_waiting`]: crate::LimiterBuilder::most_waiting

use std::future::Future;
use std::time::Duration;

use limiter_core::{Decision, Policy, Receipt};

use super::settle::{Owned, Refund};
use crate::counts::Counts;
use crate::waiting::Waiting;
use crate::{Front, Limiter};

/// A place taken ahead: given back (refunded) unless the request waited its turn.
struct Place<'l, F: Front> {
    limiter: &'l Limiter<F>,
    refund: Option<Refund<F>>,
}

impl<F: Front> Drop for Place<'_, F> {
    fn drop(&mut self) {
        // The request went away while it waited: its tokens go back.
        if let Some(refund) = self.refund.take() {
            drop(give_back(self.limiter, refund));
        }
    }
}

/// Gives `refund` back whatever becomes of the request that asks: at once where the store
/// answers at once (memory), else in a task of the runtime's, which the request's going
/// away does not stop — its handle, to await it. Without a runtime (it is shutting down) a
/// networked store keeps the place until its token is back.
fn give_back<F: Front>(
    limiter: &Limiter<F>,
    refund: Refund<F>,
) -> Option<tokio::task::JoinHandle<()>> {
    let limiter = limiter.clone();
    let mut giving = Box::pin(async move { refund.give_back_all(&limiter).await });
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    if giving.as_mut().poll(&mut cx).is_ready() {
        return None;
    }
    let runtime = tokio::runtime::Handle::try_current().ok()?;
    Some(runtime.spawn(giving))
}

/// What a delayed admission says once its wait is over: nothing left, and its token's
/// interval until the next comes back (not the wait it no longer has).
pub(crate) fn after_the_wait(decision: Decision, policy: &Policy) -> Decision {
    let interval = Duration::from_nanos(policy.emission_interval_ns());
    Decision::allow(decision.limit(), 0, interval)
}

/// A place of the limit (its id) in the line while it lives.
struct InLine<'w>(&'w Waiting, u64);

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        self.0.give(self.1);
    }
}

/// Waits `delay` for the turn of a request its limits admitted ahead (`charges`,
/// counted as `receipt` says). `false` when the queue is full: the place is given back
/// and the request is to be refused.
pub(crate) async fn wait_turn<F: Front>(
    limiter: &Limiter<F>,
    delay: Duration,
    charges: Vec<Owned>,
    receipt: Receipt,
) -> bool {
    // The place is the limit's that delays it.
    let id = charges
        .iter()
        .find(|(limit, _, _)| limit.policy().delay().is_some())
        .map_or(0, |(limit, _, _)| limit.id());
    // Unconditional: a place given back is given back whatever the response.
    let refund = Refund::new(vec![(charges, receipt, Counts::<F>::Always)]);
    let waiting = &limiter.http().waiting;
    if !waiting.take(id, limiter.http().most_waiting) {
        // Back before the refusal answers (its fields say where the limits stand then),
        // and back all the same if the request goes meanwhile.
        if let Some(giving) = give_back(limiter, refund) {
            let _ = giving.await;
        }
        return false;
    }
    let _in_line = InLine(waiting, id);
    let mut place = Place {
        limiter,
        refund: Some(refund),
    };
    tokio::time::sleep(delay).await;
    // Its turn: the place is the request's now.
    place.refund = None;
    true
}
