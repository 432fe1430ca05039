//! `delay = "2s"` at run time: a request a token bucket admitted ahead of its tokens waits
//! for them — asleep on the runtime's timer, never holding a worker thread — then runs.
//! Waiting requests are bounded in total ([`LimiterBuilder::most_waiting`]); per key the
//! delay bounds them (a bucket holds at most `delay / interval` places ahead). A request
//! that goes away while it waits gives its place back: its tokens are refunded, exactly, as
//! its receipt says. A full queue answers 429 at once, its place given back too.
//!
//! [`LimiterBuilder::most_waiting`]: crate::LimiterBuilder::most_waiting

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
        if let Some(refund) = self.refund.take() {
            // The request went away while it waited: its tokens go back, in the
            // runtime's time (the request's own future is gone).
            let limiter = self.limiter.clone();
            actix_web::rt::spawn(async move {
                refund.take_back(&limiter, StatusCode::OK).await;
            });
        }
    }
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
