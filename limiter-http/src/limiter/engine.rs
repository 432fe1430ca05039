//! What a [`Limiter`] does as the engine's limiter: counting, refunds, slots, policies set
//! at run time, its clock and store. Each method is the engine's
//! ([`limiter_core::Limiter`]), whose page has the details; the HTTP limiter adds who the
//! client is and how an answer looks (in `mod.rs`).

use std::sync::Arc;
use std::time::Duration;

use super::Limiter;
use limiter_core::{
    Charge, Check, Checked, Clock, Concurrency, Limit, MemoryStore, NoSlot, OnStoreError, Policy,
    Receipt, Routes, SlotGuard, Store, StoreError, Verdict,
};

impl<F: crate::Front> Limiter<F> {
    /// Counts one request of `key` against `limit` now: see
    /// [`limiter_core::Limiter::check`]. Ready at once on the in-memory store
    /// (`now_or_never`), awaited on a networked one.
    #[inline(always)]
    pub fn check<'a>(&'a self, limit: &'a Limit, key: &'a [u8]) -> Check<'a> {
        self.engine.check(limit, key)
    }

    /// Counts one request against several limits (each with its key and cost) now, all or
    /// nothing, with the [`Receipt`] to [`refund`](Self::refund) it by: see
    /// [`limiter_core::Limiter::check_all`].
    #[inline]
    pub fn check_all<'a>(&'a self, charges: &'a [Charge<'a>]) -> Check<'a, Checked> {
        self.engine.check_all(charges)
    }

    /// Gives back what a check of `charges` counted, as its `receipt` says: see
    /// [`limiter_core::Limiter::refund`].
    pub fn refund<'a>(&'a self, charges: &'a [Charge<'a>], receipt: &'a Receipt) -> Check<'a, ()> {
        self.engine.refund(charges, receipt)
    }

    /// Takes a slot of the concurrency limit `limit` for `key`, or says why not: see
    /// [`limiter_core::Limiter::acquire`].
    pub async fn acquire(&self, limit: &Concurrency, key: &[u8]) -> Result<SlotGuard, NoSlot> {
        self.engine.acquire(limit, key).await
    }

    /// Makes a limit counted outside any handler known to [`reset`](Self::reset) and the
    /// routes page: see [`limiter_core::Limiter::remember`].
    #[doc(hidden)]
    pub fn remember(&self, limit: &Limit) {
        self.engine.remember(limit);
    }

    /// Changes the policy of every limit of `scope` from the next request on, on every
    /// worker: see [`limiter_core::Limiter::set_policy`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::{Limiter, Policy};
    /// let limiter = Limiter::builder().build();
    /// limiter.set_policy("search", Policy::new(100, Duration::from_secs(60))?);
    /// assert_eq!(limiter.policy("search"), Some(Policy::new(100, Duration::from_secs(60))?));
    /// limiter.clear_policy("search");
    /// assert_eq!(limiter.policy("search"), None);
    /// # Ok::<(), limiter::PolicyError>(())
    /// ```
    pub fn set_policy(&self, scope: &str, policy: Policy) {
        self.engine.set_policy(scope, policy);
    }

    /// Takes back what [`set_policy`](Self::set_policy) (or the builder's `policy`) set for
    /// `scope`: see [`limiter_core::Limiter::clear_policy`].
    pub fn clear_policy(&self, scope: &str) {
        self.engine.clear_policy(scope);
    }

    /// The policy configuration gives `scope`, if any: see
    /// [`limiter_core::Limiter::policy`].
    pub fn policy(&self, scope: &str) -> Option<Policy> {
        self.engine.policy(scope)
    }

    /// `declared` as configuration overrides it, if it does: see
    /// [`limiter_core::Limiter::overridden`].
    #[doc(hidden)]
    #[inline]
    pub fn overridden(&self, declared: &Limit) -> Option<Arc<Limit>> {
        self.engine.overridden(declared)
    }

    /// Every limit of the program, as this limiter applies it: see
    /// [`limiter_core::Limiter::routes`].
    pub fn routes(&self) -> Routes {
        self.engine.routes()
    }

    /// The clock's reading now.
    #[inline]
    pub fn now(&self) -> Duration {
        self.engine.now()
    }

    /// What limited handlers do when the store fails.
    pub fn on_store_error(&self) -> OnStoreError {
        self.engine.on_store_error()
    }

    /// The limiter's clock.
    pub fn clock(&self) -> &dyn Clock {
        self.engine.clock()
    }

    /// The limiter's store.
    pub fn store(&self) -> &dyn Store {
        self.engine.store()
    }

    /// The in-memory store, when that is the store.
    pub fn memory_store(&self) -> Option<&MemoryStore> {
        self.engine.memory_store()
    }

    /// What the fault policy makes of a store's answer: see
    /// [`limiter_core::Limiter::verdict`].
    #[doc(hidden)]
    #[inline]
    pub fn verdict<T>(&self, result: Result<T, StoreError>) -> Verdict<T> {
        self.engine.verdict(result)
    }
}
