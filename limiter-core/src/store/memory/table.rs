//! The counts of one limit within one shard: a map from key fingerprint to compact state,
//! swept of expired state as time passes.

use super::fingerprint_table::{FingerprintTable, Slot};
use super::log::LogTable;
use crate::algorithm::fixed_window::FixedWindow;
use crate::algorithm::sliding_window_counter::SlidingWindowCounter;
use crate::algorithm::token_bucket::TokenBucket;
use crate::{Algorithm, Decision, Limit, Policy};

/// The fixed-size states, all 8 bytes, so a table entry is 16.
pub(super) trait CompactState: Copy + Default {
    fn check(&mut self, now_ms: u64, policy: &Policy) -> Decision;
    fn is_expired(&self, now_ms: u64, policy: &Policy) -> bool;
}

impl CompactState for FixedWindow {
    fn check(&mut self, now_ms: u64, policy: &Policy) -> Decision {
        FixedWindow::check(self, now_ms, policy)
    }
    fn is_expired(&self, now_ms: u64, policy: &Policy) -> bool {
        FixedWindow::is_expired(self, now_ms, policy)
    }
}

impl CompactState for SlidingWindowCounter {
    fn check(&mut self, now_ms: u64, policy: &Policy) -> Decision {
        SlidingWindowCounter::check(self, now_ms, policy)
    }
    fn is_expired(&self, now_ms: u64, policy: &Policy) -> bool {
        SlidingWindowCounter::is_expired(self, now_ms, policy)
    }
}

impl CompactState for TokenBucket {
    fn check(&mut self, now_ms: u64, policy: &Policy) -> Decision {
        TokenBucket::check(self, now_ms, policy)
    }
    fn is_expired(&self, now_ms: u64, _: &Policy) -> bool {
        TokenBucket::is_expired(self, now_ms)
    }
}

/// States of fixed size, plus the one shared by keys that arrive while the store is full.
pub(super) struct CompactTable<S> {
    map: FingerprintTable<S>,
    overflow: S,
}

impl<S: CompactState> CompactTable<S> {
    fn new() -> Self {
        CompactTable {
            map: FingerprintTable::new(),
            overflow: S::default(),
        }
    }

    #[inline]
    fn check(&mut self, fp: u64, now_ms: u64, policy: &Policy, room: bool) -> (Decision, bool) {
        match self.map.slot(fp, room) {
            Slot::Found(state) => (state.check(now_ms, policy), false),
            Slot::Inserted(state) => (state.check(now_ms, policy), true),
            Slot::Refused => (self.overflow.check(now_ms, policy), false),
        }
    }

    fn sweep(&mut self, now_ms: u64, policy: &Policy) -> usize {
        let before = self.map.len();
        self.map.retain(|state| !state.is_expired(now_ms, policy));
        if self.overflow.is_expired(now_ms, policy) {
            self.overflow = S::default();
        }
        before - self.map.len()
    }

    fn clear(&mut self) -> usize {
        let removed = self.map.len();
        *self = CompactTable::new();
        removed
    }
}

enum Counts {
    Fixed(CompactTable<FixedWindow>),
    Counter(CompactTable<SlidingWindowCounter>),
    Bucket(CompactTable<TokenBucket>),
    Log(LogTable),
}

/// One limit's counts in one shard.
pub(super) struct Table {
    limit_id: u64,
    policy: Policy,
    /// When expired state was last swept out.
    swept_at: u64,
    /// When the table was last checked.
    last_seen: u64,
    counts: Counts,
}

impl Table {
    pub(super) fn new(limit: &Limit, now_ms: u64) -> Table {
        let policy = *limit.policy();
        let counts = match policy.algorithm() {
            Algorithm::FixedWindow => Counts::Fixed(CompactTable::new()),
            Algorithm::SlidingWindowCounter => Counts::Counter(CompactTable::new()),
            Algorithm::TokenBucket => Counts::Bucket(CompactTable::new()),
            Algorithm::SlidingWindow => Counts::Log(LogTable::new(policy.max().get())),
        };
        Table {
            limit_id: limit.id(),
            policy,
            swept_at: now_ms,
            last_seen: now_ms,
            counts,
        }
    }

    pub(super) fn limit_id(&self) -> u64 {
        self.limit_id
    }

    /// Decides a request of the key `fp`, keeping `keys` (the shard's count of stored keys)
    /// up to date and below `max_keys`.
    #[inline]
    pub(super) fn check(
        &mut self,
        fp: u64,
        now_ms: u64,
        keys: &mut usize,
        max_keys: usize,
    ) -> Decision {
        if now_ms.saturating_sub(self.swept_at) >= self.policy.window_ms() {
            *keys -= self.maintain(now_ms);
        }
        // Written only when it changes (once per clock tick): a line that two cores only read
        // stays in both their caches.
        if self.last_seen != now_ms {
            self.last_seen = now_ms;
        }
        let room = *keys < max_keys;
        let policy = &self.policy;
        let (decision, inserted) = match &mut self.counts {
            Counts::Fixed(t) => t.check(fp, now_ms, policy, room),
            Counts::Counter(t) => t.check(fp, now_ms, policy, room),
            Counts::Bucket(t) => t.check(fp, now_ms, policy, room),
            Counts::Log(t) => t.check(fp, now_ms, policy, room),
        };
        *keys += usize::from(inserted);
        decision
    }

    /// Reclaims expired state when a window has passed since the last sweep; returns how
    /// many keys were dropped.
    ///
    /// The 32-bit stamps stay unambiguous because no state outlives a few windows: a table
    /// left idle for a whole window (two for the counter, whose estimate reaches back one
    /// window) holds nothing that still counts and is cleared without reading any stamp.
    #[cold]
    pub(super) fn maintain(&mut self, now_ms: u64) -> usize {
        let window = self.policy.window_ms();
        let idle = now_ms.saturating_sub(self.last_seen);
        let stale_after = match self.counts {
            Counts::Counter(_) => Some(2 * window),
            Counts::Bucket(_) => None, // nanosecond TATs in 64 bits never wrap
            Counts::Fixed(_) | Counts::Log(_) => Some(window),
        };
        if stale_after.is_some_and(|limit| idle >= limit) {
            self.swept_at = now_ms;
            return match &mut self.counts {
                Counts::Fixed(t) => t.clear(),
                Counts::Counter(t) => t.clear(),
                Counts::Bucket(t) => t.clear(),
                Counts::Log(t) => t.clear(),
            };
        }
        if now_ms.saturating_sub(self.swept_at) < window {
            return 0;
        }
        self.swept_at = now_ms;
        let policy = &self.policy;
        match &mut self.counts {
            Counts::Fixed(t) => t.sweep(now_ms, policy),
            Counts::Counter(t) => t.sweep(now_ms, policy),
            Counts::Bucket(t) => t.sweep(now_ms, policy),
            Counts::Log(t) => t.sweep(now_ms, policy),
        }
    }
}
