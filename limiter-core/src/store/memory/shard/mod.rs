//! One shard of the in-memory store: its tables (one per limit), the keys and bytes they
//! hold, and how room is made when it is full — from the limit that holds the most.

use std::collections::HashMap;
use std::time::Duration;

use super::fingerprint_table::SLOT_BYTES;
use super::table::{Counted, Moved, Prior, SavedState, Table};
use crate::penalty::Block;
use crate::{Decision, Limit, Policy};

mod blocks;
use blocks::BLOCK_BYTES;

/// What one shard may hold.
#[derive(Clone, Copy)]
pub(super) struct Bounds {
    pub(super) keys: usize,
    pub(super) bytes: usize,
}

/// Keeps each shard's lock on cache lines of its own, so that threads working on different
/// shards do not slow each other down.
#[repr(align(128))]
pub(super) struct Padded<T>(pub(super) T);

#[derive(Default)]
pub(super) struct Shard {
    tables: Vec<Table>,
    pub(super) keys: usize,
    /// Keys forgotten to make room, since the store was made.
    pub(super) evicted: u64,
    /// The penalty records of its keys, by (limit id, fingerprint): few, only of clients
    /// that a limit with a penalty rejected.
    blocks: HashMap<(u64, u64), Block>,
    /// How many of those records each limit holds, by limit id: room for a newcomer's
    /// record comes from the limit that holds the most, so that one limit's flood of blocks
    /// never lifts another's.
    blocks_by_limit: Vec<(u64, usize)>,
    /// The requests in flight of its keys under concurrency limits, by (limit id,
    /// fingerprint): only keys with one in flight are held.
    in_flight: HashMap<(u64, u64), u32>,
}

impl Shard {
    /// The table of `limit`, made on its first use in this shard — in the place of a table
    /// that holds nothing, if there is one: limits chosen per request (`policy = fn`) come
    /// and go, and their tables must not pile up.
    #[inline]
    fn table_index(&mut self, limit: &Limit, now_ms: u64) -> usize {
        match self.tables.iter().position(|t| t.counts_for(limit)) {
            Some(position) => {
                self.tables[position].decides_as(limit);
                position
            }
            None => self.new_table(limit, now_ms),
        }
    }

    #[cold]
    fn new_table(&mut self, limit: &Limit, now_ms: u64) -> usize {
        let table = Table::new(limit, now_ms);
        match self.tables.iter().position(|t| t.len() == 0) {
            Some(empty) => {
                self.tables[empty] = table;
                empty
            }
            None => {
                self.tables.push(table);
                self.tables.len() - 1
            }
        }
    }

    /// The bytes its tables hold, the tables themselves included (what `max_bytes` bounds;
    /// penalty records and slot counts have budgets of their own, see
    /// [`side_bytes`](Self::side_bytes)).
    pub(super) fn bytes(&self) -> usize {
        self.tables.iter().map(Table::bytes).sum::<usize>()
            + self.tables.capacity() * std::mem::size_of::<Table>()
    }

    /// The bytes of its penalty records and its counts of requests in flight: kept apart
    /// from the tables' bound, so that a flood of blocked clients never evicts another
    /// limit's counts; the records are bounded by a quarter of the shard's bytes.
    pub(super) fn side_bytes(&self) -> usize {
        self.blocks.capacity() * BLOCK_BYTES + self.in_flight.capacity() * SLOT_COUNT_BYTES
    }

    /// Counts a request of `fp` against `limit` alone: [`check`](Self::check) without what
    /// it would take to undo it, the path of most handlers.
    #[inline(always)]
    pub(super) fn check_one(
        &mut self,
        limit: &Limit,
        fp: u64,
        now_ms: u64,
        bounds: Bounds,
    ) -> Decision {
        if let Some(table) = self.tables.iter_mut().find(|t| t.counts_for(limit)) {
            let table = table.decides_as(limit);
            if !table.sweep_due(now_ms) {
                table.seen(now_ms);
                if let Some(slot) = table.find(fp) {
                    if table.growth_for(slot, 1) == 0 {
                        return table.check_only(slot, now_ms);
                    }
                }
            }
        }
        let t = self.table_index(limit, now_ms);
        self.check_with_room(t, fp, now_ms, bounds, 1).0
    }

    /// Counts a request of `fp` against `limit`, making room for it if the shard is full.
    /// Returns the decision, what to undo it with, and its mark.
    #[inline]
    pub(super) fn check(
        &mut self,
        limit: &Limit,
        fp: u64,
        now_ms: u64,
        bounds: Bounds,
        cost: u32,
    ) -> Counted {
        let t = self.table_index(limit, now_ms);
        let table = &mut self.tables[t];
        // The common case, kept short: a key already held, nothing to sweep or allocate.
        if !table.sweep_due(now_ms) {
            table.seen(now_ms);
            if let Some(slot) = table.find(fp) {
                if table.growth_for(slot, cost) == 0 {
                    return table.check(slot, now_ms, cost);
                }
            }
        }
        self.check_with_room(t, fp, now_ms, bounds, cost)
    }

    /// [`check`](Self::check) when a sweep is due, the key is new, or its log needs a ring.
    #[cold]
    fn check_with_room(
        &mut self,
        t: usize,
        fp: u64,
        now_ms: u64,
        bounds: Bounds,
        cost: u32,
    ) -> Counted {
        if self.tables[t].sweep_due(now_ms) {
            self.keys -= self.tables[t].maintain(now_ms);
        }
        self.tables[t].seen(now_ms);
        let slot = match self.tables[t].find(fp) {
            Some(slot) => slot,
            None => {
                self.make_room(t, fp, now_ms, bounds);
                self.keys += 1;
                self.tables[t].insert(fp)
            }
        };
        let growth = self.tables[t].growth_for(slot, cost);
        let slot = if growth > 0 && !self.room_for(t, growth, now_ms, bounds) {
            // The log needs a ring the shard has no bytes for, and its own limit holds the
            // most: take the ring of its log closest to expiring (its key goes with it) —
            // or, if none near holds one, halve its own table for the bytes.
            if self.tables[t].evict(eviction_start(fp), fp, now_ms, true) {
                self.keys -= 1;
                self.evicted += 1;
            } else {
                let forgotten = self.tables[t].shrink(now_ms);
                self.keys -= forgotten;
                self.evicted += forgotten as u64;
            }
            self.tables[t]
                .find(fp)
                .unwrap_or_else(|| self.tables[t].insert(fp))
        } else {
            slot
        };
        self.tables[t].check(slot, now_ms, cost)
    }

    /// Makes room for one more key in table `t`: under the key bound, and within the bytes
    /// if the table must grow.
    ///
    /// Room is made by the limit that holds the most — keys for the key bound, bytes for
    /// the byte bound — which is `t`'s own when a flood of newcomers is its own: a limit
    /// within its share is never evicted for another's flood (nginx gives each limit a zone
    /// of its own for that reason; this is the same, with the zones' sizes following use).
    #[cold]
    fn make_room(&mut self, t: usize, fp: u64, now_ms: u64, bounds: Bounds) {
        let start = eviction_start(fp);
        if self.keys >= bounds.keys {
            let from = self.largest(t, Table::len);
            if self.tables[from].evict(start, fp, now_ms, false) {
                self.keys -= 1;
                self.evicted += 1;
            }
        }
        let table = &self.tables[t];
        let growth = table.bytes_after_insert() - table.bytes();
        if growth > 0
            && !self.room_for(t, growth, now_ms, bounds)
            && self.tables[t].evict(start, fp, now_ms, false)
        {
            self.keys -= 1;
            self.evicted += 1;
        }
    }

    /// The table that gives up state for table `t`: the one holding the most by `size`,
    /// unless `t` holds as much itself.
    fn largest(&self, t: usize, size: impl Fn(&Table) -> usize) -> usize {
        let own = size(&self.tables[t]);
        match (0..self.tables.len()).max_by_key(|&i| size(&self.tables[i])) {
            Some(largest) if size(&self.tables[largest]) > own => largest,
            _ => t,
        }
    }

    /// Whether table `t` may grow by `growth` bytes: at once if the shard has them, else
    /// by halving a table whose keys use more than `t`'s will (its entries and rings, not
    /// the room it has) and will still once halved, largest first. `false` when there is
    /// none: `t` must make room from its own states. A limit within its share is never
    /// halved for another's flood; two limits using about alike (within a factor of two)
    /// each make room from their own.
    fn room_for(&mut self, t: usize, growth: usize, now_ms: u64, bounds: Bounds) -> bool {
        let needs = SLOT_BYTES;
        loop {
            if self.bytes() + growth <= bounds.bytes {
                return true;
            }
            // A victim uses more than `t` will, and still as much once halved (else `t`,
            // within a factor of two of it, makes room from its own states).
            let own = self.tables[t].live_bytes() + needs;
            let victim = (0..self.tables.len())
                .filter(|&i| i != t)
                .max_by_key(|&i| self.tables[i].live_bytes())
                .filter(|&i| {
                    let victim = &self.tables[i];
                    // A table of a few keys cannot be halved and goes whole: among many
                    // small limits (policies chosen per request), a newcomer's own is one.
                    let small = victim.len() <= 16;
                    (small && victim.live_bytes() >= own)
                        || (victim.live_bytes() > own && victim.live_after_halving() >= own)
                });
            let Some(victim) = victim else {
                return false;
            };
            let before = self.tables[victim].bytes();
            let mut forgotten = self.tables[victim].shrink(now_ms);
            if self.tables[victim].bytes() >= before {
                // Too small to halve: many limits, each with a few keys (policies chosen
                // per request). The largest of them goes whole.
                forgotten += self.tables[victim].clear();
            }
            self.keys -= forgotten;
            self.evicted += forgotten as u64;
            if self.tables[victim].bytes() >= before {
                return false;
            }
        }
    }

    pub(super) fn undo(&mut self, limit: &Limit, fp: u64, prior: Prior) {
        if let Some(table) = self.tables.iter_mut().find(|t| t.counts_for(limit)) {
            table.decides_as(limit).undo(fp, prior);
        }
    }

    pub(super) fn refund(
        &mut self,
        limit: &Limit,
        fp: u64,
        mark: Duration,
        now_ms: u64,
        cost: u32,
    ) {
        if let Some(table) = self.tables.iter_mut().find(|t| t.counts_for(limit)) {
            table.decides_as(limit).refund(fp, mark, now_ms, cost);
        }
    }

    pub(super) fn status(&mut self, limit: &Limit, fp: u64, now_ms: u64) -> Decision {
        let t = self.table_index(limit, now_ms);
        self.tables[t].status(fp, now_ms)
    }

    /// Takes a slot of `fp` under the concurrency limit `limit_id`, if fewer than `max` are
    /// taken: the slots left.
    pub(super) fn take_slot(&mut self, limit_id: u64, fp: u64, max: u32) -> Option<u32> {
        let taken = self.in_flight.entry((limit_id, fp)).or_default();
        if *taken >= max {
            return None;
        }
        *taken += 1;
        Some(max - *taken)
    }

    /// Gives a slot of `fp` under `limit_id` back.
    pub(super) fn give_slot(&mut self, limit_id: u64, fp: u64) {
        if let Some(taken) = self.in_flight.get_mut(&(limit_id, fp)) {
            *taken = taken.saturating_sub(1);
            if *taken == 0 {
                self.in_flight.remove(&(limit_id, fp));
            }
        }
    }

    /// The slots of `fp` under `limit_id` taken now.
    pub(super) fn slots_taken(&self, limit_id: u64, fp: u64) -> u32 {
        self.in_flight.get(&(limit_id, fp)).copied().unwrap_or(0)
    }

    /// Forgets `fp`'s state under `limit`, and its penalty record.
    pub(super) fn forget(&mut self, limit: &Limit, fp: u64) {
        self.remove_block((limit.id(), fp));
        let forgotten = self
            .tables
            .iter_mut()
            .find(|t| t.counts_for(limit))
            .is_some_and(|table| table.forget(fp));
        if forgotten {
            self.keys -= 1;
        }
    }

    /// Its tables, for a saved file.
    pub(super) fn tables(&self) -> &[Table] {
        &self.tables
    }

    /// Holds `fp` under the limit `limit_id` with a saved state moved as `moved` says, within
    /// the shard's bounds (a state that does not fit is left out, as a newcomer would be
    /// without an eviction). Whether it was added.
    pub(super) fn restore(
        &mut self,
        (limit_id, policy): (u64, Policy),
        fp: u64,
        state: SavedState<'_>,
        moved: Moved,
        bounds: Bounds,
    ) -> bool {
        let now_ms = moved.now_ms;
        if self.keys >= bounds.keys {
            return false;
        }
        // One table per limit id, as one budget: a saved policy that differs in its delay or
        // penalty only counts the same budget (the live limit's delay and penalty decide).
        let found = self.tables.iter().position(|t| t.limit_id() == limit_id);
        let added = match found {
            Some(t) => {
                let table = &self.tables[t];
                let used = self.bytes() - table.bytes() + table.bytes_after_insert();
                used <= bounds.bytes
                    && self.tables[t].restore(fp, state, moved, bounds.bytes - used)
            }
            // A table is kept only with a state in it, and counted with its place among
            // the tables: a crafted file of many limits, each of one state refused, adds
            // nothing.
            None => {
                let mut table = Table::of(limit_id, policy, now_ms);
                let place = match self.tables.len() < self.tables.capacity() {
                    true => 0,
                    false => self.tables.capacity().max(4) * std::mem::size_of::<Table>(),
                };
                let used = self.bytes() + place + table.bytes_after_insert();
                let added =
                    used <= bounds.bytes && table.restore(fp, state, moved, bounds.bytes - used);
                if added {
                    self.tables.push(table);
                }
                added
            }
        };
        if added {
            self.keys += 1;
        }
        added
    }

    pub(super) fn maintain(&mut self, now_ms: u64) {
        let removed: usize = self.tables.iter_mut().map(|t| t.maintain(now_ms)).sum();
        self.keys -= removed;
        // Tables left empty go, and their room with them.
        self.tables.retain(|t| t.len() > 0);
        self.blocks.retain(|_, block| !block.is_expired(now_ms));
        // Counted again from what is left, in place of the counts of those gone.
        let mut by_limit: Vec<(u64, usize)> = Vec::new();
        for (limit, _) in self.blocks.keys() {
            match by_limit.iter_mut().find(|(id, _)| id == limit) {
                Some((_, held)) => *held += 1,
                None => by_limit.push((*limit, 1)),
            }
        }
        self.blocks_by_limit = by_limit;
        if self.blocks.capacity() > 2 * self.blocks.len().max(4) {
            self.blocks.shrink_to_fit();
        }
        if self.in_flight.capacity() > 2 * self.in_flight.len().max(4) {
            self.in_flight.shrink_to_fit();
        }
        if self.tables.capacity() > 2 * self.tables.len().max(4) {
            self.tables.shrink_to_fit();
        }
    }
}

/// What a key's count of requests in flight takes in its map.
const SLOT_COUNT_BYTES: usize = std::mem::size_of::<((u64, u64), u32)>() + 1;

/// Where an eviction starts looking: from the newcomer's secret fingerprint, so clients can
/// neither predict nor aim it, and away from the newcomer's own probe run.
fn eviction_start(fp: u64) -> u64 {
    fp.rotate_left(29)
}
