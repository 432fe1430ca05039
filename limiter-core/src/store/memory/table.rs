//! The counts of one limit within one shard: a map from key fingerprint to compact state,
//! swept of expired state as time passes.

use super::compact::{CompactState, CompactTable};
use super::log::LogTable;
use crate::algorithm::fixed_window::FixedWindow;
use crate::algorithm::sliding_window_counter::SlidingWindowCounter;
use crate::algorithm::token_bucket::TokenBucket;
use crate::{Algorithm, Decision, Limit, Policy};
use std::time::Duration;

pub(super) use super::compact::{Counted, Prior};

use super::compact::millis;

enum Counts {
    Fixed(CompactTable<FixedWindow>),
    Counter(CompactTable<SlidingWindowCounter>),
    Bucket(CompactTable<TokenBucket>),
    Log(LogTable),
}

/// Runs `$body` with `$t` bound to the fingerprint map of whichever kind of table it is.
macro_rules! map_of {
    ($counts:expr, $t:ident => $body:expr) => {
        match $counts {
            Counts::Fixed(c) => {
                let $t = &c.map;
                $body
            }
            Counts::Counter(c) => {
                let $t = &c.map;
                $body
            }
            Counts::Bucket(c) => {
                let $t = &c.map;
                $body
            }
            Counts::Log(l) => {
                let $t = l.map();
                $body
            }
        }
    };
}

/// One limit's counts in one shard.
pub(super) struct Table {
    limit_id: u64,
    policy: Policy,
    /// When expired state was last swept out.
    swept_at: u64,
    /// The latest clock reading a check brought: no instant held is later (a check whose
    /// reading is not earlier need not look for one).
    last_seen: u64,
    counts: Counts,
}

/// How a saved state is moved onto the restoring store's clock: the reading it was saved
/// at, the time gone by since on that clock, how far ahead the new clock is, and its
/// reading now.
#[derive(Clone, Copy)]
pub(super) struct Moved {
    pub(super) saved_ms: u64,
    pub(super) elapsed_ms: u64,
    pub(super) by_ms: i64,
    pub(super) now_ms: u64,
}

/// One key's state as a saved file holds it: 64 bits, or a log's stamps.
pub(super) enum SavedState<'a> {
    Raw(u64),
    Log(&'a [u32]),
}

impl Table {
    pub(super) fn new(limit: &Limit, now_ms: u64) -> Table {
        Table::of(limit.id(), *limit.policy(), now_ms)
    }

    /// The table of the limit whose id is `limit_id` (a restored one: its scope's name is
    /// not needed to count it).
    pub(super) fn of(limit_id: u64, policy: Policy, now_ms: u64) -> Table {
        let counts = match policy.algorithm() {
            Algorithm::FixedWindow => Counts::Fixed(CompactTable::new()),
            Algorithm::SlidingWindowCounter => Counts::Counter(CompactTable::new()),
            Algorithm::TokenBucket => Counts::Bucket(CompactTable::new()),
            Algorithm::SlidingWindow => Counts::Log(LogTable::new(policy.max().get())),
        };
        Table {
            limit_id,
            policy,
            swept_at: now_ms,
            last_seen: now_ms,
            counts,
        }
    }

    pub(super) fn limit_id(&self) -> u64 {
        self.limit_id
    }

    /// Whether it counts `limit`'s budget: its id, which names the budget (as its Redis keys)
    /// — the same for a limit whose delay or penalty an override or a per-request policy
    /// changes. Then [`decides_as`](Self::decides_as) gives it the request's delay and
    /// penalty.
    #[inline]
    pub(super) fn counts_for(&self, limit: &Limit) -> bool {
        self.limit_id == limit.id()
    }

    /// Decides with `limit`'s delay and penalty from now on: the policy is a value, whatever
    /// decides the request (a declared limit, an override, a per-request policy, a restored
    /// table), never the one the table happened to be made with. How it counts is the id's
    /// (the same for every limit found here) and stays the table's own: its states were held
    /// to it (a restored file's, checked as plausible under it).
    #[inline]
    pub(super) fn decides_as(&mut self, limit: &Limit) -> &mut Table {
        if !self.policy.same_extras(limit.policy()) {
            self.policy = self.policy.with_extras_of(limit.policy());
        }
        self
    }

    pub(super) fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Calls `f` with every key held and its state.
    pub(super) fn each_saved(&self, mut f: impl FnMut(u64, SavedState<'_>)) {
        match &self.counts {
            Counts::Fixed(t) => t.saved().for_each(|(fp, raw)| f(fp, SavedState::Raw(raw))),
            Counts::Counter(t) => t.saved().for_each(|(fp, raw)| f(fp, SavedState::Raw(raw))),
            Counts::Bucket(t) => t.saved().for_each(|(fp, raw)| f(fp, SavedState::Raw(raw))),
            Counts::Log(t) => t.each_saved(|fp, stamps| f(fp, SavedState::Log(stamps))),
        }
    }

    /// Holds `fp` with a saved state moved as `moved` says, unless it could not have been
    /// counted, no longer counts, is held already, is not of this table's kind, or would grow
    /// the table's logs past `room` bytes. Whether it was added.
    pub(super) fn restore(
        &mut self,
        fp: u64,
        state: SavedState<'_>,
        moved: Moved,
        room: usize,
    ) -> bool {
        let policy = &self.policy;
        match (&mut self.counts, state) {
            (Counts::Fixed(t), SavedState::Raw(raw)) => t.restore(fp, raw, moved, policy),
            (Counts::Counter(t), SavedState::Raw(raw)) => t.restore(fp, raw, moved, policy),
            (Counts::Bucket(t), SavedState::Raw(raw)) => t.restore(fp, raw, moved, policy),
            (Counts::Log(t), SavedState::Log(stamps)) => t.restore(fp, stamps, moved, policy, room),
            _ => false,
        }
    }

    /// Keys held.
    pub(super) fn len(&self) -> usize {
        map_of!(&self.counts, m => m.len())
    }

    /// Bytes held: slots, and the logs' slab.
    pub(super) fn bytes(&self) -> usize {
        match &self.counts {
            Counts::Log(l) => l.bytes(),
            other => map_of!(other, m => m.bytes()),
        }
    }

    /// The bytes its keys use (what its share is judged by): their entries, and the rings
    /// of their logs. Less than [`bytes`](Self::bytes), which counts the room they have.
    pub(super) fn live_bytes(&self) -> usize {
        match &self.counts {
            Counts::Log(l) => l.live_bytes(),
            other => map_of!(other, m => m.len()) * super::fingerprint_table::SLOT_BYTES,
        }
    }

    /// About what [`live_bytes`](Self::live_bytes) would be after [`shrink`](Self::shrink):
    /// the share of its keys the halved table keeps.
    pub(super) fn live_after_halving(&self) -> usize {
        let len = self.len();
        if len == 0 {
            return 0;
        }
        let kept = map_of!(&self.counts, m => m.kept_by_halving());
        self.live_bytes() / len * kept
    }

    /// What [`bytes`](Self::bytes) would become if one more key were added.
    pub(super) fn bytes_after_insert(&self) -> usize {
        self.bytes() - map_of!(&self.counts, m => m.bytes())
            + map_of!(&self.counts, m => m.bytes_after_insert())
    }

    /// The slot of `fp`, if held.
    #[inline(always)]
    pub(super) fn find(&self, fp: u64) -> Option<usize> {
        map_of!(&self.counts, m => m.find(fp))
    }

    /// Adds `fp` with empty state; the shard made room.
    pub(super) fn insert(&mut self, fp: u64) -> usize {
        match &mut self.counts {
            Counts::Fixed(c) => c.map.insert(fp),
            Counts::Counter(c) => c.map.insert(fp),
            Counts::Bucket(c) => c.map.insert(fp),
            Counts::Log(l) => l.map_mut().insert(fp),
        }
    }

    /// The bytes a check of `cost` units of the key in `slot` may add (a sliding log's
    /// first ring).
    #[inline]
    pub(super) fn growth_for(&self, slot: usize, cost: u32) -> usize {
        match &self.counts {
            Counts::Log(l) => l.ring_growth(Some(slot), cost),
            _ => 0,
        }
    }

    /// Forgets the state closest to expiring among a few (sparing `keep`); with `for_ring`,
    /// only among sliding logs that hold a ring. Whether one was found.
    pub(super) fn evict(&mut self, start: u64, keep: u64, now_ms: u64, for_ring: bool) -> bool {
        let policy = &self.policy;
        match &mut self.counts {
            Counts::Fixed(c) => c.evict(start, keep, now_ms, policy),
            Counts::Counter(c) => c.evict(start, keep, now_ms, policy),
            Counts::Bucket(c) => c.evict(start, keep, now_ms, policy),
            Counts::Log(l) if for_ring => l.evict_ring(start, keep, now_ms, policy),
            Counts::Log(l) => l.evict(start, keep, now_ms, policy),
        }
    }

    /// Forgets every key. Returns how many it held.
    pub(super) fn clear(&mut self) -> usize {
        match &mut self.counts {
            Counts::Fixed(t) => t.clear(),
            Counts::Counter(t) => t.clear(),
            Counts::Bucket(t) => t.clear(),
            Counts::Log(t) => t.clear(),
        }
    }

    /// Gives about half its bytes back — its slots halved, and its logs' rings with the
    /// forgotten keys — forgetting the states closest to expiring: room for another limit
    /// when this one holds more than it. Returns how many keys it forgot.
    pub(super) fn shrink(&mut self, now_ms: u64) -> usize {
        let policy = &self.policy;
        match &mut self.counts {
            Counts::Fixed(t) => t.shrink(now_ms, policy),
            Counts::Counter(t) => t.shrink(now_ms, policy),
            Counts::Bucket(t) => t.shrink(now_ms, policy),
            Counts::Log(t) => t.shrink(now_ms, policy),
        }
    }

    /// Notes a clock reading. Only the latest counts: a reading that arrives late must not
    /// make the table look idle for longer than it is.
    #[inline]
    pub(super) fn seen(&mut self, now_ms: u64) {
        if now_ms > self.last_seen {
            self.last_seen = now_ms;
        }
    }

    /// Whether a sweep is due at `now_ms`.
    #[inline]
    pub(super) fn sweep_due(&self, now_ms: u64) -> bool {
        now_ms.saturating_sub(self.swept_at) >= self.policy.window_ms()
    }

    /// Counts a one-unit request of the key in `slot`, with no way back.
    #[inline(always)]
    pub(super) fn check_only(&mut self, slot: usize, now_ms: u64) -> Decision {
        let policy = &self.policy;
        match &mut self.counts {
            Counts::Fixed(t) => CompactState::check(t.map.at(slot), now_ms, policy, 1),
            Counts::Counter(t) => CompactState::check(t.map.at(slot), now_ms, policy, 1),
            Counts::Bucket(t) => CompactState::check(t.map.at(slot), now_ms, policy, 1),
            Counts::Log(t) => t.check(slot, now_ms, policy, 1, now_ms >= self.last_seen),
        }
    }

    /// Counts a request of `cost` units of the key in `slot`.
    #[inline]
    pub(super) fn check(&mut self, slot: usize, now_ms: u64, cost: u32) -> Counted {
        let policy = &self.policy;
        match &mut self.counts {
            Counts::Fixed(t) => t.check(slot, now_ms, policy, cost),
            Counts::Counter(t) => t.check(slot, now_ms, policy, cost),
            Counts::Bucket(t) => t.check(slot, now_ms, policy, cost),
            Counts::Log(t) => {
                let decision = t.check(slot, now_ms, policy, cost, now_ms >= self.last_seen);
                if decision.allowed() {
                    let mark = Duration::from_millis(t.newest_of(slot, now_ms));
                    (decision, Prior::Pushed(cost), Some(mark))
                } else {
                    (decision, Prior::Unchanged, None)
                }
            }
        }
    }

    /// Forgets `fp`'s state. Whether it was held.
    pub(super) fn forget(&mut self, fp: u64) -> bool {
        match &mut self.counts {
            Counts::Fixed(t) => t.map.remove(fp).is_some(),
            Counts::Counter(t) => t.map.remove(fp).is_some(),
            Counts::Bucket(t) => t.map.remove(fp).is_some(),
            Counts::Log(t) => t.forget(fp),
        }
    }

    /// Takes back what is still counted of `cost` units of `fp` that a check marked `mark`
    /// (see [`Store::refund`]).
    ///
    /// [`Store::refund`]: crate::Store::refund
    pub(super) fn refund(&mut self, fp: u64, mark: Duration, now_ms: u64, cost: u32) {
        let policy = &self.policy;
        match &mut self.counts {
            Counts::Fixed(t) => t.refund(fp, mark, now_ms, policy, cost),
            Counts::Counter(t) => t.refund(fp, mark, now_ms, policy, cost),
            Counts::Bucket(t) => t.refund(fp, mark, now_ms, policy, cost),
            Counts::Log(t) => t.refund(fp, millis(mark), now_ms, policy, cost),
        }
    }

    /// Takes back what a check of `fp` changed (if the key is still held).
    pub(super) fn undo(&mut self, fp: u64, prior: Prior) {
        match &mut self.counts {
            Counts::Fixed(t) => t.undo(fp, prior),
            Counts::Counter(t) => t.undo(fp, prior),
            Counts::Bucket(t) => t.undo(fp, prior),
            Counts::Log(t) => {
                if let (Prior::Pushed(count), Some(slot)) = (prior, t.map().find(fp)) {
                    t.undo(slot, count);
                }
            }
        }
    }

    /// Where `fp` stands, with nothing counted.
    pub(super) fn status(&mut self, fp: u64, now_ms: u64) -> Decision {
        let policy = &self.policy;
        match &mut self.counts {
            Counts::Fixed(t) => t.status(fp, now_ms, policy),
            Counts::Counter(t) => t.status(fp, now_ms, policy),
            Counts::Bucket(t) => t.status(fp, now_ms, policy),
            Counts::Log(t) => t.status(fp, now_ms, policy),
        }
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
        if !self.sweep_due(now_ms) {
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
