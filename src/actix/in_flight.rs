//! `#[concurrency_limit(4, key = "user")]` at run time: a slot per request of the client,
//! taken before its rate limits are decided and held until its response's body is sent —
//! or dropped: a panic's unwinding, a client that went away, a streaming body cut short all
//! give it back, since the slot is a guard that gives itself back when dropped.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::web::Bytes;
use actix_web::{HttpMessage, HttpRequest, HttpResponse};

use super::fields::Headers;
use super::HandlerLimits;
use crate::{Decision, Limiter, NoSlot, SlotGuard};
use limiter_http::plumbing::{count, Outcome};
use limiter_http::Field;

/// The slots a request holds, with what its response's fields say of them.
pub(crate) struct Slots {
    guards: Vec<SlotGuard>,
    /// `RateLimit-Policy` and `RateLimit` members, one per concurrency limit.
    fields: Option<(String, String)>,
}

impl Slots {
    /// Holds nothing: a handler without concurrency limits.
    pub(crate) fn none() -> Slots {
        Slots {
            guards: Vec::new(),
            fields: None,
        }
    }

    /// Lends the slots to `req` while the services a middleware wraps run: a refusal among
    /// them gives them back before it awaits its body ([`WrappingSlots::give_back`]).
    /// [`take_back`](Self::take_back) from the returned loan has them again, if still held.
    pub(crate) fn lend_to(&mut self, req: &HttpRequest) -> WrappingSlots {
        if self.guards.is_empty() {
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
        lent.0.borrow_mut().append(&mut self.guards);
        lent
    }

    /// The slots of `loan` still held: this middleware's, and those of the ones inside it
    /// (given back with the response's body, or dropped with these slots if the wrapped
    /// services failed).
    pub(crate) fn take_back(mut self, loan: &WrappingSlots) -> Slots {
        self.guards.append(&mut loan.0.borrow_mut());
        self
    }

    /// Puts the slots' fields on `response` and ties the slots to its body: given back
    /// when the body is sent, or dropped.
    #[inline]
    pub(crate) fn hold_until_sent(self, response: HttpResponse, headers: bool) -> HttpResponse {
        match self.guards.is_empty() && self.fields.is_none() {
            true => response,
            false => self.hold(response, headers),
        }
    }

    /// [`hold_until_sent`](Self::hold_until_sent) where there is something to hold: out of
    /// line, so that a handler without concurrency limits moves its response nowhere.
    #[inline(never)]
    fn hold(self, mut response: HttpResponse, headers: bool) -> HttpResponse {
        if let (true, Some((policy, state))) = (headers, &self.fields) {
            let headers = &mut Headers(response.headers_mut());
            limiter_http::append_members(headers, Field::RateLimitPolicy, policy);
            limiter_http::append_members(headers, Field::RateLimit, state);
        }
        let guards = self.guards;
        response.map_body(|_, body| {
            BoxBody::new(HeldBody {
                body,
                guards: Some(guards),
            })
        })
    }
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

/// Takes a slot of every concurrency limit of `limits` for `req`, or the response that
/// refuses it (429, `Retry-After: 1`: a slot is given back when some request of the
/// client ends, which nobody can tell in advance).
pub(crate) async fn take_slots(
    limiter: &Limiter,
    req: &HttpRequest,
    limits: &HandlerLimits,
) -> Result<Slots, HttpResponse> {
    if limits.in_flight.is_empty() || limiter_http::pipeline::is_exempt(limiter, req) {
        return Ok(Slots::none());
    }
    let mut guards = Vec::with_capacity(limits.in_flight.len());
    let (mut policy, mut state) = (String::new(), String::new());
    for spec in &limits.in_flight {
        let key = spec
            .key
            .key_for(req, limiter.http())
            .await
            .map_err(|error| limiter_http::pipeline::key_failure(limiter, limits, &error))?;
        match limiter.acquire(&spec.limit, key.as_bytes()).await {
            Ok(guard) => {
                count(spec.limit.scope(), Outcome::Allowed);
                guards.push(guard);
            }
            Err(NoSlot::Full) => {
                count(spec.limit.scope(), Outcome::Rejected);
                tracing::debug!(
                    scope = spec.limit.scope(),
                    key = %spec.key.kind(),
                    "rate limit: a request over its concurrency limit"
                );
                // The guards taken so far go with `guards`: given back now.
                let decision = Decision::reject(spec.limit.max().get(), Duration::from_secs(1));
                let mut response =
                    limiter_http::pipeline::rejection(limiter, None, &spec.name, decision);
                let headers = &mut Headers(response.headers_mut());
                limiter_http::concurrency_refused(headers, &spec.name, spec.limit.max().get());
                return Err(response);
            }
            Err(NoSlot::Unavailable) => {
                count(spec.limit.scope(), Outcome::StoreError);
                return Err(limiter_http::pipeline::failure(
                    limiter,
                    Some(limits),
                    limiter_http::Failure::StoreUnavailable,
                ));
            }
        }
        if !policy.is_empty() {
            policy.push_str(", ");
            state.push_str(", ");
        }
        policy.push_str(&spec.policy_member());
        state.push_str(&limiter_http::concurrency_member(
            &spec.name,
            remaining(&guards),
        ));
    }
    Ok(Slots {
        guards,
        fields: Some((policy, state)),
    })
}

/// The slots left of the last limit after its slot was taken, as far as known.
fn remaining(guards: &[SlotGuard]) -> u32 {
    guards.last().map_or(0, SlotGuard::left)
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
