//! Concurrency slots in memory: per key, the number of its requests in flight, under the
//! lock of the shard its key falls in.

use super::MemoryStore;
use crate::concurrency::Acquired;
use crate::{Concurrency, Slot};

impl MemoryStore {
    /// Takes one of `limit`'s slots for `key`, if fewer than its `max` are taken.
    ///
    /// ```
    /// use limiter::{Acquired, Concurrency, MemoryStore};
    /// let store = MemoryStore::new();
    /// let exports = Concurrency::new("exports", 1).unwrap();
    /// let Acquired::Slot(slot) = store.acquire_slot(&exports, b"tenant-7") else { panic!() };
    /// assert!(matches!(store.acquire_slot(&exports, b"tenant-7"), Acquired::Full));
    /// store.release_slot(&slot);
    /// assert!(matches!(store.acquire_slot(&exports, b"tenant-7"), Acquired::Slot(_)));
    /// ```
    pub fn acquire_slot(&self, limit: &Concurrency, key: &[u8]) -> Acquired {
        let fp = self.fingerprint(key);
        let mut shard = self.inner.shards[self.shard_of(fp)].0.lock();
        match shard.take_slot(limit.id(), fp, limit.max().get()) {
            Some(left) => Acquired::Slot(Slot::new(limit.id(), key, fp, left)),
            None => Acquired::Full,
        }
    }

    /// Gives `slot` back (a slot taken by [`acquire_slot`](Self::acquire_slot)).
    pub fn release_slot(&self, slot: &Slot) {
        let fp = self.fingerprint(slot.key());
        self.inner.shards[self.shard_of(fp)]
            .0
            .lock()
            .give_slot(slot.limit(), fp);
    }

    /// How many slots of `limit` are taken for `key` now.
    pub fn slots_taken(&self, limit: &Concurrency, key: &[u8]) -> u32 {
        let fp = self.fingerprint(key);
        self.inner.shards[self.shard_of(fp)]
            .0
            .lock()
            .slots_taken(limit.id(), fp)
    }
}
