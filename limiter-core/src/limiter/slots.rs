//! Taking and giving back concurrency slots, under the limiter's timeout and fault policy.

use super::{Backend, Limiter};
use crate::concurrency::{Acquired, NoSlot};
use crate::store::{Check, Store};
use crate::{Concurrency, OnStoreError, Slot};

impl Limiter {
    /// Takes a slot of `limit` for `key`, or says why not. A networked store gets the
    /// limiter's timeout; its failure is answered by the fault policy: let through holding
    /// nothing ([`OnStoreError::FailOpen`]), refused ([`NoSlot::Unavailable`], under
    /// [`OnStoreError::FailClosed`]), or a slot of this instance's memory (the default).
    ///
    /// ```
    /// use limiter::{Concurrency, Limiter, NoSlot};
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let limiter = Limiter::builder().build();
    /// let uploads = Concurrency::new("uploads", 1).unwrap();
    /// let first = limiter.acquire(&uploads, b"ann").await.unwrap();
    /// assert_eq!(limiter.acquire(&uploads, b"ann").await.unwrap_err(), NoSlot::Full);
    /// drop(first); // the response is sent
    /// assert!(limiter.acquire(&uploads, b"ann").await.is_ok());
    /// # });
    /// ```
    pub async fn acquire(&self, limit: &Concurrency, key: &[u8]) -> Result<SlotGuard, NoSlot> {
        let store = match &self.inner.store {
            Backend::Memory(memory) => {
                return self.guarded(Held::Store, memory.acquire_slot(limit, key))
            }
            Backend::Other(store) if store.keeps_slots() => store,
            // A store without slots: this instance keeps them, as it would while the
            // store is away.
            Backend::Other(_) => {
                let fallback = self.inner.fallback.memory();
                return self.guarded(Held::Fallback, fallback.acquire_slot(limit, key));
            }
        };
        let attempt = store.acquire(limit, key);
        let attempt = Check::pending(async move { attempt.await.map(|a| (a, Held::Store)) });
        let fallback = |fallback: &super::fallback::Fallback| {
            (fallback.memory().acquire_slot(limit, key), Held::Fallback)
        };
        match self
            .check_remote([store.slot_part(limit, key)], attempt, fallback)
            .await
        {
            Ok((acquired, held)) => self.guarded(held, acquired),
            Err(error) => {
                tracing::debug!(scope = limit.scope(), %error, "rate limit: no concurrency slot could be asked for");
                match self.inner.on_store_error {
                    OnStoreError::FailOpen => Ok(SlotGuard::none()),
                    _ => Err(NoSlot::Unavailable),
                }
            }
        }
    }

    fn guarded(&self, held: Held, acquired: Acquired) -> Result<SlotGuard, NoSlot> {
        match acquired {
            Acquired::Slot(slot) => Ok(SlotGuard::of(self, held, slot)),
            Acquired::Full => Err(NoSlot::Full),
        }
    }

    /// Gives `slot` back where it was taken.
    pub(crate) fn release_slot(&self, held: Held, slot: &Slot) {
        match (held, &self.inner.store) {
            (Held::Fallback, _) => self.inner.fallback.memory().release_slot(slot),
            (Held::Store, Backend::Memory(memory)) => memory.release_slot(slot),
            (Held::Store, Backend::Other(store)) => store.release(slot),
        }
    }
}

/// A slot held: given back when dropped. Hold it for as long as the request runs, up to
/// the end of its response.
#[must_use = "the slot is given back when the guard is dropped"]
#[derive(Debug)]
pub struct SlotGuard {
    held: Option<(Limiter, Held, Slot)>,
}

/// Where a slot was taken: in the limiter's store, or in its fallback memory while the
/// store was away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Held {
    Store,
    Fallback,
}

impl SlotGuard {
    /// A guard that holds nothing: what a request gets when the store could not be asked
    /// and the fault policy lets it through.
    pub fn none() -> SlotGuard {
        SlotGuard { held: None }
    }

    /// A guard of `slot`, taken where `held` says, given back through `limiter`.
    pub(crate) fn of(limiter: &Limiter, held: Held, slot: Slot) -> SlotGuard {
        SlotGuard {
            held: Some((limiter.clone(), held, slot)),
        }
    }

    /// Whether it holds a slot.
    pub fn holds(&self) -> bool {
        self.held.is_some()
    }

    /// The key's slots still free when this one was taken (0 when it holds none).
    pub fn left(&self) -> u32 {
        self.held.as_ref().map_or(0, |(_, _, slot)| slot.left())
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        if let Some((limiter, held, slot)) = self.held.take() {
            limiter.release_slot(held, &slot);
        }
    }
}
