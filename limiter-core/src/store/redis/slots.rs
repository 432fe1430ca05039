//! Concurrency slots on Redis: leases in a sorted set per client and limit, taken by a
//! script (drop the expired, count, add), renewed every third of a lease while held by a
//! task of the store's own, and given back with `ZREM` — so that a slot is shared by every
//! instance, and one an instance never gave back (it died) expires with its lease.

use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;

use super::keys::{hash_slot, key_name_of};
use super::{RedisStore, StoreError};
use crate::concurrency::Acquired;
use crate::{Concurrency, Slot};

/// How long a lease lasts unless renewed; it is renewed every third of that.
pub(super) const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// The leases this store holds now: a renewal stops when its lease is no longer here.
#[derive(Default)]
pub(super) struct Leases(Mutex<HashSet<u64>>);

impl RedisStore {
    /// The Redis key of `key`'s leases under the concurrency limit `limit_id`:
    /// `PREFIX:{CLIENT}:LIMIT:s`, in the client's hash slot.
    fn slots_key(&self, limit_id: u64, key: &[u8]) -> String {
        let mut name = key_name_of(&self.inner.prefix, limit_id, key);
        name.push_str(":s");
        name
    }

    pub(super) async fn take_slot(
        &self,
        limit: &Concurrency,
        key: &[u8],
    ) -> Result<Acquired, StoreError> {
        let lease = fresh_lease();
        let name = self.slots_key(limit.id(), key);
        let length = self.inner.lease;
        let mut command = redis::cmd("EVALSHA");
        command
            .arg(&self.inner.slots.sha)
            .arg(1)
            .arg(&name)
            .arg("a")
            .arg(lease)
            .arg(limit.max().get())
            .arg(length.as_millis() as u64);
        let held: i64 = self.run(|inner| &inner.slots, command).await?;
        let Ok(held @ 1..) = u32::try_from(held) else {
            return Ok(Acquired::Full);
        };
        self.inner.leases.0.lock().insert(lease);
        let renewal =
            RedisStore::renew(Arc::downgrade(&self.inner), name, lease, limit.max().get());
        self.inner.runtime.spawn(renewal);
        let left = limit.max().get().saturating_sub(held);
        Ok(Acquired::Slot(Slot::new(limit.id(), key, lease, left)))
    }

    /// Renews `lease` every third of a lease while this store holds it — and while the
    /// store exists: it holds no store alive, so a store gone (its instance stopped) leaves
    /// its leases to expire.
    async fn renew(store: Weak<super::Inner>, name: String, lease: u64, most: u32) {
        let Some(length) = store.upgrade().map(|inner| inner.lease) else {
            return;
        };
        loop {
            tokio::time::sleep(length / 3).await;
            let Some(inner) = store.upgrade() else {
                return;
            };
            if !inner.leases.0.lock().contains(&lease) {
                return;
            }
            let mut command = redis::cmd("EVALSHA");
            command
                .arg(&inner.slots.sha)
                .arg(1)
                .arg(&name)
                .arg("r")
                .arg(lease)
                .arg(most)
                .arg(length.as_millis() as u64);
            let store = RedisStore { inner };
            // A renewal that fails is tried again a third of a lease later: the lease
            // outlives two failures.
            let _ = store.run::<i64>(|inner| &inner.slots, command).await;
        }
    }

    pub(super) fn give_slot(&self, slot: &Slot) {
        if !self.inner.leases.0.lock().remove(&slot.lease()) {
            return;
        }
        let mut command = redis::cmd("ZREM");
        command
            .arg(self.slots_key(slot.limit(), slot.key()))
            .arg(slot.lease());
        let store = self.clone();
        // Given back in the store's own time: a slot not given back (Redis away) expires
        // with its lease.
        self.inner.runtime.spawn(async move {
            let connection = store.inner.connection.clone();
            let _ =
                super::deadline::within(store.timeout(), connection.query::<i64>(&command)).await;
        });
    }

    pub(super) fn slots_slot(&self, limit: &Concurrency, key: &[u8]) -> u16 {
        if self.inner.connection.is_cluster() {
            hash_slot(&self.slots_key(limit.id(), key))
        } else {
            0
        }
    }

    /// The same store, its leases lasting `lease` unless renewed (default 30 s, renewed
    /// every 10 s): the longest an instance that dies holding slots keeps them taken.
    pub fn lease(self, lease: Duration) -> RedisStore {
        let lease = lease.max(Duration::from_millis(30));
        self.map(move |inner| inner.lease = lease)
    }

    /// How many leases of `limit` are held for `key` now (expired ones left out).
    pub async fn slots_taken(&self, limit: &Concurrency, key: &[u8]) -> Result<u64, StoreError> {
        let mut command = redis::cmd("ZCOUNT");
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
        command
            .arg(self.slots_key(limit.id(), key))
            .arg(format!("({now_ms}"))
            .arg("+inf");
        self.query(command).await
    }
}

/// A lease's name: random, so that two instances never name theirs alike.
fn fresh_lease() -> u64 {
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}
