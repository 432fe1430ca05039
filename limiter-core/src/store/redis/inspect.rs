//! What operators' tools read: the limits the fleet's instances use (each instance writes a
//! limit it counts, once, into the hash `PREFIX:limits`), and where a client stands under
//! one of them, read without counting anything.

use std::collections::{HashMap, VecDeque};
use std::time::Duration;

use super::{fresh, RedisStore};
use crate::algorithm::fixed_window::FixedWindow;
use crate::algorithm::sliding_window;
use crate::algorithm::sliding_window_counter::SlidingWindowCounter;
use crate::algorithm::token_bucket::TokenBucket;
use crate::algorithm::Stamp;
use crate::{Algorithm, Concurrency, Decision, Limit, Policy, StoreError};

/// The most limits one instance writes into `PREFIX:limits`: policies chosen per request
/// could be many.
const MOST_REGISTERED: usize = 10_000;

impl RedisStore {
    /// The name of the hash of the limits instances use.
    fn limits_key(&self) -> String {
        format!("{}:limits", self.inner.prefix)
    }

    /// Writes `limit` into `PREFIX:limits` the first time this store counts it (an `HSET`
    /// on the store's thread, not waited for): what [`limits`](Self::limits) lists.
    pub(super) fn register(&self, limit: &Limit) {
        self.register_entry(limit.id(), || {
            format!("{}\t{}", limit.policy(), limit.scope())
        });
    }

    /// Writes the concurrency limit `limit` into `PREFIX:limits` the first time this store
    /// takes one of its slots: what [`concurrency_limits`](Self::concurrency_limits) lists.
    pub(super) fn register_concurrency(&self, limit: &Concurrency) {
        self.register_entry(limit.id(), || format!("{limit}\t{}", limit.scope()));
    }

    /// Writes `id`'s entry (`POLICY \t SCOPE`) the first time, and no more than
    /// [`MOST_REGISTERED`] of them.
    fn register_entry(&self, id: u64, entry: impl FnOnce() -> String) {
        let known = self.inner.registered.load();
        if known.contains_key(&id) || known.len() >= MOST_REGISTERED {
            return;
        }
        drop(known);
        let entry = entry();
        let mut new = false;
        self.inner.registered.rcu(|known| {
            let mut known = HashMap::clone(known);
            new = known.len() < MOST_REGISTERED && known.insert(id, entry.clone()).is_none();
            known
        });
        if !new {
            return;
        }
        let mut command = redis::cmd("HSET");
        command
            .arg(self.limits_key())
            .arg(format!("{id:016x}"))
            .arg(entry);
        let connection = self.inner.connection.clone();
        self.inner.runtime.spawn(async move {
            let _ = connection.query::<i64>(&command).await;
        });
    }

    /// Writes every limit this store registered again: a registry deleted (to prune what no
    /// instance uses any more), flushed or lost in a failover is rebuilt by the instances
    /// that run. Called by a limiter's follower now and then.
    pub(super) async fn register_again(&self) {
        let known = self.inner.registered.load_full();
        if known.is_empty() {
            return;
        }
        let mut command = redis::cmd("HSET");
        command.arg(self.limits_key());
        for (id, entry) in known.iter() {
            command.arg(format!("{id:016x}")).arg(entry);
        }
        let _ = self.inner.connection.query::<i64>(&command).await;
    }

    /// The limits the instances over this Redis (and prefix) have counted with, each with
    /// its scope and policy: what an operator's tool lists, and looks clients up under.
    pub async fn limits(&self) -> Result<Vec<Limit>, StoreError> {
        let mut limits: Vec<Limit> = self
            .registered()
            .await?
            .into_iter()
            .filter_map(|(policy, scope)| Some(Limit::new(scope, policy.parse::<Policy>().ok()?)))
            .collect();
        limits.sort_by(|a, b| (a.scope(), a.id()).cmp(&(b.scope(), b.id())));
        Ok(limits)
    }

    /// The concurrency limits the instances over this Redis (and prefix) have taken slots
    /// under, each with its scope and most in flight.
    pub async fn concurrency_limits(&self) -> Result<Vec<Concurrency>, StoreError> {
        let mut limits: Vec<Concurrency> = self
            .registered()
            .await?
            .into_iter()
            .filter_map(|(most, scope)| {
                let most = most.strip_suffix(" in flight")?.parse().ok()?;
                Concurrency::new(scope, most)
            })
            .collect();
        limits.sort_by(|a, b| (a.scope(), a.max()).cmp(&(b.scope(), b.max())));
        Ok(limits)
    }

    /// Every entry of `PREFIX:limits`: what is counted (a policy, or `N in flight`) and the
    /// scope.
    async fn registered(&self) -> Result<Vec<(String, String)>, StoreError> {
        let mut command = redis::cmd("HGETALL");
        command.arg(self.limits_key());
        let stored: Vec<(String, String)> = self.query(command).await?;
        Ok(stored
            .into_iter()
            .filter_map(|(_, entry)| {
                let (counted, scope) = entry.split_once('\t')?;
                Some((counted.to_string(), scope.to_string()))
            })
            .collect())
    }

    /// Where `key` stands under `limit` now, on the Redis server's clock, with nothing
    /// counted: what it would admit, and when used quota next comes back (a `Retry-After`
    /// when nothing is left) — a penalty's block in force included: a blocked client is
    /// refused until the block ends, whatever its state says, and its status is
    /// [`blocked`](Decision::blocked). Reads the state (a long
    /// sliding log whole: an operator's tool, not a request's path).
    pub async fn status(&self, limit: &Limit, key: &[u8]) -> Result<Decision, StoreError> {
        let decision = self.state_status(limit, key).await?;
        if limit.policy().penalty().is_none() {
            return Ok(decision);
        }
        let mut read = redis::cmd("EVAL");
        read.arg(READ_BLOCK)
            .arg(1)
            .arg(super::block_key_name(&self.key_name(limit, key)));
        let ((secs, micros), raw): ((u64, u64), Option<Vec<u8>>) = self.query(read).await?;
        let now_ms = secs * 1_000 + micros / 1_000;
        Ok(match block_ends(raw.as_deref()) {
            Some(end) if end > now_ms => {
                let left = Duration::from_millis(end - now_ms);
                let wait = decision.retry_after().unwrap_or_default().max(left);
                Decision::reject(decision.limit(), wait).marked_blocked()
            }
            _ => decision,
        })
    }

    /// [`status`](Self::status) as the limit's state alone says it.
    async fn state_status(&self, limit: &Limit, key: &[u8]) -> Result<Decision, StoreError> {
        let name = self.key_name(limit, key);
        let mut kind = redis::cmd("TYPE");
        kind.arg(&name);
        let kind: String = self.query(kind).await?;
        let policy = limit.policy();
        if kind == "list" {
            let (secs, micros): (u64, u64) = self.query(redis::cmd("TIME")).await?;
            let mut range = redis::cmd("LRANGE");
            range.arg(&name).arg(0).arg(-1);
            let instants: Vec<u64> = self.query(range).await?;
            return log_status(&instants, secs * 1_000 + micros / 1_000, policy)
                .ok_or_else(|| StoreError::msg(format!("the log at {name} is not of its limit")));
        }
        // The state, its expiry and the server's clock read at once: a new client's first
        // state is a mark read with its key's expiry (see `fresh.rs`), and a check between
        // two reads could write another state and expiry.
        let mut read = redis::cmd("EVAL");
        read.arg(READ_STATE).arg(1).arg(&name);
        let ((secs, micros), raw, ttl): ((u64, u64), Option<Vec<u8>>, i64) =
            self.query(read).await?;
        let now_ms = secs * 1_000 + micros / 1_000;
        let mut raw = raw.unwrap_or_default();
        if let Some(mark) = mark_of(&raw) {
            let expires = now_ms + u64::try_from(ttl).unwrap_or(0);
            raw = fresh::first_reading(policy, mark, expires)
                .and_then(|at| fresh::first_state(policy, at, 0))
                .map(|(state, _)| state)
                .unwrap_or_default();
        }
        decode(&raw, now_ms, policy)
            .ok_or_else(|| StoreError::msg(format!("the state at {name} is not of its limit")))
    }

    /// Runs one command on the store's thread, within the store's timeout: an operator's
    /// question to a stalled Redis gets an error, not a wait without end.
    pub(super) async fn query<T: redis::FromRedisValue + Send + 'static>(
        &self,
        command: redis::Cmd,
    ) -> Result<T, StoreError> {
        self.command(command)
            .await?
            .map_err(|e| super::failure("Redis did not answer", e))
    }
}

/// A key's value, its expiry (ms, `PTTL`) and the server's clock (`TIME`), in one script.
const READ_STATE: &str =
    "return {redis.call('TIME'), redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}";

/// The server's clock and a client's penalty record (see `check.lua`: when its block ends,
/// in ms, then the starts of its latest blocks).
const READ_BLOCK: &str = "return {redis.call('TIME'), redis.call('GET', KEYS[1])}";

/// When the block of a penalty record ends (ms on the server's clock): its first six bytes,
/// big-endian.
fn block_ends(raw: Option<&[u8]>) -> Option<u64> {
    let raw = raw?.get(..6)?;
    Some(raw.iter().fold(0, |end, &byte| end << 8 | u64::from(byte)))
}

/// The mark a first state written as its key's expiry holds (see `fresh.rs`): an integer of
/// 4 digits at most, where every packed state is 6 bytes or longer.
fn mark_of(raw: &[u8]) -> Option<u64> {
    match raw.len() {
        1..=4 => std::str::from_utf8(raw).ok()?.parse().ok(),
        _ => None,
    }
}

/// A big-endian unsigned integer of `bytes.len()` bytes.
fn be(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |n, &b| (n << 8) | u64::from(b))
}

/// Where a packed state (check.lua's formats) stands at `now_ms`; `None` when it is not of
/// the limit's algorithm.
fn decode(raw: &[u8], now_ms: u64, policy: &Policy) -> Option<Decision> {
    Some(match policy.algorithm() {
        // No state: the algorithm's fresh one.
        Algorithm::FixedWindow if raw.is_empty() => FixedWindow::default().status(now_ms, policy),
        Algorithm::SlidingWindowCounter if raw.is_empty() => {
            SlidingWindowCounter::default().status(now_ms, policy)
        }
        Algorithm::TokenBucket if raw.is_empty() => TokenBucket::default().status(now_ms, policy),
        Algorithm::SlidingWindow if raw.is_empty() => log_status(&[], now_ms, policy)?,
        // '>I6I4': the window's start (ms) and its count.
        Algorithm::FixedWindow if raw.len() == 10 => {
            let start = Stamp::at(be(&raw[..6])).to_bits();
            let state = FixedWindow::from_raw((u64::from(start) << 32) | be(&raw[6..]));
            if !state.plausible(now_ms, policy) {
                return None;
            }
            state.status(now_ms, policy)
        }
        // '>I6I4I4': the window's index and the previous and current counts.
        Algorithm::SlidingWindowCounter if raw.len() == 14 => {
            let window = be(&raw[..6]) & 0xFFFF;
            let (previous, current) = (be(&raw[6..10]), be(&raw[10..]));
            let state = SlidingWindowCounter::from_raw((window << 48) | (previous << 24) | current);
            if !state.plausible(now_ms, policy) {
                return None;
            }
            state.status(now_ms, policy)
        }
        // '>I6I4': the theoretical arrival time in ms and the nanoseconds beyond.
        Algorithm::TokenBucket if raw.len() == 10 => {
            let tat_ns = be(&raw[..6]) * 1_000_000 + be(&raw[6..]);
            let state = TokenBucket::from_raw(tat_ns);
            if !state.plausible(now_ms, policy) {
                return None;
            }
            state.status(now_ms, policy)
        }
        // '>I6' then 'I4' per later instant, as its distance from the oldest.
        Algorithm::SlidingWindow if raw.len() >= 6 && (raw.len() - 6).is_multiple_of(4) => {
            let oldest = be(&raw[..6]);
            let instants: Vec<u64> = std::iter::once(oldest)
                .chain(raw[6..].chunks(4).map(|d| oldest + be(d)))
                .collect();
            log_status(&instants, now_ms, policy)?
        }
        _ => return None,
    })
}

/// Where a log of `instants` stands; `None` for one longer than its limit holds.
fn log_status(instants: &[u64], now_ms: u64, policy: &Policy) -> Option<Decision> {
    if instants.len() > policy.max().get() as usize {
        return None;
    }
    let mut log: VecDeque<Stamp> = instants.iter().map(|&at| Stamp::at(at)).collect();
    Some(sliding_window::status(&mut log, now_ms, policy))
}
