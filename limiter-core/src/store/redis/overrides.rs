//! Acting without a deploy: policies stored in Redis, which every instance of the fleet
//! follows. The hash `PREFIX:overrides` maps a scope to a policy as text (`"10 per 1m"`, see
//! [`Policy`'s `FromStr`](crate::Policy#impl-FromStr-for-Policy)); each limiter over this
//! store reads it every second (by default) and sets what changed with
//! [`set_policy`](crate::Limiter::set_policy), or takes back with
//! [`clear_policy`](crate::Limiter::clear_policy) what was removed.

use std::collections::HashMap;
use std::time::Duration;

use super::RedisStore;
use crate::limiter::WeakLimiter;
use crate::Policy;

/// How often a limiter reads the overrides, unless told otherwise.
pub(super) const DEFAULT_EVERY: Duration = Duration::from_secs(1);

impl RedisStore {
    /// How often a limiter over this store reads the policies stored in Redis under
    /// `PREFIX:overrides` (default every second; `None`: never). Whatever an operator sets
    /// there — `redis-cli HSET limiter:overrides login "10 per 1m"` — every instance applies
    /// within that time, as [`set_policy`](crate::Limiter::set_policy) would; a scope
    /// removed from the hash goes back to its declared limit
    /// ([`clear_policy`](crate::Limiter::clear_policy)). A text that is not a policy is
    /// reported once as a `warn` event and left out; while Redis is away, what was applied
    /// stays.
    pub fn overrides_every(self, every: Option<Duration>) -> RedisStore {
        self.map(|inner| inner.overrides_every = every)
    }

    /// The name of the hash of overrides.
    pub(super) fn overrides_key(&self) -> String {
        format!("{}:overrides", self.inner.prefix)
    }

    /// Starts reading the overrides for `limiter`, on the store's own thread, until the
    /// limiter is gone.
    pub(crate) fn follow_overrides(&self, limiter: WeakLimiter) {
        let Some(every) = self.inner.overrides_every else {
            return;
        };
        let store = self.clone();
        self.inner.runtime.spawn(async move {
            let name = store.overrides_key();
            let mut applied: HashMap<String, Policy> = HashMap::new();
            let mut reported: HashMap<String, String> = HashMap::new();
            loop {
                tokio::time::sleep(every).await;
                let Some(limiter) = limiter.upgrade() else {
                    return;
                };
                let mut command = redis::cmd("HGETALL");
                command.arg(&name);
                let read = store.inner.connection.query(&command);
                let Ok(Ok(stored)) = tokio::time::timeout(every.max(DEFAULT_EVERY), read).await
                else {
                    continue;
                };
                let stored: HashMap<String, String> = stored;
                for (scope, text) in &stored {
                    match text.parse::<Policy>() {
                        Ok(policy) if applied.get(scope) != Some(&policy) => {
                            limiter.set_policy(scope, policy);
                            applied.insert(scope.clone(), policy);
                            tracing::info!(
                                scope = scope.as_str(),
                                %policy,
                                "rate limit: a policy stored in Redis is applied"
                            );
                        }
                        Ok(_) => {}
                        Err(error) if reported.get(scope) != Some(text) => {
                            tracing::warn!(
                                scope = scope.as_str(),
                                key = name.as_str(),
                                "rate limit: the override stored in Redis is left out: {error}"
                            );
                            reported.insert(scope.clone(), text.clone());
                        }
                        Err(_) => {}
                    }
                }
                applied.retain(|scope, _| {
                    let kept = stored.contains_key(scope);
                    if !kept {
                        limiter.clear_policy(scope);
                        tracing::info!(
                            scope = scope.as_str(),
                            "rate limit: a policy removed from Redis is taken back"
                        );
                    }
                    kept
                });
            }
        });
    }
}
