//! Before the four stages, where a handler has `#[concurrency_limit]`s: a slot of each for
//! the request's client, taken before its rate limits are decided (a request over its
//! concurrency limit takes nothing from its rates) and held by the front end until its
//! response's body is sent — or dropped, since a slot is a guard that gives itself back.

use std::time::Duration;

use limiter_core::{Decision, NoSlot, SlotGuard};

use super::Respond;
use crate::headers::{Field, FieldMap};
use crate::limits::HandlerLimits;
use crate::observe::{count, Outcome};
use crate::Limiter;

/// The slots a request holds, with what its response's fields say of them.
#[derive(Debug, Default)]
pub struct Slots {
    guards: Vec<SlotGuard>,
    /// `RateLimit-Policy` and `RateLimit` members, one per concurrency limit.
    fields: Option<(String, String)>,
}

impl Slots {
    /// Holds nothing: a handler without concurrency limits.
    pub fn none() -> Slots {
        Slots::default()
    }

    /// Whether there is nothing to hold or to say: its response goes as it is.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.guards.is_empty() && self.fields.is_none()
    }

    /// The guards, for a front end that lends them to the services it wraps.
    pub fn guards_mut(&mut self) -> &mut Vec<SlotGuard> {
        &mut self.guards
    }

    /// Adds the slots' members to the response's `RateLimit-Policy` and `RateLimit`, after
    /// those of its rate limits.
    pub fn write_fields<M: FieldMap>(&self, headers: &mut M) {
        if let Some((policy, state)) = &self.fields {
            crate::append_members(headers, Field::RateLimitPolicy, policy);
            crate::append_members(headers, Field::RateLimit, state);
        }
    }

    /// The guards, for the response's body to hold until it is sent.
    pub fn into_guards(self) -> Vec<SlotGuard> {
        self.guards
    }
}

/// Takes a slot of every concurrency limit of `limits` for `req`, or the response that
/// refuses it (429, `Retry-After: 1`: a slot is given back when some request of the
/// client ends, which nobody can tell in advance; 503 where the store failed closed).
pub async fn take_slots<F: Respond>(
    limiter: &Limiter<F>,
    req: &F::Request,
    limits: &HandlerLimits<F>,
) -> Result<Slots, F::Response> {
    if limits.in_flight.is_empty() || super::is_exempt(limiter, req) {
        return Ok(Slots::none());
    }
    let mut guards = Vec::with_capacity(limits.in_flight.len());
    let (mut policy, mut state) = (String::new(), String::new());
    for spec in &limits.in_flight {
        let key = spec
            .key
            .key_for(req, limiter.http())
            .await
            .map_err(|error| super::key_failure(limiter, limits, &error))?;
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
                let mut response = super::rejection(limiter, None, &spec.name, decision);
                let max = spec.limit.max().get();
                crate::concurrency_refused(&mut F::fields_of(&mut response), &spec.name, max);
                return Err(response);
            }
            Err(NoSlot::Unavailable) => {
                count(spec.limit.scope(), Outcome::StoreError);
                return Err(super::failure(
                    limiter,
                    Some(limits),
                    crate::Failure::StoreUnavailable,
                ));
            }
        }
        if !policy.is_empty() {
            policy.push_str(", ");
            state.push_str(", ");
        }
        policy.push_str(&spec.policy_member());
        let left = guards.last().map_or(0, SlotGuard::left);
        state.push_str(&crate::concurrency_member(&spec.name, left));
    }
    Ok(Slots {
        guards,
        fields: Some((policy, state)),
    })
}
