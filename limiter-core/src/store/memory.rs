//! The in-memory store: sharded, exact under concurrency, bounded, and self-cleaning.

mod compact;
mod fingerprint_table;
mod log;
mod ring;
mod save_format;
mod saved;
mod shard;
mod slots;
mod table;

use std::collections::hash_map::{DefaultHasher, RandomState};
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use parking_lot::Mutex;

use super::{Charge, Check, Checked, Limit, Receipt, Store};
use crate::concurrency::Acquired;
use crate::{Concurrency, Decision, Slot};
use shard::{Bounds, Padded, Shard};

pub use saved::RestoreError;

/// The most shards a store splits its keys over.
const MAX_SHARDS: usize = 64;
/// A shard gets at least this many bytes: room for a few of the largest sliding logs
/// (65,535 instants, 256 KiB each) besides its tables.
const MIN_SHARD_BYTES: usize = 1 << 20;
/// How often (in clock milliseconds) some request pays for visiting one more shard.
const HOUSEKEEPING_TICK_MS: u64 = 10;

/// Counts requests in this process's memory.
///
/// - **Exact under concurrency**: each check runs under the lock of the one shard its key
///   falls in, so many threads hitting one key admit exactly `N`; keys in other shards do
///   not wait. A request's stacked limits are decided under the locks of all their shards
///   at once, all or nothing.
/// - **Compact**: a key is a 64-bit fingerprint (SipHash-1-3 keyed with a random secret
///   drawn when the store is made) and its state 8 bytes, so a table entry is 16 bytes; the sliding
///   log keeps `4 × N` bytes more once a key has two instants in its window. A check of a key the store
///   already holds allocates nothing. Two distinct keys share a budget only if their
///   fingerprints collide: about one chance in 2⁶⁴ per pair, unpredictable to clients since
///   the secret never leaves the process (but in a file [`save`](MemoryStore::save) writes:
///   keep that file where only the service reads it).
/// - **A restart is not an amnesty**: [`save`](MemoryStore::save) writes what still counts
///   to a file at shutdown, and [`restore`](MemoryStore::restore) reads it back at start,
///   the downtime counted as time gone by.
/// - **Self-cleaning**: state that no longer counts is dropped as time passes, without any
///   call from you: a window after a key's last request (two for the counter, whose
///   estimate weighs the previous window; for the token bucket, a window after it is full again). A
///   table is swept when a check finds its last sweep a window old, and every ten
///   milliseconds of clock time one request also visits the next shard, so each shard is
///   looked at while traffic flows even if its own keys went quiet. A silent process does
///   no work, and holds only what it held.
/// - **Bounded in keys and in bytes**: at most `max_keys` keys (default
///   [`MemoryStore::DEFAULT_MAX_KEYS`]) and `max_bytes` of tables and logs (default
///   [`MemoryStore::DEFAULT_MAX_BYTES`]), split evenly over the shards. When a shard is
///   full, a newcomer still gets its own exact budget: room is made by forgetting the state
///   closest to expiring among a few of its limit's keys (the way nginx's zones drop their
///   oldest state). What eviction can give away: the forgotten client starts afresh — which
///   a client rotating its key gets anyway — and nothing else; nobody is ever counted in a
///   shared bucket.
///
/// Clones share the same counts. [`MemoryStore::global`] is the one the process uses by
/// default.
///
/// ```
/// use std::time::Duration;
/// use limiter::{Limit, MemoryStore, Policy};
///
/// let store = MemoryStore::new();
/// let limit = Limit::new("login", Policy::new(2, Duration::from_secs(60))?);
/// let now = Duration::from_secs(100);
/// assert!(store.check_at(&limit, b"203.0.113.7", now).allowed());
/// assert!(store.check_at(&limit, b"203.0.113.7", now).allowed());
/// let third = store.check_at(&limit, b"203.0.113.7", now);
/// assert_eq!(third.retry_after(), Some(Duration::from_secs(60)));
/// assert_eq!(store.len(), 1);
/// # Ok::<(), limiter::PolicyError>(())
/// ```
#[derive(Clone)]
pub struct MemoryStore {
    inner: Arc<Inner>,
}

struct Inner {
    /// The fingerprints' secret: 128 random bits, kept so that a saved store can be
    /// restored (its keys are known only by their fingerprints).
    secret: (u64, u64),
    /// SipHash-1-3 having absorbed the secret: a fingerprint continues it with the key.
    hasher: DefaultHasher,
    shards: Box<[Padded<Mutex<Shard>>]>,
    shard_mask: usize,
    bounds: Bounds,
    max_keys: usize,
    max_bytes: usize,
    next_housekeeping: AtomicU64,
    housekeeping_cursor: AtomicUsize,
    /// Whether its keys, bytes and evictions go to the metrics (not a limiter's fallback,
    /// which would contradict its primary store's).
    publishes: AtomicBool,
}

impl MemoryStore {
    /// The default bound on the number of keys: 1,000,000, about 34 MB for the fixed-size
    /// algorithms and 34 to 57 MB for the sliding log with `N = 5`.
    pub const DEFAULT_MAX_KEYS: usize = 1_000_000;

    /// The default bound on memory: 64 MiB of tables and logs, which holds the default
    /// million keys of any algorithm with `N = 5`.
    pub const DEFAULT_MAX_BYTES: usize = 64 << 20;

    /// An empty store with the default bounds.
    pub fn new() -> MemoryStore {
        MemoryStore::with_bounds(
            MemoryStore::DEFAULT_MAX_KEYS,
            MemoryStore::DEFAULT_MAX_BYTES,
        )
    }

    /// An empty store holding at most `max_keys` keys (at least 1), and the default bytes.
    pub fn with_max_keys(max_keys: usize) -> MemoryStore {
        MemoryStore::with_bounds(max_keys, MemoryStore::DEFAULT_MAX_BYTES)
    }

    /// An empty store holding at most `max_bytes` of tables and logs (at least 64 KiB),
    /// and the default number of keys.
    ///
    /// ```
    /// use limiter::MemoryStore;
    /// let store = MemoryStore::with_max_bytes(8 << 20);
    /// assert_eq!(store.max_bytes(), 8 << 20);
    /// ```
    pub fn with_max_bytes(max_bytes: usize) -> MemoryStore {
        MemoryStore::with_bounds(MemoryStore::DEFAULT_MAX_KEYS, max_bytes)
    }

    /// An empty store with both bounds: at most `max_keys` keys (at least 1) and `max_bytes`
    /// of tables and logs (at least 64 KiB).
    pub fn with_bounds(max_keys: usize, max_bytes: usize) -> MemoryStore {
        let random = RandomState::new();
        let draw = |n: u64| {
            let mut hasher = random.build_hasher();
            hasher.write_u64(n);
            hasher.finish()
        };
        MemoryStore::with_secret(max_keys, max_bytes, (draw(1), draw(2)))
    }

    /// An empty store with both bounds whose fingerprints are keyed by `secret`.
    fn with_secret(max_keys: usize, max_bytes: usize, secret: (u64, u64)) -> MemoryStore {
        let max_keys = max_keys.max(1);
        let max_bytes = max_bytes.max(64 << 10);
        // Small stores get fewer shards, so that each shard still has room for many keys
        // and for a few of the largest logs.
        let by_keys = (max_keys / 256).clamp(1, MAX_SHARDS);
        let by_bytes = (max_bytes / MIN_SHARD_BYTES).clamp(1, MAX_SHARDS);
        // The largest power of two within both.
        let fit = by_keys.min(by_bytes);
        let shards = 1 << fit.ilog2();
        MemoryStore {
            inner: Arc::new(Inner {
                secret,
                hasher: keyed(secret),
                shards: (0..shards).map(|_| Padded(Mutex::default())).collect(),
                shard_mask: shards - 1,
                bounds: Bounds {
                    keys: max_keys.div_ceil(shards),
                    bytes: max_bytes / shards,
                },
                max_keys,
                max_bytes,
                next_housekeeping: AtomicU64::new(0),
                housekeeping_cursor: AtomicUsize::new(0),
                publishes: AtomicBool::new(true),
            }),
        }
    }

    /// A store whose figures do not go to the metrics (a limiter's fallback).
    pub(crate) fn unpublished(self) -> MemoryStore {
        self.inner.publishes.store(false, Ordering::Relaxed);
        self
    }

    /// The store shared by every limiter of this process that was given no store.
    pub fn global() -> &'static MemoryStore {
        static GLOBAL: OnceLock<MemoryStore> = OnceLock::new();
        GLOBAL.get_or_init(MemoryStore::new)
    }

    #[inline]
    fn fingerprint(&self, key: &[u8]) -> u64 {
        // The key's bytes alone after the secret: SipHash mixes in the length itself.
        let mut hasher = self.inner.hasher.clone();
        hasher.write(key);
        hasher.finish()
    }

    /// The shard of a fingerprint, from its middle bits: the tables use the low bits for
    /// their slots.
    #[inline]
    fn shard_of(&self, fp: u64) -> usize {
        (fp >> 32) as usize & self.inner.shard_mask
    }

    /// Counts a request of `key` against `limit` at the clock reading `now`, and decides it.
    ///
    /// All checks on one store must read the same clock; readings may reach the store out
    /// of order: a reading older than a stamp the key holds is read as that stamp's instant, so an
    /// old reading never makes state look expired.
    pub fn check_at(&self, limit: &Limit, key: &[u8], now: Duration) -> Decision {
        if limit.policy().penalty().is_some() {
            return self.check_all_at(&[Charge::new(limit, key)], now)[0];
        }
        let now_ms = millis(now);
        let fp = self.fingerprint(key);
        let shard = &self.inner.shards[self.shard_of(fp)].0;
        let decision = shard.lock().check_one(limit, fp, now_ms, self.inner.bounds);
        self.housekeep(now_ms);
        decision
    }

    /// Counts one request against several limits at once, all or nothing: it is admitted
    /// only if every limit admits it, and then counted by each; otherwise none counts it.
    ///
    /// Decisions come in the order of `requests`, with the [`Receipt`] a refund gives back
    /// exactly by. When the request is rejected, the limits that would have admitted it
    /// report where they stand with nothing counted (see [`Store::check_all`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::{Charge, Limit, MemoryStore, Policy};
    /// let store = MemoryStore::new();
    /// let minute = Limit::new("login", Policy::new(5, Duration::from_secs(60))?);
    /// let day = Limit::new("login-1d", Policy::new(2, Duration::from_secs(86_400))?);
    /// let now = Duration::from_secs(1);
    /// let both = [Charge::new(&minute, b"client"), Charge::new(&day, b"client")];
    /// assert!(store.check_all_at(&both, now).iter().all(|d| d.allowed()));
    /// assert!(store.check_all_at(&both, now).iter().all(|d| d.allowed()));
    /// let third = store.check_all_at(&both, now);
    /// assert!(third[0].allowed() && !third[1].allowed());
    /// assert_eq!(third[0].remaining(), 3); // the rejected request took nothing
    /// assert!(!third.receipt().counted_anything());
    /// # Ok::<(), limiter::PolicyError>(())
    /// ```
    pub fn check_all_at(&self, requests: &[Charge<'_>], now: Duration) -> Checked {
        let now_ms = millis(now);
        let located: Vec<(usize, u64)> = requests
            .iter()
            .map(|charge| {
                let fp = self.fingerprint(charge.key);
                (self.shard_of(fp), fp)
            })
            .collect();
        // Every shard involved, locked in ascending order so that two stacks never wait
        // for each other.
        let mut order: Vec<usize> = located.iter().map(|&(shard, _)| shard).collect();
        order.sort_unstable();
        order.dedup();
        let mut guards: Vec<_> = order
            .iter()
            .map(|&i| self.inner.shards[i].0.lock())
            .collect();
        let positions: Vec<usize> = located
            .iter()
            .map(|(shard, _)| order.binary_search(shard).unwrap_or_default())
            .collect();
        // A client blocked under one of the limits is refused by its block: nothing is
        // counted, and the other limits answer as when another limit rejects (one that
        // rejects the request itself starts its own block, as it would alone: on a cluster
        // each node decides its limits apart).
        let blocks: Vec<Option<u64>> = requests
            .iter()
            .enumerate()
            .map(|(i, charge)| match charge.limit.policy().penalty() {
                Some(_) => guards[positions[i]].block_left(charge.limit, located[i].1, now_ms),
                None => None,
            })
            .collect();
        let mut decisions = Vec::with_capacity(requests.len());
        let mut priors = Vec::with_capacity(requests.len());
        let mut marks = Vec::with_capacity(requests.len());
        for (i, charge) in requests.iter().enumerate() {
            let fp = located[i].1;
            let bounds = self.inner.bounds;
            let cost = charge.units();
            let (decision, prior, mark) =
                guards[positions[i]].check(charge.limit, fp, now_ms, bounds, cost);
            decisions.push(match blocks[i] {
                Some(left) => Decision::reject_ns(charge.limit.policy().max().get(), ms_ns(left))
                    .marked_blocked(),
                None => decision,
            });
            priors.push(prior);
            marks.push(mark);
        }
        if decisions.iter().any(|d| !d.allowed()) {
            for (i, charge) in requests.iter().enumerate().rev() {
                guards[positions[i]].undo(charge.limit, located[i].1, priors[i]);
            }
            for (i, charge) in requests.iter().enumerate() {
                let fp = located[i].1;
                let decision = decisions[i];
                if decision.allowed() {
                    decisions[i] = guards[positions[i]].status(charge.limit, fp, now_ms);
                } else if let (None, Some(penalty)) = (blocks[i], charge.limit.policy().penalty()) {
                    // The limit rejected it itself: its block starts.
                    let wait_ms = decision
                        .retry_after()
                        .map_or(0, |w| w.as_nanos().div_ceil(1_000_000) as u64);
                    let left = guards[positions[i]].start_block(
                        (charge.limit, &penalty),
                        fp,
                        (now_ms, wait_ms),
                        self.inner.bounds,
                    );
                    decisions[i] = Decision::reject_leaving_ns(
                        decision.limit(),
                        decision.remaining(),
                        ms_ns(left),
                    )
                    .marked_blocked();
                    crate::observe::block_started(charge.limit.scope());
                }
            }
            marks.fill(None);
        }
        drop(guards);
        self.housekeep(now_ms);
        Checked::new(decisions, Receipt::new(marks))
    }

    /// Takes back what a check of `charges` counted, as its `receipt` says, at the reading
    /// `now` (see [`Store::refund`]): only what is still counted.
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::{Charge, Limit, MemoryStore, Policy};
    /// let store = MemoryStore::new();
    /// let login = Limit::new("login", Policy::new(1, Duration::from_secs(60))?);
    /// let at = Duration::from_secs(5);
    /// let attempt = [Charge::new(&login, b"ann")];
    /// let checked = store.check_all_at(&attempt, at);
    /// store.refund_at(&attempt, checked.receipt(), at); // it succeeded: only failures count
    /// assert!(store.check_all_at(&attempt, at)[0].allowed());
    /// # Ok::<(), limiter::PolicyError>(())
    /// ```
    pub fn refund_at(&self, charges: &[Charge<'_>], receipt: &Receipt, now: Duration) {
        let now_ms = millis(now);
        for (charge, mark) in charges.iter().zip(receipt.marks()) {
            let Some(mark) = *mark else { continue };
            let fp = self.fingerprint(charge.key);
            let shard = &self.inner.shards[self.shard_of(fp)].0;
            shard
                .lock()
                .refund(charge.limit, fp, mark, now_ms, charge.units());
        }
    }

    /// Forgets `key`'s state under `limit`.
    pub fn reset(&self, limit: &Limit, key: &[u8]) {
        let fp = self.fingerprint(key);
        self.inner.shards[self.shard_of(fp)]
            .0
            .lock()
            .forget(limit, fp);
    }

    /// Every [`HOUSEKEEPING_TICK_MS`], the first request to notice visits the next shard.
    #[inline(always)]
    fn housekeep(&self, now_ms: u64) {
        let due = self.inner.next_housekeeping.load(Ordering::Relaxed);
        if now_ms >= due {
            self.visit_next_shard(now_ms, due);
        }
    }

    #[cold]
    fn visit_next_shard(&self, now_ms: u64, due: u64) {
        let next = now_ms.saturating_add(HOUSEKEEPING_TICK_MS);
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
        // Once per round of the shards: the figures cost a lock of each.
        if crate::observe::ENABLED
            && cursor & self.inner.shard_mask == 0
            && self.inner.publishes.load(Ordering::Relaxed)
        {
            crate::observe::memory(self.len(), self.bytes(), self.evictions());
        }
    }

    /// Drops every state that no longer counts at `now`, in every shard, at once.
    ///
    /// Never needed for correctness or memory — sweeping happens as requests come — but
    /// handy before measuring.
    pub fn sweep(&self, now: Duration) {
        let now_ms = millis(now);
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

    /// The bytes its tables and logs take now (what [`max_bytes`](Self::max_bytes) bounds).
    pub fn bytes(&self) -> usize {
        self.inner.shards.iter().map(|s| s.0.lock().bytes()).sum()
    }

    /// The bytes its penalty records (`block = "..."`) and its counts of requests in flight
    /// take now: apart from [`bytes`](Self::bytes), so that blocked clients never evict
    /// another limit's counts; penalty records take at most a quarter of `max_bytes`, about
    /// 350 records per MiB (beyond that the record whose block ends first among a few goes).
    pub fn side_bytes(&self) -> usize {
        self.inner
            .shards
            .iter()
            .map(|s| s.0.lock().side_bytes())
            .sum()
    }

    /// How many keys were forgotten to make room for newcomers since the store was made.
    pub fn evictions(&self) -> u64 {
        self.inner.shards.iter().map(|s| s.0.lock().evicted).sum()
    }

    /// Which store this is: clones share it. For the glue's setup checks; not a public API.
    #[doc(hidden)]
    pub fn identity(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    /// The bound on the number of keys.
    pub fn max_keys(&self) -> usize {
        self.inner.max_keys
    }

    /// The bound on the bytes of tables and logs.
    pub fn max_bytes(&self) -> usize {
        self.inner.max_bytes
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
            .field("max_bytes", &self.inner.max_bytes)
            .finish_non_exhaustive()
    }
}

impl Store for MemoryStore {
    fn check<'a>(&'a self, limit: &'a Limit, key: &'a [u8], now: Duration) -> Check<'a> {
        Check::ready(Ok(self.check_at(limit, key, now)))
    }

    fn check_all<'a>(&'a self, charges: &'a [Charge<'a>], now: Duration) -> Check<'a, Checked> {
        Check::ready(Ok(self.check_all_at(charges, now)))
    }

    fn refund<'a>(
        &'a self,
        charges: &'a [Charge<'a>],
        receipt: &'a Receipt,
        now: Duration,
    ) -> Check<'a, ()> {
        self.refund_at(charges, receipt, now);
        Check::ready(Ok(()))
    }

    fn reset<'a>(&'a self, limit: &'a Limit, key: &'a [u8]) -> Check<'a, ()> {
        MemoryStore::reset(self, limit, key);
        Check::ready(Ok(()))
    }

    fn name(&self) -> &'static str {
        "memory"
    }

    fn keeps_slots(&self) -> bool {
        true
    }

    fn acquire<'a>(&'a self, limit: &'a Concurrency, key: &'a [u8]) -> Check<'a, Acquired> {
        Check::ready(Ok(self.acquire_slot(limit, key)))
    }

    fn release(&self, slot: &Slot) {
        self.release_slot(slot);
    }
}

/// SipHash-1-3 (std's `DefaultHasher`, whose own key is zero) having absorbed `secret`:
/// what follows is hashed under a key nobody outside the process knows, as with
/// `RandomState`, and the secret can be written down. std does not promise the algorithm
/// across releases: a saved file carries a probe fingerprint, and a build that computes
/// another refuses the file.
fn keyed(secret: (u64, u64)) -> DefaultHasher {
    let mut hasher = DefaultHasher::new();
    hasher.write_u64(secret.0);
    hasher.write_u64(secret.1);
    hasher
}

/// Milliseconds as nanoseconds, saturating.
fn ms_ns(ms: u64) -> u64 {
    ms.saturating_mul(1_000_000)
}

/// A reading in whole milliseconds (saturating: no clock reads 584 million years).
#[inline]
fn millis(now: Duration) -> u64 {
    now.as_secs()
        .saturating_mul(1_000)
        .saturating_add(u64::from(now.subsec_millis()))
}
