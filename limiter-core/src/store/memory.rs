//! The in-memory store: sharded, exact under concurrency, bounded, and self-cleaning.

mod fingerprint_table;
mod log;
mod spin_lock;
mod table;

use std::collections::hash_map::RandomState;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::{Check, Limit, Store};
use crate::Decision;
use spin_lock::SpinMutex;
use table::Table;

/// The most shards a store splits its keys over.
const MAX_SHARDS: usize = 64;
/// How often (in clock milliseconds) some request pays for visiting one more shard.
const HOUSEKEEPING_TICK_MS: u64 = 10;

/// Counts requests in this process's memory.
///
/// - **Exact under concurrency**: each check runs under the lock of the one shard its key
///   falls in, so many threads hitting one key admit exactly `N`; keys in other shards do
///   not wait.
/// - **Compact**: a key is a 64-bit fingerprint (SipHash-1-3 keyed with a random secret
///   drawn when the store is made) and its state 8 bytes, so a table entry is 16 bytes; see
///   [`algorithm`](crate::algorithm) for the sliding log's extra. A check of a key the store
///   already holds allocates nothing. Two distinct keys share a budget only if their
///   fingerprints collide: about one chance in 2⁶⁴ per pair, unpredictable to clients since
///   the secret never leaves the process.
/// - **Self-cleaning**: state that no longer counts is dropped as time passes, without any
///   call from you: a window after a key's last request (two for the counter, whose
///   estimate weighs the previous window; for the token bucket, once it is full again). A table is swept when a check finds its last sweep a window old, and
///   every ten milliseconds of clock time one request also visits the next shard, so each
///   shard is looked at while traffic flows even if its own keys went quiet. A silent
///   process does no work, and holds only what it held.
/// - **Bounded**: at most `max_keys` keys (default [`MemoryStore::DEFAULT_MAX_KEYS`]), split
///   evenly over the shards. When a shard is full, clients it already holds keep their
///   exact state — nobody is evicted, so nobody gets a fresh budget — and clients it does
///   not hold yet are counted together as **one** client per limit (the overflow budget)
///   until sweeping makes room. A flood of one-off keys (rotating addresses) therefore
///   costs bounded memory and cannot unlock anyone.
///
/// Clones share the same counts. [`MemoryStore::global`] is the one the process uses by
/// default.
///
/// ```
/// use std::time::Duration;
/// use limiter_core::{Limit, MemoryStore, Policy};
///
/// let store = MemoryStore::new();
/// let limit = Limit::new("login", Policy::new(2, Duration::from_secs(60))?);
/// let now = Duration::from_secs(100);
/// assert!(store.check_at(&limit, b"203.0.113.7", now).allowed());
/// assert!(store.check_at(&limit, b"203.0.113.7", now).allowed());
/// let third = store.check_at(&limit, b"203.0.113.7", now);
/// assert_eq!(third.retry_after(), Some(Duration::from_secs(60)));
/// assert_eq!(store.len(), 1);
/// # Ok::<(), limiter_core::PolicyError>(())
/// ```
#[derive(Clone)]
pub struct MemoryStore {
    inner: Arc<Inner>,
}

struct Inner {
    secret: RandomState,
    shards: Box<[Padded<SpinMutex<Shard>>]>,
    shard_mask: usize,
    keys_per_shard: usize,
    max_keys: usize,
    next_housekeeping: AtomicU64,
    housekeeping_cursor: AtomicUsize,
}

/// Keeps each shard's lock on cache lines of its own, so that threads working on different
/// shards do not slow each other down.
#[repr(align(128))]
struct Padded<T>(T);

#[derive(Default)]
struct Shard {
    tables: Vec<Table>,
    keys: usize,
}

impl Shard {
    /// The table of `limit`, made on its first use in this shard.
    #[inline]
    fn table<'t>(tables: &'t mut Vec<Table>, limit: &Limit, now_ms: u64) -> &'t mut Table {
        let id = limit.id();
        let position = match tables.iter().position(|t| t.limit_id() == id) {
            Some(position) => position,
            None => {
                tables.push(Table::new(limit, now_ms));
                tables.len() - 1
            }
        };
        &mut tables[position]
    }

    fn maintain(&mut self, now_ms: u64) {
        let removed: usize = self.tables.iter_mut().map(|t| t.maintain(now_ms)).sum();
        self.keys -= removed;
    }
}

impl MemoryStore {
    /// The default bound on the number of keys: 1,000,000, about 34 MB for the fixed-size
    /// algorithms and 34 to 55 MB for the sliding log with `N = 5`.
    pub const DEFAULT_MAX_KEYS: usize = 1_000_000;

    /// An empty store holding at most [`MemoryStore::DEFAULT_MAX_KEYS`] keys.
    pub fn new() -> MemoryStore {
        MemoryStore::with_max_keys(MemoryStore::DEFAULT_MAX_KEYS)
    }

    /// An empty store holding at most `max_keys` keys (at least 1).
    pub fn with_max_keys(max_keys: usize) -> MemoryStore {
        let max_keys = max_keys.max(1);
        // Small stores get fewer shards, so that each shard still has room for many keys.
        let shards = (max_keys / 256)
            .clamp(1, MAX_SHARDS)
            .next_power_of_two()
            .min(MAX_SHARDS);
        MemoryStore {
            inner: Arc::new(Inner {
                secret: RandomState::new(),
                shards: (0..shards).map(|_| Padded(SpinMutex::default())).collect(),
                shard_mask: shards - 1,
                keys_per_shard: max_keys.div_ceil(shards),
                max_keys,
                next_housekeeping: AtomicU64::new(0),
                housekeeping_cursor: AtomicUsize::new(0),
            }),
        }
    }

    /// The store shared by every limiter of this process that was given no store.
    pub fn global() -> &'static MemoryStore {
        static GLOBAL: OnceLock<MemoryStore> = OnceLock::new();
        GLOBAL.get_or_init(MemoryStore::new)
    }

    /// Counts a request of `key` against `limit` at the clock reading `now`, and decides it.
    ///
    /// All checks on one store must read the same clock.
    pub fn check_at(&self, limit: &Limit, key: &[u8], now: Duration) -> Decision {
        let now_ms = now.as_millis() as u64;
        // The key's bytes alone: SipHash mixes in the length itself, so no prefix is needed.
        let mut hasher = self.inner.secret.build_hasher();
        hasher.write(key);
        let fp = hasher.finish();
        // The shard comes from the middle bits: the map uses the low bits for its buckets
        // and the top seven for its tags, which must stay varied within a shard.
        let shard = &self.inner.shards[(fp >> 32) as usize & self.inner.shard_mask].0;
        let decision = {
            let mut guard = shard.lock();
            let shard = &mut *guard;
            let table = Shard::table(&mut shard.tables, limit, now_ms);
            table.check(fp, now_ms, &mut shard.keys, self.inner.keys_per_shard)
        };
        self.housekeep(now_ms);
        decision
    }

    /// Every [`HOUSEKEEPING_TICK_MS`], the first request to notice visits the next shard.
    #[inline]
    fn housekeep(&self, now_ms: u64) {
        let due = self.inner.next_housekeeping.load(Ordering::Relaxed);
        if now_ms < due {
            return;
        }
        let next = now_ms + HOUSEKEEPING_TICK_MS;
        if self
            .inner
            .next_housekeeping
            .compare_exchange(due, next, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        let cursor = self
            .inner
            .housekeeping_cursor
            .fetch_add(1, Ordering::Relaxed);
        let shard = &self.inner.shards[cursor & self.inner.shard_mask].0;
        shard.lock().maintain(now_ms);
    }

    /// Drops every state that no longer counts at `now`, in every shard, at once.
    ///
    /// Never needed for correctness or memory — sweeping happens as requests come — but
    /// handy before measuring.
    pub fn sweep(&self, now: Duration) {
        let now_ms = now.as_millis() as u64;
        for shard in self.inner.shards.iter() {
            shard.0.lock().maintain(now_ms);
        }
    }

    /// The number of keys held, over all limits.
    pub fn len(&self) -> usize {
        self.inner.shards.iter().map(|s| s.0.lock().keys).sum()
    }

    /// Whether the store holds no key.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bound on the number of keys.
    pub fn max_keys(&self) -> usize {
        self.inner.max_keys
    }
}

impl Default for MemoryStore {
    fn default() -> MemoryStore {
        MemoryStore::new()
    }
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryStore")
            .field("shards", &self.inner.shards.len())
            .field("max_keys", &self.inner.max_keys)
            .finish_non_exhaustive()
    }
}

impl Store for MemoryStore {
    fn check<'a>(&'a self, limit: &'a Limit, key: &'a [u8], now: Duration) -> Check<'a> {
        Check::ready(Ok(self.check_at(limit, key, now)))
    }
}
