//! Acting without a deploy: policies stored in Redis, which every instance of the fleet
//! follows. The hash `PREFIX:overrides` maps a scope to a policy as text (`"10 per 1m"`, see
//! [`Policy`'s `FromStr`](crate::Policy#impl-FromStr-for-Policy)); each limiter over this
//! store reads it every second (by default) and hands the reading to the limiter, which
//! sets what changed as [`set_policy`](crate::Limiter::set_policy) would, and takes back
//! what was removed.

use std::time::Duration;

use super::RedisStore;
use crate::{Limit, Policy, StoreError};

/// How often a limiter reads the overrides, unless told otherwise.
pub(super) const DEFAULT_EVERY: Duration = Duration::from_secs(1);
/// The shortest interval: a tighter one would flood Redis with readings.
const MIN_EVERY: Duration = Duration::from_millis(10);
/// The most scopes read from the hash, and the longest text of each: a hash filled by
/// mistake must not stall the store's thread.
const MOST_OVERRIDES: usize = 1_000;
const MOST_TEXT: usize = 200;

impl RedisStore {
    /// How often a limiter over this store reads the policies stored in Redis under
    /// `PREFIX:overrides` and the count of tools' resets (at start, then every second by
    /// default, at least every 10 ms; `None`: never — neither overrides nor tools' resets
    /// reach it). Whatever an operator sets there — `redis-cli HSET limiter:overrides login
    /// "10 per 1m"` — every instance applies within that time, as
    /// [`set_policy`](crate::Limiter::set_policy) would (a `warn` event each); a scope
    /// removed from the hash goes back to the policy it had before (its declared limit,
    /// or the one configuration set). A text that is not a policy is reported once and left
    /// out, the last good policy staying; while Redis is away, what was applied stays (a
    /// `warn` after three failed readings). At most 1,000 scopes are read. Whoever can write
    /// the hash sets the fleet's limits: give the service's Redis user read access to it
    /// only (an ACL), and keep an eviction policy that spares keys without expiry
    /// (`volatile-*` or `noeviction`).
    pub fn overrides_every(self, every: Option<Duration>) -> RedisStore {
        self.map(|inner| inner.overrides_every = every)
    }

    /// Stores `policy` for `scope` in `PREFIX:overrides`: every limiter over this Redis (and
    /// prefix) applies it within its reading interval.
    pub async fn set_override(&self, scope: &str, policy: &Policy) -> Result<(), StoreError> {
        // A policy that names no algorithm is stored without one, so that each declared
        // limit keeps its own (as with `set_policy`).
        let text = policy.to_string();
        let algorithm = policy.algorithm().name();
        let text = match policy.names_algorithm() {
            true => text,
            false => text
                .split(", ")
                .filter(|part| *part != algorithm)
                .collect::<Vec<_>>()
                .join(", "),
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

    /// Forgets `key`'s state under `limit` in Redis, as [`Store::reset`](crate::Store::reset),
    /// and counts one in `PREFIX:resets`: every limiter over the store forgets the
    /// rejections it remembers within its reading interval, so that the client is admitted
    /// on every instance — what an operator's tool needs (an instance's own
    /// [`Limiter::reset`](crate::Limiter::reset) leaves the other instances' remembered
    /// rejections to end by themselves, so that a client cannot empty every cache).
    pub async fn reset_everywhere(&self, limit: &Limit, key: &[u8]) -> Result<(), StoreError> {
        let mut delete = redis::cmd("DEL");
        let name = self.key_name(limit, key);
        delete.arg(super::block_key_name(&name)).arg(name);
        self.query::<i64>(delete).await?;
        let mut count = redis::cmd("INCR");
        count.arg(self.resets_key());
        self.query::<i64>(count).await.map(drop)
    }

    /// The name of the counter of tools' resets.
    fn resets_key(&self) -> String {
        format!("{}:resets", self.inner.prefix)
    }

    /// The name of the hash of overrides.
    pub(super) fn overrides_key(&self) -> String {
        format!("{}:overrides", self.inner.prefix)
    }

    /// Reads the overrides and the tools' resets on the store's own thread, at once and
    /// then every interval, and hands each reading to `take` (`None`: that reading failed),
    /// until `take` says nobody follows any more. The store only reads: what a reading
    /// changes is the limiter's to apply.
    pub(crate) fn follow_overrides(
        &self,
        mut take: impl FnMut(Option<Reading>) -> bool + Send + 'static,
    ) {
        let Some(every) = self.inner.overrides_every else {
            return;
        };
        let every = every.max(MIN_EVERY);
        let mut reader = Reader {
            store: self.clone(),
            failures: 0,
            readings: 0,
        };
        self.inner.runtime.spawn(async move {
            loop {
                let reading = reader.read(every.max(DEFAULT_EVERY)).await;
                if !take(reading) {
                    return;
                }
                tokio::time::sleep(every).await;
            }
        });
    }
}

/// One reading of what Redis stores for the fleet: the count of tools' resets, and the
/// overrides, each scope with its text and its policy (or why it is left out).
pub(crate) struct Reading {
    /// The resets counter (`None`: absent).
    pub(crate) generation: Option<i64>,
    /// Scope, and its stored text read.
    pub(crate) stored: Vec<(String, Stored)>,
}

/// A stored override: its text, and its policy or why it is left out.
pub(crate) type Stored = (String, Result<Policy, String>);

/// What the reader of one limiter knows between readings.
struct Reader {
    store: RedisStore,
    /// Readings failed in a row.
    failures: u32,
    /// Readings made, for what is done every so many.
    readings: u64,
}

/// Every so many readings, the registry of limits is written again (see
/// `RedisStore::register_again`).
const REGISTER_EVERY: u64 = 60;

impl Reader {
    async fn read(&mut self, timeout: Duration) -> Option<Reading> {
        let connection = &self.store.inner.connection;
        let mut get = redis::cmd("GET");
        get.arg(self.store.resets_key());
        let mut all = redis::cmd("HGETALL");
        all.arg(self.store.overrides_key());
        let generation = tokio::time::timeout(timeout, connection.query::<Option<i64>>(&get));
        let stored =
            tokio::time::timeout(timeout, connection.query::<Vec<(Vec<u8>, Vec<u8>)>>(&all));
        let (Ok(Ok(generation)), Ok(Ok(stored))) = (generation.await, stored.await) else {
            self.failures = self.failures.saturating_add(1);
            if self.failures == 3 {
                tracing::warn!(
                    key = self.store.overrides_key().as_str(),
                    "rate limit: the overrides and resets stored in Redis cannot be read; \
                     what was applied stays"
                );
            }
            return None;
        };
        self.failures = 0;
        self.readings += 1;
        if self.readings.is_multiple_of(REGISTER_EVERY) {
            self.store.register_again().await;
        }
        let stored = stored
            .into_iter()
            .take(MOST_OVERRIDES)
            .map(|(scope, text)| {
                (
                    String::from_utf8_lossy(&scope).into_owned(),
                    read_override(&text),
                )
            })
            .collect();
        Some(Reading { generation, stored })
    }
}

/// A stored override as text (cut to [`MOST_TEXT`] bytes, for the reports) and its policy,
/// or why it is left out: a value longer than any policy's text, or not UTF-8, is refused
/// whole — never a prefix of it parsed, which could be another valid policy.
fn read_override(raw: &[u8]) -> Stored {
    let text = String::from_utf8_lossy(&raw[..raw.len().min(MOST_TEXT)]).into_owned();
    let read = if raw.len() > MOST_TEXT {
        Err(format!(
            "{} bytes, longer than the {MOST_TEXT} a policy's text takes",
            raw.len()
        ))
    } else {
        match std::str::from_utf8(raw) {
            Ok(whole) => whole.parse::<Policy>().map_err(|error| error.to_string()),
            Err(_) => Err("not UTF-8 text".to_string()),
        }
    };
    (text, read)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn an_over_long_or_broken_value_is_refused_whole() {
        let long = format!("{}10 per 1h30m", " ".repeat(191));
        assert!(long.len() > MOST_TEXT);
        assert!(
            read_override(long.as_bytes()).1.is_err(),
            "a cut value parsed"
        );
        assert!(read_override(b"10 per 1m\xff").1.is_err());
        assert_eq!(
            read_override(b"10 per 1m").1,
            Ok("10 per 1m".parse::<Policy>().unwrap())
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Never a panic; a value is read only whole, and then as the parser reads it.
        #[test]
        fn a_stored_value_is_its_whole_policy_or_refused(raw in proptest::collection::vec(any::<u8>(), 0..400)) {
            let (_, read) = read_override(&raw);
            if let Ok(policy) = read {
                prop_assert!(raw.len() <= MOST_TEXT);
                prop_assert_eq!(std::str::from_utf8(&raw).unwrap().parse::<Policy>().ok(), Some(policy));
            }
        }
    }
}
