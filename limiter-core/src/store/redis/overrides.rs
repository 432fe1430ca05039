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
use crate::{Policy, StoreError};

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

    /// Stores `policy` for `scope` in `PREFIX:overrides`: every limiter over this Redis (and
    /// prefix) applies it within its reading interval.
    pub async fn set_override(&self, scope: &str, policy: &Policy) -> Result<(), StoreError> {
        // A policy that names no algorithm is stored without one, so that each declared
        // limit keeps its own (as with `set_policy`).
        let text = policy.to_string();
        let text = match policy.names_algorithm() {
            true => text.as_str(),
            false => text.split(", ").next().unwrap_or_default(),
        };
        let mut command = redis::cmd("HSET");
        command.arg(self.overrides_key()).arg(scope).arg(text);
        self.query::<i64>(command).await.map(drop)
    }

    /// Removes `scope`'s stored policy: every limiter goes back to the declared limit.
    pub async fn clear_override(&self, scope: &str) -> Result<(), StoreError> {
        let mut command = redis::cmd("HDEL");
        command.arg(self.overrides_key()).arg(scope);
        self.query::<i64>(command).await.map(drop)
    }

    /// The policies stored for scopes, as text (what an operator wrote), sorted by scope.
    pub async fn overrides(&self) -> Result<Vec<(String, String)>, StoreError> {
        let mut command = redis::cmd("HGETALL");
        command.arg(self.overrides_key());
        let mut stored: Vec<(String, String)> = self.query(command).await?;
        stored.sort();
        Ok(stored)
    }

    /// The name of the counter of resets: every reset counts one, and every limiter over
    /// the store that sees it move forgets the rejections it remembers.
    pub(super) fn resets_key(&self) -> String {
        format!("{}:resets", self.inner.prefix)
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
            let resets = store.resets_key();
            let mut generation: Option<Option<i64>> = None;
            let mut applied: HashMap<String, Policy> = HashMap::new();
            let mut reported: HashMap<String, String> = HashMap::new();
            loop {
                tokio::time::sleep(every).await;
                let Some(limiter) = limiter.upgrade() else {
                    return;
                };
                // A reset made elsewhere (another instance, a tool): what this instance
                // remembers of rejections may be of the client reset.
                let mut get = redis::cmd("GET");
                get.arg(&resets);
                if let Ok(Ok(now)) = tokio::time::timeout(
                    every.max(DEFAULT_EVERY),
                    store.inner.connection.query::<Option<i64>>(&get),
                )
                .await
                {
                    // The first reading has no baseline: what was remembered before it may
                    // predate a reset (forgetting costs only a few store checks).
                    if generation.is_none_or(|seen| seen != now) {
                        limiter.forget_remembered();
                    }
                    generation = Some(now);
                }
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
