//! A limiter following what Redis stores for the fleet (`PREFIX:overrides` and the tools'
//! resets): the store reads it and hands each reading here, where what changed is applied
//! — a stored policy set as [`set_policy`](Limiter::set_policy) would, one removed taken
//! back to the policy the scope had before, a reset forgetting remembered rejections.

use std::collections::HashMap;

use super::{Limiter, WeakLimiter};
use crate::store::{Reading, Stored};
use crate::Policy;

/// What one limiter knows of the stored overrides between readings.
pub(super) struct Following {
    limiter: WeakLimiter,
    /// The resets counter last read (`Some(None)`: read, and absent).
    generation: Option<Option<i64>>,
    /// Scope → the text applied, and the policy the scope had before the first one.
    applied: HashMap<String, (String, Option<Policy>)>,
    /// Scope → a text reported as not a policy (reported once).
    reported: HashMap<String, String>,
}

impl Following {
    pub(super) fn new(limiter: WeakLimiter) -> Following {
        Following {
            limiter,
            generation: None,
            applied: HashMap::new(),
            reported: HashMap::new(),
        }
    }

    /// Applies a reading (`None`: it failed, and what was applied stays). `false` once the
    /// limiter is gone: nobody follows any more.
    pub(super) fn take(&mut self, reading: Option<Reading>) -> bool {
        let Some(limiter) = self.limiter.upgrade() else {
            return false;
        };
        if let Some(reading) = reading {
            self.apply_all(&limiter, reading);
        }
        true
    }

    fn apply_all(&mut self, limiter: &Limiter, reading: Reading) {
        // A reset made by a tool (`reset_everywhere`): what this instance remembers of
        // rejections may be of the client reset. The first reading has no baseline:
        // forgetting costs only a few checks in the store.
        if self
            .generation
            .is_none_or(|seen| seen != reading.generation)
        {
            limiter.forget_remembered();
        }
        self.generation = Some(reading.generation);
        let mut seen = Vec::with_capacity(reading.stored.len());
        for (scope, read) in reading.stored {
            seen.push(scope.clone());
            self.apply(limiter, scope, read);
        }
        let gone: Vec<String> = self
            .applied
            .keys()
            .filter(|scope| !seen.contains(scope))
            .cloned()
            .collect();
        for scope in gone {
            if let Some((_, before)) = self.applied.remove(&scope) {
                match before {
                    Some(policy) => limiter.set_policy(&scope, policy),
                    None => limiter.clear_policy(&scope),
                }
                tracing::warn!(
                    scope = scope.as_str(),
                    "rate limit: a policy removed from Redis is taken back"
                );
            }
        }
    }

    /// Applies the stored `text` to `scope` if it is new and a policy; a text that is not
    /// one is reported once, and the last good policy stays.
    fn apply(&mut self, limiter: &Limiter, scope: String, (text, read): Stored) {
        if self
            .applied
            .get(&scope)
            .is_some_and(|(applied, _)| *applied == text)
        {
            return;
        }
        match read {
            Ok(policy) => {
                let before = match self.applied.remove(&scope) {
                    Some((_, before)) => before,
                    None => limiter.policy(&scope),
                };
                limiter.set_policy(&scope, policy);
                tracing::warn!(
                    scope = scope.as_str(),
                    %policy,
                    "rate limit: a policy stored in Redis is applied"
                );
                self.applied.insert(scope, (text, before));
            }
            Err(error) => {
                if self.reported.get(&scope) != Some(&text) {
                    tracing::warn!(
                        scope = scope.as_str(),
                        "rate limit: the override stored in Redis is left out ({error}); \
                         the last good policy stays"
                    );
                    self.reported.insert(scope, text);
                }
            }
        }
    }
}
