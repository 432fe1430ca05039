//! `#[concurrency_limit(4, key = "user")]` at run time: a slot per request of the client,
//! taken before its rate limits are decided and held until its response's body is sent —
//! or dropped: a panic's unwinding, a client that went away, a streaming body cut short all
//! give it back, since the slot is a guard that gives itself back when dropped.

use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::web::Bytes;
use actix_web::{HttpMessage, HttpRequest, HttpResponse};
pub(crate) use limiter_http::pipeline::{take_slots, Slots};

use super::fields::Headers;
use crate::SlotGuard;

/// What actix does with a request's slots (taken by the shared
/// [`take_slots`](limiter_http::pipeline::take_slots)): lends them to the services a
/// middleware wraps, and ties them to the response's body.
pub(crate) trait HeldSlots: Sized {
    /// Lends the slots to `req` while the services a middleware wraps run: a refusal among
    /// them gives them back before it awaits its body ([`WrappingSlots::give_back`]).
    /// [`take_back`](Self::take_back) from the returned loan has them again, if still held.
    fn lend_to(&mut self, req: &HttpRequest) -> WrappingSlots;

    /// The slots of `loan` still held: this middleware's, and those of the ones inside it
    /// (given back with the response's body, or dropped with these slots if the wrapped
    /// services failed).
    fn take_back(self, loan: &WrappingSlots) -> Self;

    /// Puts the slots' fields on `response` and ties the slots to its body: given back
    /// when the body is sent, or dropped.
    fn hold_until_sent(self, response: HttpResponse, headers: bool) -> HttpResponse;
}

impl HeldSlots for Slots {
    fn lend_to(&mut self, req: &HttpRequest) -> WrappingSlots {
        if self.guards_mut().is_empty() {
            return WrappingSlots::default();
        }
        let mut extensions = req.extensions_mut();
        let lent = match extensions.get::<WrappingSlots>() {
            Some(lent) => lent.clone(),
            None => {
                let lent = WrappingSlots::default();
                extensions.insert(lent.clone());
                lent
            }
        };
        lent.0.borrow_mut().append(self.guards_mut());
        lent
    }

    fn take_back(mut self, loan: &WrappingSlots) -> Slots {
        self.guards_mut().append(&mut loan.0.borrow_mut());
        self
    }

    #[inline]
    fn hold_until_sent(self, response: HttpResponse, headers: bool) -> HttpResponse {
        match self.is_empty() {
            true => response,
            false => hold(self, response, headers),
        }
    }
}

/// [`HeldSlots::hold_until_sent`] where there is something to hold: out of line, so that a
/// handler without concurrency limits moves its response nowhere.
#[inline(never)]
fn hold(slots: Slots, mut response: HttpResponse, headers: bool) -> HttpResponse {
    if headers {
        slots.write_fields(&mut Headers(response.headers_mut()));
    }
    let guards = slots.into_guards();
    response.map_body(|_, body| {
        BoxBody::new(HeldBody {
            body,
            guards: Some(guards),
        })
    })
}

/// The slots the concurrency middlewares around a request hold for it, where a refusal
/// inside them finds them.
#[derive(Clone, Default)]
pub(crate) struct WrappingSlots(std::rc::Rc<std::cell::RefCell<Vec<SlotGuard>>>);

impl WrappingSlots {
    /// Gives back the slots the middlewares around `req` hold for it: it is refused, and
    /// its body may be slow to come.
    pub(crate) fn give_back(req: &HttpRequest) {
        if let Some(lent) = req.extensions().get::<WrappingSlots>() {
            lent.0.borrow_mut().clear();
        }
    }
}

/// A response body that holds slots until it has been sent, or is dropped.
struct HeldBody {
    body: BoxBody,
    guards: Option<Vec<SlotGuard>>,
}

impl MessageBody for HeldBody {
    type Error = Box<dyn std::error::Error>;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        let polled = Pin::new(&mut self.body).poll_next(cx);
        if let Poll::Ready(None) = polled {
            // Sent: the slots go back now, not when the connection's next request comes.
            self.guards = None;
        }
        polled
    }
}
