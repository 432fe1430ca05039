//! The map from key fingerprints to 8-byte states: open addressing with linear probing, the
//! fingerprint itself marking a slot taken.
//!
//! A lookup usually touches one cache line — four 16-byte slots — where a general hash map
//! reads a line of control bytes and then the line of the entry. With many clients, most
//! lookups miss the CPU caches, so that line is what a check costs. Entries leave through
//! [`retain`](FingerprintTable::retain) (sweeping), which rebuilds the table at the size its
//! survivors need, and through [`evict`](FingerprintTable::evict) when the store is full,
//! which shifts the entries after it back (no tombstones either way).

/// Slots are at most this full (numerator over 4), which keeps probe runs short.
const MAX_LOAD_QUARTERS: usize = 3;
const MIN_CAPACITY: usize = 16;
/// How many entries an eviction compares: enough that the one it picks is nearly always
/// among the quarter closest to expiring, few enough to stay within a cache line or four.
const EVICTION_SAMPLE: usize = 8;

/// How many slots an eviction looks at, at most.
const MOST_SCANNED: usize = 256;

/// Bytes per slot: the fingerprint and an 8-byte state.
pub(super) const SLOT_BYTES: usize = 16;

/// Fingerprint → state. Fingerprint 0 marks an empty slot, so a key whose fingerprint is 0
/// is stored as 1 (one chance in 2⁶⁴ of sharing the budget of fingerprint 1).
pub(super) struct FingerprintTable<V> {
    slots: Vec<(u64, V)>,
    len: usize,
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

    /// The bytes the slots take.
    pub(super) fn bytes(&self) -> usize {
        self.slots.capacity() * SLOT_BYTES
    }

    /// Where `fp` is held, if it is.
    #[inline(always)]
    pub(super) fn find(&self, fp: u64) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        let fp = fp.max(1);
        let mask = self.slots.len() - 1;
        let mut i = fp as usize & mask;
        loop {
            match self.slots[i].0 {
                held if held == fp => return Some(i),
                0 => return None,
                _ => i = (i + 1) & mask,
            }
        }
    }

    /// The state in slot `i`, as [`find`](Self::find) or [`insert`](Self::insert) gave it.
    #[inline]
    pub(super) fn at(&mut self, i: usize) -> &mut V {
        &mut self.slots[i].1
    }

    /// The state in slot `i`, read.
    #[inline]
    pub(super) fn peek(&self, i: usize) -> V {
        self.slots[i].1
    }

    /// The state of `fp`, if held.
    #[inline]
    pub(super) fn get(&self, fp: u64) -> Option<V> {
        self.find(fp).map(|i| self.slots[i].1)
    }

    /// The bytes the slots would take after adding one more entry.
    pub(super) fn bytes_after_insert(&self) -> usize {
        if self.has_room() {
            self.bytes()
        } else {
            (self.slots.len() * 2).max(MIN_CAPACITY) * SLOT_BYTES
        }
    }

    fn has_room(&self) -> bool {
        !self.slots.is_empty() && (self.len + 1) * 4 <= self.slots.len() * MAX_LOAD_QUARTERS
    }

    /// Adds `fp` (absent) with the default state, growing the slots if needed; returns its
    /// slot.
    pub(super) fn insert(&mut self, fp: u64) -> usize {
        let fp = fp.max(1);
        if !self.has_room() {
            let capacity = (self.slots.len() * 2).max(MIN_CAPACITY);
            self.rebuild(capacity, |_| true);
        }
        self.len += 1;
        self.place(fp, V::default())
    }

    /// Removes the entry closest to expiring among a few held ones, looked at from slot
    /// `start` on (callers pass something clients cannot predict), skipping `keep` and the
    /// entries `life` says are no candidates. Returns the state removed, or `None` when no
    /// candidate is held.
    pub(super) fn evict(
        &mut self,
        start: u64,
        keep: u64,
        life: impl Fn(&V) -> Option<u64>,
    ) -> Option<V> {
        self.evict_scanning(start, keep, life, false)
    }

    /// [`evict`](Self::evict) among the first [`MOST_SCANNED`] slots only, found or not:
    /// for candidates that may be rare, where looking further would cost every request a
    /// scan of the table.
    pub(super) fn evict_nearby(
        &mut self,
        start: u64,
        keep: u64,
        life: impl Fn(&V) -> Option<u64>,
    ) -> Option<V> {
        self.evict_scanning(start, keep, life, true)
    }

    fn evict_scanning(
        &mut self,
        start: u64,
        keep: u64,
        life: impl Fn(&V) -> Option<u64>,
        nearby: bool,
    ) -> Option<V> {
        if self.len == 0 {
            return None;
        }
        let keep = keep.max(1);
        let mask = self.slots.len() - 1;
        let mut best: Option<(u64, usize)> = None;
        let mut seen = 0;
        let mut i = start as usize & mask;
        // A few cache lines' worth, not the table, once a candidate is found: candidates
        // may be rare (the logs that hold a ring), and this runs under the shard's lock.
        for scanned in 0..self.slots.len() {
            if scanned >= MOST_SCANNED && (nearby || best.is_some()) {
                break;
            }
            let (fp, value) = &self.slots[i];
            if *fp != 0 && *fp != keep {
                if let Some(left) = life(value) {
                    if best.is_none_or(|(l, _)| left < l) {
                        best = Some((left, i));
                    }
                    seen += 1;
                    if seen == EVICTION_SAMPLE {
                        break;
                    }
                }
            }
            i = (i + 1) & mask;
        }
        let (_, victim) = best?;
        let value = self.slots[victim].1;
        self.remove_at(victim);
        Some(value)
    }

    /// Halves the slots to give their bytes back: keeps the entries that `life` says live
    /// longest, as many as the halved table holds (less one, so that it takes a newcomer),
    /// and returns the others' states — none when its entries fit in half already. Nothing
    /// when the table is at its smallest.
    pub(super) fn shrink_half(&mut self, life: impl Fn(&V) -> u64) -> Vec<V> {
        let capacity = self.slots.len() / 2;
        if capacity < MIN_CAPACITY {
            return Vec::new();
        }
        let keep = (capacity * MAX_LOAD_QUARTERS / 4 - 1).min(self.len);
        let mut lives: Vec<(u64, usize)> = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, (fp, _))| *fp != 0)
            .map(|(i, (_, value))| (life(value), i))
            .collect();
        let drop = lives.len() - keep;
        if drop > 0 && drop < lives.len() {
            lives.select_nth_unstable(drop);
        }
        let mut victim = vec![false; self.slots.len()];
        for &(_, i) in &lives[..drop] {
            victim[i] = true;
        }
        let dropped = lives[..drop]
            .iter()
            .map(|&(_, i)| self.slots[i].1)
            .collect();
        let old = std::mem::take(&mut self.slots);
        self.slots = vec![(0, V::default()); capacity];
        self.len = 0;
        for (i, (fp, value)) in old.into_iter().enumerate() {
            if fp != 0 && !victim[i] {
                self.place(fp, value);
                self.len += 1;
            }
        }
        dropped
    }

    /// How many entries [`shrink_half`](Self::shrink_half) would keep.
    pub(super) fn kept_by_halving(&self) -> usize {
        let capacity = self.slots.len() / 2;
        if capacity < MIN_CAPACITY {
            return self.len;
        }
        (capacity * MAX_LOAD_QUARTERS / 4 - 1).min(self.len)
    }

    /// Removes `fp`, returning its state if it was held.
    pub(super) fn remove(&mut self, fp: u64) -> Option<V> {
        let i = self.find(fp)?;
        let value = self.slots[i].1;
        self.remove_at(i);
        Some(value)
    }

    /// Empties slot `i` and shifts the entries of its probe run back, so that every entry
    /// stays reachable from its home slot.
    fn remove_at(&mut self, mut i: usize) {
        let mask = self.slots.len() - 1;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let fp = self.slots[j].0;
            if fp == 0 {
                break;
            }
            let home = fp as usize & mask;
            // The entry at j may move to i unless its home lies cyclically in (i, j].
            let stays = if i <= j {
                i < home && home <= j
            } else {
                i < home || home <= j
            };
            if !stays {
                self.slots[i] = self.slots[j];
                i = j;
            }
        }
        self.slots[i] = (0, V::default());
        self.len -= 1;
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

    /// Every fingerprint held, with its state.
    pub(super) fn entries(&self) -> impl Iterator<Item = (u64, V)> + '_ {
        self.slots.iter().copied().filter(|(fp, _)| *fp != 0)
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

    struct Xorshift(u64);

    impl Xorshift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    #[test]
    fn behaves_like_a_map_through_inserts_evictions_and_sweeps() {
        let mut table = FingerprintTable::<u64>::new();
        let mut model: HashMap<u64, u64> = HashMap::new();
        let mut rng = Xorshift(0x9e37_79b9_7f4a_7c15);
        for step in 0..60_000u64 {
            let fp = (rng.next() % 5_000) * 0x1000_0000_0001; // collide in the low bits often
            let i = match table.find(fp) {
                Some(i) => i,
                None => table.insert(fp),
            };
            *table.at(i) += 1;
            *model.entry(fp.max(1)).or_insert(0) += 1;
            if step % 7 == 0 {
                // Evict the entry with the smallest count among the sample: the model
                // cannot know which, so it is told afterwards by the count that vanished.
                let total: u64 = table.values_mut().map(|v| *v).sum();
                let removed = table.evict(rng.next(), 0, |v| Some(*v)).unwrap();
                let after: u64 = table.values_mut().map(|v| *v).sum();
                assert_eq!(total - after, removed);
                let victim = *model
                    .iter()
                    .find(|(fp, v)| **v == removed && table.find(**fp).is_none())
                    .unwrap()
                    .0;
                model.remove(&victim);
            }
            if step % 10_000 == 9_999 {
                table.retain(|v| *v % 2 == 0);
                model.retain(|_, v| *v % 2 == 0);
            }
            assert_eq!(table.len(), model.len());
        }
        for (fp, count) in &model {
            assert_eq!(table.get(*fp), Some(*count), "{fp} lost or wrong");
        }
        assert_eq!(table.find(u64::MAX), None);
        table.retain(|_| false);
        assert_eq!((table.len(), table.slots.len()), (0, 0));
    }

    #[test]
    fn halving_keeps_the_longest_lived_and_gives_half_the_bytes_back() {
        let mut table = FingerprintTable::<u64>::new();
        for fp in 1..=1_000u64 {
            let i = table.insert(fp * 0x9e37_79b9);
            *table.at(i) = fp; // its life
        }
        let bytes = table.bytes();
        let dropped = table.shrink_half(|v| *v);
        assert_eq!(table.bytes(), bytes / 2);
        assert_eq!(table.len() + dropped.len(), 1_000);
        assert!(dropped.iter().all(|&v| v <= 1_000 - table.len() as u64));
        for fp in 1_000 - table.len() as u64 + 1..=1_000 {
            assert_eq!(table.get(fp * 0x9e37_79b9), Some(fp));
        }
        let mut small = FingerprintTable::<u64>::new();
        small.insert(1);
        assert!(small.shrink_half(|v| *v).is_empty());
        assert_eq!(small.len(), 1);
    }

    #[test]
    fn eviction_picks_the_closest_to_expiring_of_its_sample_and_spares_the_kept_key() {
        let mut table = FingerprintTable::<u64>::new();
        for fp in 1..=4u64 {
            let i = table.insert(fp);
            *table.at(i) = 100 - fp; // fp 4 expires soonest
        }
        assert_eq!(table.evict(0, 4, |v| Some(*v)), Some(97)); // 4 is kept: 3 goes
        assert_eq!(table.evict(0, 0, |v| Some(*v)), Some(96)); // now 4
        assert_eq!(table.len(), 2);
        let mut alone = FingerprintTable::<u64>::new();
        alone.insert(9);
        assert_eq!(alone.evict(0, 9, |v| Some(*v)), None);
    }
}
