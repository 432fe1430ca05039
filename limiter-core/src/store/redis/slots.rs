//! Concurrency slots on Redis: leases in a sorted set per client and limit, taken by a
//! script (drop the expired, count, add), renewed every third of a lease while held by a
//! task of the store's own, and given back with `ZREM` — so that a slot is shared by every
//! instance, and one an instance never gave back (it died) expires with its lease.
//!
//! Everything about a lease happens on the store's runtime, in one task from the script's
//! answer on: a request that goes away while its slot is being taken (a timeout, a client
//! gone) leaves no lease behind, since the task gives back a slot nobody received — and a
//! slot sent to a request that goes before it reads it ([`Granted`]) is given back as the
//! answer is dropped.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use super::keys::{hash_slot, key_name_of};
use super::{RedisStore, StoreError};
use crate::concurrency::Acquired;
use crate::{Concurrency, Slot};

/// How long a lease lasts unless renewed; it is renewed every third of that.
pub(super) const DEFAULT_LEASE: Duration = Duration::from_secs(30);

/// The leases this store holds now, each with what stops its renewal (dropping it does).
#[derive(Default)]
pub(super) struct Leases(Mutex<HashMap<u64, oneshot::Sender<()>>>);

impl RedisStore {
    /// The Redis key of `key`'s leases under the concurrency limit `limit_id`:
    /// `PREFIX:{CLIENT}LIMIT:s`, in the client's hash slot.
    fn slots_key(&self, limit_id: u64, key: &[u8]) -> String {
        let mut name = key_name_of(&self.inner.prefix, limit_id, key);
        name.push_str(":s");
        name
    }

    /// The script's call: `op` (`a` take, `r` renew) on `lease`.
    fn slots_call(&self, name: &str, op: &str, lease: u64, most: u32) -> redis::Cmd {
        let mut command = redis::cmd("EVALSHA");
        command
            .arg(&self.inner.slots.sha)
            .arg(1)
            .arg(name)
            .arg(op)
            .arg(lease)
            .arg(most)
            .arg(self.inner.lease.as_millis() as u64);
        command
    }

    pub(super) async fn take_slot(
        &self,
        limit: &Concurrency,
        key: &[u8],
    ) -> Result<Acquired, StoreError> {
        let lease = fresh_lease();
        let name = self.slots_key(limit.id(), key);
        let most = limit.max().get();
        let command = self.slots_call(&name, "a", lease, most);
        let slot = Slot::new(limit.id(), key, lease, 0);
        let (answer, answered) = oneshot::channel::<Result<Option<Granted>, StoreError>>();
        let store = self.clone();
        self.inner.runtime.spawn(async move {
            let inner = &store.inner;
            let call = inner.connection.eval::<i64>(&inner.slots, &command);
            let held = match store.within(call).await {
                Ok(Ok(held)) => held,
                Ok(Err(e)) => {
                    let _ = answer.send(Err(super::failure("Redis could not take a slot", e)));
                    return;
                }
                Err(elapsed) => {
                    // The request gets its answer first: the removal has a timeout of its own.
                    let _ = answer.send(Err(elapsed.into()));
                    // It may have been taken all the same: given back, unheard of.
                    store.remove_lease(&name, lease).await;
                    return;
                }
            };
            let Ok(held @ 1..) = u32::try_from(held) else {
                let _ = answer.send(Ok(None));
                return;
            };
            let (stop, stopped) = oneshot::channel();
            inner.leases.0.lock().insert(lease, stop);
            let granted = Granted {
                store: Arc::downgrade(&store.inner),
                slot: Some(Slot::new(
                    slot.limit(),
                    slot.key(),
                    lease,
                    most.saturating_sub(held),
                )),
            };
            if answer.send(Ok(Some(granted))).is_err() {
                // Nobody waits for it any more: the unsent answer, dropped, gave it back.
                return;
            }
            let renewal =
                RedisStore::renew(Arc::downgrade(&store.inner), name, lease, most, stopped);
            drop(store);
            renewal.await;
        });
        match answered.await {
            Ok(Ok(Some(granted))) => Ok(Acquired::Slot(granted.received())),
            Ok(Ok(None)) => Ok(Acquired::Full),
            Ok(Err(error)) => Err(error),
            Err(_) => Err(StoreError::msg("the Redis store's runtime stopped")),
        }
    }

    /// Renews `lease` every third of a lease until it is given back (its stop fires or is
    /// dropped) — and while the store exists: it holds no store alive, so a store gone (its
    /// instance stopped) leaves its leases to expire.
    async fn renew(
        store: Weak<super::Inner>,
        name: String,
        lease: u64,
        most: u32,
        mut stopped: oneshot::Receiver<()>,
    ) {
        let Some(length) = store.upgrade().map(|inner| inner.lease) else {
            return;
        };
        loop {
            if tokio::time::timeout(length / 3, &mut stopped).await.is_ok() {
                return;
            }
            let Some(inner) = store.upgrade() else {
                return;
            };
            let store = RedisStore { inner };
            let command = store.slots_call(&name, "r", lease, most);
            let inner = &store.inner;
            // A renewal that fails is tried again a third of a lease later: the lease
            // outlives two failures. A lease Redis lost (expired while Redis was away, or
            // gone with its data) is taken again where a slot is free; where none is, the
            // renewal stops: its slot is someone else's by now.
            let renewed = store
                .within(inner.connection.eval::<i64>(&inner.slots, &command))
                .await;
            if let Ok(Ok(0)) = renewed {
                return;
            }
        }
    }

    async fn remove_lease(&self, name: &str, lease: u64) {
        let mut command = redis::cmd("ZREM");
        command.arg(name).arg(lease);
        let call = self.inner.connection.query::<i64>(&command);
        let _ = self.within(call).await;
    }

    pub(super) fn give_slot(&self, slot: &Slot) {
        // Its renewal stops as its stop is dropped.
        if self.inner.leases.0.lock().remove(&slot.lease()).is_none() {
            return;
        }
        let name = self.slots_key(slot.limit(), slot.key());
        let lease = slot.lease();
        let store = self.clone();
        // Given back in the store's own time: a slot not given back (Redis away) expires
        // with its lease.
        self.inner
            .runtime
            .spawn(async move { store.remove_lease(&name, lease).await });
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

/// A slot Redis granted, on its way to the request that asked: given back when dropped
/// unread — the request went away after Redis answered and before it heard (actix drops a
/// service's future unpolled when its connection resets), which would otherwise leave a
/// lease renewed for good.
struct Granted {
    store: Weak<super::Inner>,
    slot: Option<Slot>,
}

impl Granted {
    /// The slot, now the requester's to give back.
    fn received(mut self) -> Slot {
        self.slot.take().unwrap_or_else(|| Slot::new(0, &[], 0, 0))
    }
}

impl Drop for Granted {
    fn drop(&mut self) {
        if let (Some(slot), Some(inner)) = (self.slot.take(), self.store.upgrade()) {
            // Stops its renewal (its stop dropped) and removes its lease.
            RedisStore { inner }.give_slot(&slot);
        }
    }
}

/// A lease's name: random, so that two instances never name theirs alike.
fn fresh_lease() -> u64 {
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}
