//! The map from key fingerprints to 8-byte states: open addressing with linear probing, the
//! fingerprint itself marking a slot taken.
//!
//! A lookup usually touches one cache line — four 16-byte slots — where a general hash map
//! reads a line of control bytes and then the line of the entry. With many clients, most
//! lookups miss the CPU caches, so that line is what a check costs. Entries leave only
//! through [`retain`](FingerprintTable::retain) (sweeping), which rebuilds the table at the
//! size its survivors need: no tombstones, and memory given back.

/// Slots are at most this full (numerator over 4), which keeps probe runs short.
const MAX_LOAD_QUARTERS: usize = 3;
const MIN_CAPACITY: usize = 16;

/// Fingerprint → state. Fingerprint 0 marks an empty slot, so a key whose fingerprint is 0
/// is stored as 1 (one chance in 2⁶⁴ of sharing the budget of fingerprint 1).
pub(super) struct FingerprintTable<V> {
    slots: Vec<(u64, V)>,
    len: usize,
}

/// Where a key's state is.
pub(super) enum Slot<'a, V> {
    /// Held already.
    Found(&'a mut V),
    /// Just added, with the default state.
    Inserted(&'a mut V),
    /// Not held, and no room was granted.
    Refused,
}

impl<V: Copy + Default> FingerprintTable<V> {
    pub(super) fn new() -> FingerprintTable<V> {
        FingerprintTable {
            slots: Vec::new(),
            len: 0,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The state of `fp`, added if absent and `room` allows.
    #[inline]
    pub(super) fn slot(&mut self, fp: u64, room: bool) -> Slot<'_, V> {
        let fp = fp.max(1);
        if !self.slots.is_empty() {
            let mask = self.slots.len() - 1;
            let mut i = fp as usize & mask;
            loop {
                let held = self.slots[i].0;
                if held == fp {
                    return Slot::Found(&mut self.slots[i].1);
                }
                if held == 0 {
                    break;
                }
                i = (i + 1) & mask;
            }
            if !room {
                return Slot::Refused;
            }
            if (self.len + 1) * 4 <= self.slots.len() * MAX_LOAD_QUARTERS {
                self.slots[i] = (fp, V::default());
                self.len += 1;
                return Slot::Inserted(&mut self.slots[i].1);
            }
        } else if !room {
            return Slot::Refused;
        }
        let capacity = (self.slots.len() * 2).max(MIN_CAPACITY);
        self.rebuild(capacity, |_| true);
        let i = self.place(fp, V::default());
        self.len += 1;
        Slot::Inserted(&mut self.slots[i].1)
    }

    /// Keeps the states for which `keep` says so, in a table sized for them.
    pub(super) fn retain(&mut self, keep: impl FnMut(&mut V) -> bool) {
        let survivors = self.len;
        self.rebuild(capacity_for(survivors), keep);
        // Fewer survivors than feared: size the table for what is left.
        if capacity_for(self.len) < self.slots.len() {
            self.rebuild(capacity_for(self.len), |_| true);
        }
    }

    /// Every state held.
    pub(super) fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.slots
            .iter_mut()
            .filter(|(fp, _)| *fp != 0)
            .map(|(_, value)| value)
    }

    fn rebuild(&mut self, capacity: usize, mut keep: impl FnMut(&mut V) -> bool) {
        let old = std::mem::take(&mut self.slots);
        self.slots = vec![(0, V::default()); capacity];
        self.len = 0;
        for (fp, mut value) in old {
            if fp != 0 && keep(&mut value) {
                self.place(fp, value);
                self.len += 1;
            }
        }
    }

    /// Puts an absent `fp` in the first free slot of its run; the table has room.
    fn place(&mut self, fp: u64, value: V) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = fp as usize & mask;
        while self.slots[i].0 != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = (fp, value);
        i
    }
}

/// The smallest power-of-two capacity that holds `len` within the load bound.
fn capacity_for(len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    (len * 4 / MAX_LOAD_QUARTERS + 1)
        .next_power_of_two()
        .max(MIN_CAPACITY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn behaves_like_a_map() {
        let mut table = FingerprintTable::<u64>::new();
        let mut model = HashMap::new();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for step in 0..50_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let fp = (x % 5_000) * 0x1000_0000_0001; // collide in the low bits often
            match table.slot(fp, true) {
                Slot::Found(v) | Slot::Inserted(v) => *v += 1,
                Slot::Refused => unreachable!(),
            }
            *model.entry(fp.max(1)).or_insert(0u64) += 1;
            if step % 10_000 == 9_999 {
                table.retain(|v| *v % 2 == 0);
                model.retain(|_, v| *v % 2 == 0);
            }
            assert_eq!(table.len(), model.len());
        }
        for (fp, count) in &model {
            match table.slot(*fp, false) {
                Slot::Found(v) => assert_eq!(v, count),
                _ => panic!("{fp} lost"),
            }
        }
        assert!(matches!(table.slot(u64::MAX, false), Slot::Refused));
        table.retain(|_| false);
        assert_eq!((table.len(), table.slots.len()), (0, 0));
    }
}
