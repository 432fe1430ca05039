//! The lean path: a handler's one limit, as declared — no exemption, no cost, no policy
//! function, no override, no dry run — which is what most requests take. On a store that
//! answers at once it is decided without a future.

use actix_web::{HttpRequest, HttpResponse};

use super::decide::Decided;
use super::fields::RateLimitFields;
use super::keys::ClientKey;
use super::limits::{HandlerLimits, LimitSpec};
use super::observe::Outcome;
use super::problem::Failure;
use crate::{Decision, Limiter, Verdict};

impl Limiter {
    /// The common case, kept lean: one limit, as declared, nothing to exempt, no cost.
    /// `None` when it does not apply.
    #[inline]
    pub(super) fn lean<'l>(&self, limits: &'l HandlerLimits) -> Option<&'l LimitSpec> {
        match limits.limits.as_slice() {
            [spec]
                if limits.plain
                    && self.http().plain()
                    && self.http().enforcement.of(spec.limit.scope()).is_none()
                    && self.overridden(&spec.limit).is_none() =>
            {
                Some(spec)
            }
            _ => None,
        }
    }

    /// [`decide`](Self::decide) without a future, when the request takes the lean path and
    /// the store answers at once (the memory store always does, a networked store when it
    /// remembers a rejection): what every request on the default setup does. `None`
    /// otherwise, having counted nothing: then `decide` it.
    #[inline]
    pub(crate) fn decide_now(
        &self,
        req: &HttpRequest,
        limits: &HandlerLimits,
    ) -> Option<Result<Decided, HttpResponse>> {
        if self.gives_back_preflight(req, limits) {
            return None;
        }
        let spec = self.lean(limits)?;
        let key = match spec.key.key_of(req, self) {
            Ok(key) => key,
            Err(error) => return Some(Err(self.key_failure(limits, &error))),
        };
        // A check that is not answered at once has not started: dropping it counts nothing.
        let result = self.check(&spec.limit, key.as_bytes()).take_ready()?;
        Some(self.decided_one(limits, spec, &key, result))
    }

    pub(super) async fn decide_one(
        &self,
        req: &HttpRequest,
        limits: &HandlerLimits,
        spec: &LimitSpec,
    ) -> Result<Decided, HttpResponse> {
        let key = match spec.key.key_of(req, self) {
            Ok(key) => key,
            Err(error) => return Err(self.key_failure(limits, &error)),
        };
        let mut check = self.check(&spec.limit, key.as_bytes());
        let result = match check.take_ready() {
            Some(result) => result,
            None => check.await,
        };
        self.decided_one(limits, spec, &key, result)
    }

    /// What the check of a lean request came to.
    // By value: boxing the response would cost every rejected request an allocation.
    #[allow(clippy::result_large_err)]
    fn decided_one(
        &self,
        limits: &HandlerLimits,
        spec: &LimitSpec,
        key: &ClientKey,
        result: Result<Decision, crate::StoreError>,
    ) -> Result<Decided, HttpResponse> {
        let scope = spec.limit.scope();
        match self.verdict(result) {
            Verdict::Decided(decision) if decision.allowed() => {
                spec.counters.add(scope, Outcome::of(&decision));
                Ok(Decided {
                    fields: RateLimitFields::one(decision),
                    refund: None,
                })
            }
            Verdict::Decided(decision) => {
                spec.counters.add(scope, Outcome::of(&decision));
                self.rejection_event(scope, &spec.key.kind(), key, Some(decision));
                Err(self.rejection(
                    Some(limits),
                    Some(&RateLimitFields::one(decision)),
                    &spec.name,
                    decision,
                ))
            }
            Verdict::Unlimited => {
                spec.counters.add(scope, Outcome::StoreError);
                Ok(Decided::undecided())
            }
            Verdict::Unavailable => {
                spec.counters.add(scope, Outcome::StoreError);
                Err(self.failure(Some(limits), Failure::StoreUnavailable))
            }
        }
    }
}
