//! A shard's penalty records: a client blocked under a limit, until when, and its past
//! blocks. Counted per limit, so that room for a newcomer comes from the limit holding the
//! most and one limit's flood of blocks never lifts another's.

use super::{Bounds, Shard};
use crate::penalty::Block;
use crate::{Limit, Penalty};

impl Shard {
    /// The milliseconds `fp`'s block under `limit` still lasts at `now_ms`, if one is in
    /// force.
    pub(in crate::store::memory) fn block_left(
        &self,
        limit: &Limit,
        fp: u64,
        now_ms: u64,
    ) -> Option<u64> {
        self.blocks.get(&(limit.id(), fp))?.left(now_ms)
    }

    /// Starts `fp`'s block under `limit` at `now_ms`, lasting at least `wait_ms`: how long
    /// it lasts. A shard holding as many records as keys first drops those that no longer
    /// matter, then the one whose block ends first (which frees that client early: what an
    /// eviction can give away).
    pub(in crate::store::memory) fn start_block(
        &mut self,
        (limit, penalty): (&Limit, &Penalty),
        fp: u64,
        (now_ms, wait_ms): (u64, u64),
        bounds: Bounds,
    ) -> u64 {
        let id = (limit.id(), fp);
        if !self.blocks.contains_key(&id) {
            if self.blocks.len() >= most_blocks(bounds) {
                self.evict_block(limit.id(), now_ms);
            }
            self.count_blocks(limit.id(), 1);
        }
        self.blocks
            .entry(id)
            .or_default()
            .start(now_ms, penalty, wait_ms)
    }

    /// Makes room for a record of the limit `newcomer`, from the limit that holds the most
    /// records (the newcomer's own when it holds as many): a limit within its share never
    /// loses a block to another's flood. Among a few of that limit's records, not all (a
    /// flood of blocks costs each a bounded time under the lock), one that no longer
    /// matters goes; else the one whose block ends first (which frees that client early:
    /// what an eviction can give).
    #[cold]
    fn evict_block(&mut self, newcomer: u64, now_ms: u64) {
        let own = self.blocks_of(newcomer);
        let from = self
            .blocks_by_limit
            .iter()
            .filter(|(_, held)| *held > own)
            .max_by_key(|(_, held)| *held)
            .map_or(newcomer, |(limit, _)| *limit);
        let sample: Vec<((u64, u64), bool, u64)> = self
            .blocks
            .iter()
            .filter(|((limit, _), _)| *limit == from)
            .take(16)
            .map(|(&id, block)| (id, block.is_expired(now_ms), block.until_ms()))
            .collect();
        let victim = sample
            .iter()
            .find(|(_, expired, _)| *expired)
            .or_else(|| sample.iter().min_by_key(|(_, _, until)| *until))
            .map(|(id, _, _)| *id);
        if let Some(victim) = victim {
            self.remove_block(victim);
            self.evicted += 1;
        }
    }

    /// The penalty records `limit_id` holds in this shard.
    fn blocks_of(&self, limit_id: u64) -> usize {
        self.blocks_by_limit
            .iter()
            .find(|(limit, _)| *limit == limit_id)
            .map_or(0, |(_, held)| *held)
    }

    /// Counts `change` more records of `limit_id` (one added, or one removed).
    fn count_blocks(&mut self, limit_id: u64, change: isize) {
        match self
            .blocks_by_limit
            .iter()
            .position(|(limit, _)| *limit == limit_id)
        {
            Some(i) => {
                let held = &mut self.blocks_by_limit[i].1;
                *held = held.saturating_add_signed(change);
                if *held == 0 {
                    self.blocks_by_limit.swap_remove(i);
                }
            }
            None if change > 0 => self.blocks_by_limit.push((limit_id, change.unsigned_abs())),
            None => {}
        }
    }

    /// Removes one penalty record, and its count.
    pub(super) fn remove_block(&mut self, id: (u64, u64)) {
        if self.blocks.remove(&id).is_some() {
            self.count_blocks(id.0, -1);
        }
    }

    /// Calls `f` with each penalty record, for a saved file.
    pub(in crate::store::memory) fn each_block(&self, mut f: impl FnMut((u64, u64), &Block)) {
        for (&id, block) in &self.blocks {
            f(id, block);
        }
    }

    /// Holds a restored penalty record, within the records' room.
    pub(in crate::store::memory) fn restore_block(
        &mut self,
        id: (u64, u64),
        block: Block,
        bounds: Bounds,
    ) {
        if self.blocks.len() < most_blocks(bounds) && self.blocks.insert(id, block).is_none() {
            self.count_blocks(id.0, 1);
        }
    }
}

/// What a penalty record takes in its map: the entry, its control byte, and its past blocks
/// (at most 16 of 8 bytes, counted whole).
pub(super) const BLOCK_BYTES: usize =
    std::mem::size_of::<((u64, u64), Block)>() + 1 + 16 * std::mem::size_of::<u64>();

/// The penalty records a shard holds at most: a quarter of those a quarter of its bytes
/// holds, since a map that removes and inserts at its fill grows for its tombstones, to
/// about three and a half times its records' room.
fn most_blocks(bounds: Bounds) -> usize {
    (bounds.bytes / 16 / BLOCK_BYTES).clamp(1, bounds.keys)
}
