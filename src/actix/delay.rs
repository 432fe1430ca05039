//! `delay = "2s"` at run time: a request a token bucket admitted ahead of its tokens waits
//! for them — asleep on the runtime's timer, never holding a worker thread — then runs.
//! Waiting requests are bounded in total ([`LimiterBuilder::most_waiting`]); per key the
//! delay bounds them (a bucket holds at most `delay / interval` places ahead). A request
//! that goes away while it waits gives its place back: its tokens are refunded, exactly, as
//! its receipt says. A full queue answers 429 at once, its place given back too.
//!
//! [`LimiterBuilder::most_waiting`]: crate::LimiterBuilder::most_waiting

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use actix_web::http::StatusCode;

use super::refund::{Counts, Owned, Refund};
use crate::{Limiter, Receipt};

/// The requests waiting for their turn now, over a limiter.
#[derive(Debug, Default)]
pub(crate) struct Waiting(AtomicUsize);

/// A place taken ahead: given back (refunded) unless the request waited its turn.
struct Place<'l> {
    limiter: &'l Limiter,
    refund: Option<Refund>,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        let Some(refund) = self.refund.take() else {
            return;
        };
        // The request went away while it waited: its tokens go back — at once from memory,
        // else in the runtime's time (the request's own future is gone). Without a runtime
        // (it is shutting down) a networked store keeps the place until its token is back.
        let limiter = self.limiter.clone();
        let mut giving = Box::pin(async move { refund.take_back(&limiter, StatusCode::OK).await });
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        if giving.as_mut().poll(&mut cx).is_pending() {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                drop(runtime.spawn(giving));
            }
        }
    }
}

/// What a delayed admission says once its wait is over: nothing left, and its token's
/// interval until the next comes back (not the wait it no longer has).
pub(crate) fn after_the_wait(decision: crate::Decision, policy: &crate::Policy) -> crate::Decision {
    let interval = Duration::from_nanos(policy.emission_interval_ns());
    crate::Decision::allow(decision.limit(), 0, interval)
}

/// Counts one more waiting request while it lives.
struct InLine<'w>(&'w Waiting);

impl Drop for InLine<'_> {
    fn drop(&mut self) {
        self.0 .0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Never keeps a request counted: the refund of a place is unconditional.
fn never(_: StatusCode) -> bool {
    false
}

impl Limiter {
    /// Waits `delay` for the turn of a request its limits admitted ahead (`charges`,
    /// counted as `receipt` says). `false` when the queue is full: the place is given back
    /// and the request is to be refused.
    pub(crate) async fn wait_turn(
        &self,
        delay: Duration,
        charges: Vec<Owned>,
        receipt: Receipt,
    ) -> bool {
        let refund = Refund::new(vec![(charges, receipt, Counts::When(never))]);
        let waiting = &self.http().waiting;
        let most = self.http().most_waiting;
        if waiting.0.fetch_add(1, Ordering::Relaxed) >= most {
            waiting.0.fetch_sub(1, Ordering::Relaxed);
            refund.take_back(self, StatusCode::OK).await;
            return false;
        }
        let _in_line = InLine(waiting);
        let mut place = Place {
            limiter: self,
            refund: Some(refund),
        };
        tokio::time::sleep(delay).await;
        // Its turn: the place is the request's now.
        place.refund = None;
        true
    }
}
