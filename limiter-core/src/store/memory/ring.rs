//! The storage of the sliding logs: an entry per key (the one instant inline, or where its
//! ring is), the slab of rings a table shares, and a key's log as the algorithm sees it.

use crate::algorithm::sliding_window::{self, InstantLog};
use crate::algorithm::Stamp;
use crate::Policy;

/// `meta` of an entry whose log is empty: a ring's length is never 0, so head 0 and length
/// 0 name no ring.
pub(super) const EMPTY: u32 = 0;
/// `meta` of an entry whose one instant is `data`: head `0xFFFF`, length 0, again no ring.
pub(super) const INLINE: u32 = 0xFFFF_0000;

/// One key's log: inline (`meta` is [`INLINE`] or [`EMPTY`], `data` the stamp) or a ring in
/// the slab (`data` the ring's index, `meta` its head and length, 16 bits each; the length
/// is at least 1 and at most `N ≤ 65,535`).
#[derive(Clone, Copy, Default)]
pub(super) struct LogEntry {
    pub(super) data: u32,
    pub(super) meta: u32,
}

impl LogEntry {
    pub(super) const EMPTY: LogEntry = LogEntry {
        data: 0,
        meta: EMPTY,
    };

    pub(super) fn in_ring(&self) -> bool {
        self.meta & 0xFFFF != 0
    }

    /// The ring's head and length, for an entry whose log is in the slab.
    pub(super) fn head_len(&self) -> (usize, usize) {
        ((self.meta >> 16) as usize, (self.meta & 0xFFFF) as usize)
    }
}

/// Rings of `capacity` stamps, back to back.
pub(super) struct Slab {
    pub(super) stamps: Vec<u32>,
    pub(super) free: Vec<u32>,
    pub(super) capacity: usize,
}

impl Slab {
    pub(super) fn ring(&mut self, index: u32) -> &mut [u32] {
        let start = index as usize * self.capacity;
        &mut self.stamps[start..start + self.capacity]
    }

    /// A free ring; the caller made sure one is free or that the slab may grow.
    pub(super) fn allocate(&mut self) -> u32 {
        if let Some(index) = self.free.pop() {
            return index;
        }
        let index = (self.stamps.len() / self.capacity) as u32;
        if self.stamps.len() == self.stamps.capacity() {
            self.stamps
                .reserve_exact(self.growth_rings() * self.capacity);
        }
        self.stamps.resize(self.stamps.len() + self.capacity, 0);
        index
    }

    /// How many rings the slab adds when it grows: half again what it holds, so growth stays
    /// amortized without doubling past the shard's bound.
    pub(super) fn growth_rings(&self) -> usize {
        (self.rings() / 2).max(1)
    }

    pub(super) fn release(&mut self, index: u32) {
        self.free.push(index);
    }

    pub(super) fn rings(&self) -> usize {
        self.stamps.len() / self.capacity
    }

    pub(super) fn bytes(&self) -> usize {
        (self.stamps.capacity() + self.free.capacity()) * 4
    }
}

/// A key's log as [`sliding_window::check`] sees it.
pub(super) struct LogView<'a> {
    pub(super) entry: &'a mut LogEntry,
    pub(super) slab: &'a mut Slab,
}

impl LogView<'_> {
    pub(super) fn head_len(&self) -> (usize, usize) {
        self.entry.head_len()
    }

    pub(super) fn set_head_len(&mut self, head: usize, len: usize) {
        self.entry.meta = ((head as u32) << 16) | len as u32;
    }

    pub(super) fn clear(&mut self) {
        if self.entry.in_ring() {
            self.slab.release(self.entry.data);
        }
        *self.entry = LogEntry::EMPTY;
    }
}

impl InstantLog for LogView<'_> {
    fn len(&self) -> usize {
        match self.entry.meta {
            EMPTY => 0,
            INLINE => 1,
            _ => self.head_len().1,
        }
    }

    fn oldest(&self) -> Option<Stamp> {
        match self.entry.meta {
            EMPTY => None,
            INLINE => Some(Stamp::from_bits(self.entry.data)),
            _ => {
                let (head, _) = self.head_len();
                let start = self.entry.data as usize * self.slab.capacity;
                Some(Stamp::from_bits(self.slab.stamps[start + head]))
            }
        }
    }

    fn newest(&self) -> Option<Stamp> {
        newest(self.entry, self.slab)
    }

    fn pop_oldest(&mut self) {
        match self.entry.meta {
            EMPTY => {}
            INLINE => *self.entry = LogEntry::EMPTY,
            _ => {
                let (head, len) = self.head_len();
                if len == 1 {
                    self.clear();
                } else {
                    self.set_head_len(wrap(head + 1, self.slab.capacity), len - 1);
                }
            }
        }
    }

    fn pop_newest(&mut self) {
        match self.entry.meta {
            EMPTY => {}
            INLINE => *self.entry = LogEntry::EMPTY,
            _ => {
                let (head, len) = self.head_len();
                if len == 1 {
                    self.clear();
                } else {
                    self.set_head_len(head, len - 1);
                }
            }
        }
    }

    fn nth(&self, i: usize) -> Stamp {
        match self.entry.meta {
            INLINE => Stamp::from_bits(self.entry.data),
            _ => {
                let (head, _) = self.head_len();
                let start = self.entry.data as usize * self.slab.capacity;
                Stamp::from_bits(self.slab.stamps[start + wrap(head + i, self.slab.capacity)])
            }
        }
    }

    fn remove(&mut self, from: usize, count: usize) {
        if count == 0 {
            return;
        }
        if !self.entry.in_ring() {
            // One inline instant: it is the one removed.
            *self.entry = LogEntry::EMPTY;
            return;
        }
        let (head, len) = self.head_len();
        let capacity = self.slab.capacity;
        let ring = self.slab.ring(self.entry.data);
        for i in from..len - count {
            ring[wrap(head + i, capacity)] = ring[wrap(head + i + count, capacity)];
        }
        if len == count {
            self.clear();
        } else {
            self.set_head_len(head, len - count);
        }
    }

    fn push(&mut self, stamp: Stamp) {
        match self.entry.meta {
            EMPTY => {
                *self.entry = LogEntry {
                    data: stamp.to_bits(),
                    meta: INLINE,
                }
            }
            INLINE => {
                let first = self.entry.data;
                let index = self.slab.allocate();
                let ring = self.slab.ring(index);
                ring[0] = first;
                ring[1] = stamp.to_bits();
                self.entry.data = index;
                self.set_head_len(0, 2);
            }
            _ => {
                let (head, len) = self.head_len();
                let capacity = self.slab.capacity;
                self.slab.ring(self.entry.data)[wrap(head + len, capacity)] = stamp.to_bits();
                self.set_head_len(head, len + 1);
            }
        }
    }
}

pub(super) fn newest(entry: &LogEntry, slab: &Slab) -> Option<Stamp> {
    match entry.meta {
        EMPTY => None,
        INLINE => Some(Stamp::from_bits(entry.data)),
        _ => {
            let (head, len) = entry.head_len();
            let start = entry.data as usize * slab.capacity;
            Some(Stamp::from_bits(
                slab.stamps[start + wrap(head + len - 1, slab.capacity)],
            ))
        }
    }
}

/// `i % capacity` for `i < 2 × capacity`, without a division (this runs on every check).
#[inline]
pub(super) fn wrap(i: usize, capacity: usize) -> usize {
    if i >= capacity {
        i - capacity
    } else {
        i
    }
}

/// Milliseconds until a log can be forgotten.
pub(super) fn life(entry: &LogEntry, slab: &Slab, now_ms: u64, policy: &Policy) -> u64 {
    newest(entry, slab).map_or(0, |n| sliding_window::expires_in(n, now_ms, policy))
}
