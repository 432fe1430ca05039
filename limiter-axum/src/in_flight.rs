//! `#[concurrency_limit]` on axum, at run time: the slots the shared pipeline took for a
//! request ([`take_slots`](limiter_http::pipeline::take_slots)) are held by its response's
//! body until that is sent — or dropped: a panic's unwinding, a client that went away, a
//! streaming body cut short all give them back, since a slot is a guard that gives itself
//! back when dropped.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http_body::{Frame, SizeHint};
use limiter_core::SlotGuard;
use limiter_http::pipeline::Slots;

use crate::fields::Headers;

/// Puts the slots' fields on `response` (`headers`: the IETF fields are on) and ties the
/// slots to its body: given back when the body is sent, or dropped.
#[inline(never)]
pub(crate) fn hold_until_sent(slots: Slots, mut response: Response, headers: bool) -> Response {
    if headers {
        slots.write_fields(&mut Headers(response.headers_mut()));
    }
    let guards = slots.into_guards();
    response.map(|body| {
        Body::new(HeldBody {
            body,
            guards: Some(guards),
        })
    })
}

/// A response body that holds slots until it has been sent, or is dropped.
struct HeldBody {
    body: Body,
    guards: Option<Vec<SlotGuard>>,
}

impl http_body::Body for HeldBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if let Poll::Ready(None) = polled {
            // Sent: the slots go back now, not when the connection's next request comes.
            self.guards = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
