//! The exact sliding window's logs, laid out so that a client seen once costs one 16-byte
//! table entry and a client at its limit `4 × N` bytes more.
//!
//! A key with a single instant keeps it inline in its entry. From the second instant on,
//! its log is a ring of `N` stamps in a slab shared by the table (no allocation per key,
//! no allocator overhead); freed rings are reused, and the slab is compacted once it is
//! mostly free. The slab grows only within the bytes its shard may still use: past that, a
//! ring is taken from the log closest to expiring.

use super::fingerprint_table::FingerprintTable;
use super::ring::{life, newest, wrap, LogEntry, LogView, Slab, EMPTY, INLINE};
use super::table::Moved;
use crate::algorithm::sliding_window::{self, InstantLog};
use crate::algorithm::Stamp;
use crate::{Decision, Policy};

/// The sliding-window logs of one limit in one shard.
pub(super) struct LogTable {
    map: FingerprintTable<LogEntry>,
    slab: Slab,
}

impl LogTable {
    pub(super) fn new(max: u32) -> LogTable {
        LogTable {
            map: FingerprintTable::new(),
            slab: Slab {
                stamps: Vec::new(),
                free: Vec::new(),
                capacity: max as usize,
            },
        }
    }

    pub(super) fn map(&self) -> &FingerprintTable<LogEntry> {
        &self.map
    }

    pub(super) fn map_mut(&mut self) -> &mut FingerprintTable<LogEntry> {
        &mut self.map
    }

    pub(super) fn bytes(&self) -> usize {
        self.map.bytes() + self.slab.bytes()
    }

    /// Calls `f` with every key held and the stamps of its log, oldest first.
    pub(super) fn each_saved(&self, mut f: impl FnMut(u64, &[u32])) {
        let mut stamps = Vec::new();
        for (fp, entry) in self.map.entries() {
            stamps.clear();
            match entry.meta {
                EMPTY => {}
                INLINE => stamps.push(entry.data),
                _ => {
                    let (head, len) = entry.head_len();
                    let capacity = self.slab.capacity;
                    let start = entry.data as usize * capacity;
                    stamps.extend(
                        (0..len).map(|i| self.slab.stamps[start + wrap(head + i, capacity)]),
                    );
                }
            }
            f(fp, &stamps);
        }
    }

    /// Holds `fp` with a log of the saved `stamps` (oldest first, at most `N`), moved as
    /// `moved` says, unless it could not have been counted (out of order, later than the
    /// save), no longer counts, `fp` is held already, or its ring would grow the slab past
    /// `room` bytes. Whether it was added.
    pub(super) fn restore(
        &mut self,
        fp: u64,
        stamps: &[u32],
        moved: Moved,
        policy: &Policy,
        room: usize,
    ) -> bool {
        let Some(&newest) = stamps.last() else {
            return false;
        };
        // Judged on the clock they were counted on (see `CompactTable::restore`).
        let age = Stamp::from_bits(newest).signed_age(moved.saved_ms);
        let in_order = stamps
            .windows(2)
            .all(|pair| pair[1].wrapping_sub(pair[0]) as i32 >= 0);
        let by_ms = moved.by_ms;
        if stamps.len() > self.slab.capacity
            || !in_order
            || age < 0
            || age as u64 + moved.elapsed_ms >= policy.window_ms()
            || self.map.find(fp).is_some()
            || (stamps.len() >= 2 && self.ring_room() > room)
        {
            return false;
        }
        let slot = self.map.insert(fp);
        let mut log = LogView {
            entry: self.map.at(slot),
            slab: &mut self.slab,
        };
        for &stamp in stamps {
            log.push(Stamp::from_bits(stamp.wrapping_add(by_ms as u32)));
        }
        true
    }

    /// The bytes its keys use: their entries and the rings in use.
    pub(super) fn live_bytes(&self) -> usize {
        let rings = self.slab.rings() - self.slab.free.len();
        self.map.len() * super::fingerprint_table::SLOT_BYTES + rings * self.slab.capacity * 4
    }

    /// The bytes the slab would add if the key in slot `slot` needed a ring now: zero when
    /// its log needs none (empty, or in a ring already) or a free ring is waiting.
    pub(super) fn ring_growth(&self, slot: Option<usize>, cost: u32) -> usize {
        // A log gets a ring when it takes a second instant: never with `N = 1`.
        let needs_ring = self.slab.capacity >= 2
            && slot.is_some_and(|i| match self.entry_meta(i) {
                INLINE => true,
                EMPTY => cost >= 2,
                _ => false,
            });
        if !needs_ring || !self.slab.free.is_empty() {
            return 0;
        }
        if self.slab.stamps.len() < self.slab.stamps.capacity() {
            return 0;
        }
        self.slab.growth_rings() * self.slab.capacity * 4
    }

    /// The bytes the slab adds for one more ring: none while a ring is free or reserved.
    fn ring_room(&self) -> usize {
        if !self.slab.free.is_empty() || self.slab.stamps.len() < self.slab.stamps.capacity() {
            return 0;
        }
        self.slab.growth_rings() * self.slab.capacity * 4
    }

    fn entry_meta(&self, slot: usize) -> u32 {
        self.map_entry(slot).meta
    }

    fn map_entry(&self, slot: usize) -> LogEntry {
        // `find` handed out this slot; reading it through `get`-like access keeps the map's
        // internals private to it.
        self.map.peek(slot)
    }

    /// Forgets the log closest to expiring among a few near `start` that hold a ring
    /// (sparing `keep`), so that its ring can be reused. Whether one was found.
    pub(super) fn evict_ring(
        &mut self,
        start: u64,
        keep: u64,
        now_ms: u64,
        policy: &Policy,
    ) -> bool {
        let slab = &self.slab;
        let evicted = self.map.evict_nearby(start, keep, |entry| {
            entry.in_ring().then(|| life(entry, slab, now_ms, policy))
        });
        match evicted {
            Some(entry) => {
                self.slab.release(entry.data);
                true
            }
            None => false,
        }
    }

    /// Forgets the log closest to expiring among a few (sparing `keep`). Whether one was
    /// found.
    pub(super) fn evict(&mut self, start: u64, keep: u64, now_ms: u64, policy: &Policy) -> bool {
        let slab = &self.slab;
        let evicted = self
            .map
            .evict(start, keep, |entry| Some(life(entry, slab, now_ms, policy)));
        match evicted {
            Some(entry) => {
                if entry.in_ring() {
                    self.slab.release(entry.data);
                }
                true
            }
            None => false,
        }
    }

    /// Counts a request of the key in `slot` (found or just inserted). `in_order` says the
    /// reading is not earlier than any instant the table holds.
    #[inline]
    pub(super) fn check(
        &mut self,
        slot: usize,
        now_ms: u64,
        policy: &Policy,
        cost: u32,
        in_order: bool,
    ) -> Decision {
        let mut log = LogView {
            entry: self.map.at(slot),
            slab: &mut self.slab,
        };
        if in_order {
            sliding_window::check_in_order(&mut log, now_ms, policy, cost)
        } else {
            sliding_window::check_cost(&mut log, now_ms, policy, cost)
        }
    }

    /// The newest instant of the key in `slot`, as a full reading near `now_ms`: the instant
    /// a check just admitted counted at.
    pub(super) fn newest_of(&self, slot: usize, now_ms: u64) -> u64 {
        let entry = self.map.peek(slot);
        newest(&entry, &self.slab).map_or(now_ms, |n| {
            now_ms.saturating_add_signed(-n.signed_age(now_ms))
        })
    }

    /// Takes back the `count` instants the last check of the key in `slot` added.
    pub(super) fn undo(&mut self, slot: usize, count: u32) {
        let mut log = LogView {
            entry: self.map.at(slot),
            slab: &mut self.slab,
        };
        for _ in 0..count {
            log.pop_newest();
        }
    }

    /// Forgets `fp`'s log. Whether it was held.
    pub(super) fn forget(&mut self, fp: u64) -> bool {
        match self.map.remove(fp) {
            Some(entry) => {
                if entry.in_ring() {
                    self.slab.release(entry.data);
                }
                true
            }
            None => false,
        }
    }

    /// Takes back `cost` instants of `fp` that a check recorded at `at_ms`, at the reading
    /// `now_ms`.
    pub(super) fn refund(&mut self, fp: u64, at_ms: u64, now_ms: u64, policy: &Policy, cost: u32) {
        if let Some(slot) = self.map.find(fp) {
            let mut log = LogView {
                entry: self.map.at(slot),
                slab: &mut self.slab,
            };
            sliding_window::refund(&mut log, at_ms, now_ms, policy, cost);
        }
    }

    /// Where the key stands, with nothing counted.
    pub(super) fn status(&mut self, fp: u64, now_ms: u64, policy: &Policy) -> Decision {
        match self.map.find(fp) {
            Some(slot) => {
                let mut log = LogView {
                    entry: self.map.at(slot),
                    slab: &mut self.slab,
                };
                sliding_window::status(&mut log, now_ms, policy)
            }
            None => {
                let max = policy.max().get();
                Decision::allow(max, max, std::time::Duration::ZERO)
            }
        }
    }

    pub(super) fn sweep(&mut self, now_ms: u64, policy: &Policy) -> usize {
        let before = self.map.len();
        let slab = &mut self.slab;
        self.map.retain(|entry| {
            let expired =
                newest(entry, slab).is_none_or(|n| sliding_window::is_expired(n, now_ms, policy));
            if expired && entry.in_ring() {
                slab.release(entry.data);
            }
            !expired
        });
        self.compact_if_sparse();
        before - self.map.len()
    }

    pub(super) fn clear(&mut self) -> usize {
        let removed = self.map.len();
        *self = LogTable::new(self.slab.capacity as u32);
        removed
    }

    /// Halves the map, forgetting the logs closest to expiring, and gives their rings'
    /// bytes back. Returns how many keys it forgot.
    pub(super) fn shrink(&mut self, now_ms: u64, policy: &Policy) -> usize {
        let slab = &self.slab;
        let dropped = self
            .map
            .shrink_half(|entry| life(entry, slab, now_ms, policy));
        for entry in &dropped {
            if entry.in_ring() {
                self.slab.release(entry.data);
            }
        }
        // A few long logs (a large `N`) hold their bytes in rings, not in the map: one of
        // them goes instead.
        let forgotten = if dropped.is_empty() && self.evict(0, 0, now_ms, policy) {
            1
        } else {
            dropped.len()
        };
        if self.slab.rings() > 0 && !self.slab.free.is_empty() {
            self.compact();
        }
        forgotten
    }

    /// Moves the live rings to the front of a fresh slab once most rings are free.
    fn compact_if_sparse(&mut self) {
        let rings = self.slab.rings();
        let free = self.slab.free.len();
        if rings == 0 || (rings >= 64 && free * 2 < rings) || (rings < 64 && free < rings) {
            return;
        }
        self.compact();
    }

    /// Moves the live rings to the front of a slab of just their size.
    fn compact(&mut self) {
        let rings = self.slab.rings();
        let free = self.slab.free.len();
        let capacity = self.slab.capacity;
        let mut stamps = Vec::with_capacity((rings - free) * capacity);
        let old = &self.slab.stamps;
        for entry in self.map.values_mut() {
            if !entry.in_ring() {
                continue;
            }
            let start = entry.data as usize * capacity;
            let (head, len) = entry.head_len();
            let ring = &old[start..start + capacity];
            let index = (stamps.len() / capacity) as u32;
            stamps.extend((0..capacity).map(|i| ring[(head + i) % capacity]));
            *entry = LogEntry {
                data: index,
                meta: len as u32,
            };
        }
        self.slab.stamps = stamps;
        self.slab.free = Vec::new();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A ring of the largest size wraps its head to the last slot while full: that state
    /// must still read as a full log, not as an empty one.
    #[test]
    fn the_largest_ring_wraps_without_losing_its_log() {
        let max = u32::from(u16::MAX);
        let policy = Policy::new(max, Duration::from_secs(3600)).unwrap();
        let mut table = LogTable::new(max);
        let slot = table.map.insert(7);
        // Fill the log, then let instants leave one by one while others arrive, so that the
        // head walks all the way round the ring.
        for t in 0..u64::from(max) {
            assert!(table.check(slot, t, &policy, 1, true).allowed());
        }
        let window = policy.window_ms();
        for t in 0..u64::from(max) {
            let at = window + t;
            let slot = table.map.find(7).unwrap();
            let d = table.check(slot, at, &policy, 1, true);
            assert!(d.allowed(), "at {at}");
            assert_eq!(d.remaining(), 0, "at {at}");
            assert!(
                !table.check(slot, at, &policy, 1, true).allowed(),
                "at {at}"
            );
        }
    }
}
