//! The exact sliding window's logs, laid out so that a client seen once costs one 16-byte
//! table entry and a client at its limit `4 × N` bytes more.
//!
//! A key with a single instant keeps it inline in its entry. From the second instant on,
//! its log is a ring of `N` stamps in a slab shared by the table (no allocation per key,
//! no allocator overhead); freed rings are reused, and the slab is compacted once it is
//! mostly free.

use super::fingerprint_table::{FingerprintTable, Slot};
use crate::algorithm::sliding_window::{self, InstantLog};
use crate::algorithm::Stamp;
use crate::{Decision, Policy};

/// `meta` of an entry whose log is empty.
const EMPTY: u32 = u32::MAX - 1;
/// `meta` of an entry whose one instant is `data`.
const INLINE: u32 = u32::MAX;

/// One key's log: inline (`meta` is [`INLINE`] or [`EMPTY`], `data` the stamp) or a ring in
/// the slab (`data` the ring's index, `meta` its head and length, 16 bits each).
#[derive(Clone, Copy)]
pub(super) struct LogEntry {
    data: u32,
    meta: u32,
}

impl LogEntry {
    const EMPTY: LogEntry = LogEntry {
        data: 0,
        meta: EMPTY,
    };

    /// The ring's head and length, for an entry whose log is in the slab.
    fn head_len(&self) -> (usize, usize) {
        ((self.meta >> 16) as usize, (self.meta & 0xFFFF) as usize)
    }
}

impl Default for LogEntry {
    fn default() -> LogEntry {
        LogEntry::EMPTY
    }
}

/// Rings of `capacity` stamps, back to back.
struct Slab {
    stamps: Vec<u32>,
    free: Vec<u32>,
    capacity: usize,
}

impl Slab {
    fn ring(&mut self, index: u32) -> &mut [u32] {
        let start = index as usize * self.capacity;
        &mut self.stamps[start..start + self.capacity]
    }

    fn allocate(&mut self) -> u32 {
        if let Some(index) = self.free.pop() {
            return index;
        }
        let index = (self.stamps.len() / self.capacity) as u32;
        self.stamps.resize(self.stamps.len() + self.capacity, 0);
        index
    }

    fn release(&mut self, index: u32) {
        self.free.push(index);
    }

    fn rings(&self) -> usize {
        self.stamps.len() / self.capacity
    }
}

/// A key's log as [`sliding_window::check`] sees it.
struct LogView<'a> {
    entry: &'a mut LogEntry,
    slab: &'a mut Slab,
}

impl LogView<'_> {
    fn head_len(&self) -> (usize, usize) {
        self.entry.head_len()
    }

    fn set_head_len(&mut self, head: usize, len: usize) {
        self.entry.meta = ((head as u32) << 16) | len as u32;
    }

    fn newest(&mut self) -> Option<Stamp> {
        match self.entry.meta {
            EMPTY => None,
            INLINE => Some(Stamp::from_bits(self.entry.data)),
            _ => {
                let (head, len) = self.head_len();
                let capacity = self.slab.capacity;
                let ring = self.slab.ring(self.entry.data);
                Some(Stamp::from_bits(ring[(head + len - 1) % capacity]))
            }
        }
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

    fn pop_oldest(&mut self) {
        match self.entry.meta {
            EMPTY => {}
            INLINE => *self.entry = LogEntry::EMPTY,
            _ => {
                let (head, len) = self.head_len();
                if len == 1 {
                    self.slab.release(self.entry.data);
                    *self.entry = LogEntry::EMPTY;
                } else {
                    self.set_head_len((head + 1) % self.slab.capacity, len - 1);
                }
            }
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
                self.slab.ring(self.entry.data)[(head + len) % capacity] = stamp.to_bits();
                self.set_head_len(head, len + 1);
            }
        }
    }
}

/// The sliding-window logs of one limit in one shard.
pub(super) struct LogTable {
    map: FingerprintTable<LogEntry>,
    slab: Slab,
    overflow: LogEntry,
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
            overflow: LogEntry::EMPTY,
        }
    }

    pub(super) fn check(
        &mut self,
        fp: u64,
        now_ms: u64,
        policy: &Policy,
        room: bool,
    ) -> (Decision, bool) {
        let (entry, inserted) = match self.map.slot(fp, room) {
            Slot::Found(held) => (held, false),
            Slot::Inserted(new) => (new, true),
            Slot::Refused => (&mut self.overflow, false),
        };
        let mut log = LogView {
            entry,
            slab: &mut self.slab,
        };
        (sliding_window::check(&mut log, now_ms, policy), inserted)
    }

    pub(super) fn sweep(&mut self, now_ms: u64, policy: &Policy) -> usize {
        let before = self.map.len();
        let slab = &mut self.slab;
        let mut expire = |entry: &mut LogEntry| {
            let mut log = LogView { entry, slab };
            let expired = log
                .newest()
                .is_none_or(|newest| sliding_window::is_expired(newest, now_ms, policy));
            if expired {
                while !log.is_empty() {
                    log.pop_oldest();
                }
            }
            expired
        };
        self.map.retain(|entry| !expire(entry));
        expire(&mut self.overflow);
        self.compact_if_sparse();
        before - self.map.len()
    }

    pub(super) fn clear(&mut self) -> usize {
        let removed = self.map.len();
        *self = LogTable::new(self.slab.capacity as u32);
        removed
    }

    /// Moves the live rings to the front of a fresh slab once most rings are free.
    fn compact_if_sparse(&mut self) {
        let rings = self.slab.rings();
        let free = self.slab.free.len();
        if rings < 64 || free * 2 < rings {
            return;
        }
        let capacity = self.slab.capacity;
        let mut stamps = Vec::with_capacity((rings - free) * capacity);
        let old = &self.slab.stamps;
        for entry in self
            .map
            .values_mut()
            .chain(std::iter::once(&mut self.overflow))
        {
            if entry.meta == EMPTY || entry.meta == INLINE {
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
