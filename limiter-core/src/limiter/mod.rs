//! The entry point of the engine: a store, a clock and a policy for store faults, asked "may
//! this key pass this limit now?". It knows nothing of HTTP: the glue on top (the `limiter`
//! crate) wraps it with who the client is and what responses look like.

mod builder;
mod failover;
mod fallback;
#[cfg(feature = "redis")]
mod following;
mod overrides;
mod rejections;
mod slots;

pub use builder::LimiterBuilder;
use overrides::Overrides;

pub use failover::{OnStoreError, Verdict, RETRY_INTERVAL};
pub use slots::SlotGuard;

use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use arc_swap::ArcSwap;

use crate::clock::Clock;
use crate::registry;
use crate::store::{Charge, Check, Checked, Limit, MemoryStore, Receipt, Store, StoreError};
use failover::StoreHealth;

/// Decides requests: reads its clock, asks its store, and applies its policy when the store
/// fails. The glue on top (the `limiter` crate's `Limiter`) adds how responses look and who
/// the client is.
///
/// Build it once, outside `HttpServer::new`'s closure, and clone it into each worker's
/// `App` with `.app_data(limiter.clone())`: clones share the store and the clock. A limiter
/// built inside the closure would exist once per worker, and multiply the limit.
/// Handlers that find no `Limiter` in their app data use [`Limiter::global`].
///
/// ```
/// use std::time::Duration;
/// use limiter::{Limit, Limiter, ManualClock, Policy};
///
/// let clock = ManualClock::new();
/// let limiter = Limiter::builder().clock(clock.clone()).build();
/// let limit = Limit::new("login", Policy::new(1, Duration::from_secs(60))?);
///
/// let first = limiter.check(&limit, b"198.51.100.4").now_or_never().unwrap()?;
/// assert!(first.allowed());
/// let second = limiter.check(&limit, b"198.51.100.4").now_or_never().unwrap()?;
/// assert_eq!(second.retry_after(), Some(Duration::from_secs(60)));
/// clock.advance(Duration::from_secs(60));
/// assert!(limiter.check(&limit, b"198.51.100.4").now_or_never().unwrap()?.allowed());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Limiter {
    inner: Arc<Settings>,
}

struct Settings {
    store: Backend,
    clock: Arc<dyn Clock>,
    on_store_error: OnStoreError,
    store_timeout: Duration,
    /// Whether the store bounds its backend's time itself (see [`Store::accept_timeout`]):
    /// then the time a check waits in the store's own queue is not held against it.
    store_times_itself: bool,
    health: StoreHealth,
    /// Counts while a networked store is away, under [`OnStoreError::FallBackToMemory`].
    fallback: fallback::Fallback,
    /// Policies set for scopes by configuration, overriding the declared ones: read on every
    /// request without a lock, replaced whole when one changes.
    overrides: ArcSwap<Overrides>,
    /// Whether any override exists: most limiters have none, and skip the lookup.
    overridden: AtomicBool,
    /// Limits seen for each scope besides the declared ones (overrides, per-request
    /// policies), so that [`reset`](Limiter::reset) finds every budget of a scope.
    seen: parking_lot::RwLock<Vec<Limit>>,
    /// Whether more limits came than are remembered (reported once).
    forgetful: AtomicBool,
    /// Rejections a networked store decided, answered here until they end.
    rejections: rejections::Rejections,
}

/// The limits a limiter remembers besides the declared ones, at most (see
/// [`Limiter::remember`]).
pub(crate) const MOST_REMEMBERED: usize = 4_096;

/// The in-memory store is called directly, without a virtual call or a future: it is the
/// hot path of most services.
#[derive(Clone)]
enum Backend {
    Memory(MemoryStore),
    Other(Arc<dyn Store>),
}

/// The parts of `store` that hold `charges`' state, for their health.
fn parts(store: &dyn Store, charges: &[Charge<'_>]) -> Vec<u16> {
    let mut parts: Vec<u16> = charges.iter().map(|c| store.part(c.limit, c.key)).collect();
    parts.sort_unstable();
    parts.dedup();
    parts
}

/// A limiter that does not keep its settings alive: what a store's background task holds.
#[derive(Clone)]
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
pub(crate) struct WeakLimiter(std::sync::Weak<Settings>);

#[cfg_attr(not(feature = "redis"), allow(dead_code))]
impl WeakLimiter {
    pub(crate) fn upgrade(&self) -> Option<Limiter> {
        self.0.upgrade().map(|inner| Limiter { inner })
    }
}

#[cfg_attr(not(feature = "redis"), allow(dead_code))]
impl Limiter {
    pub(crate) fn downgrade(&self) -> WeakLimiter {
        WeakLimiter(Arc::downgrade(&self.inner))
    }

    /// Forgets every rejection this instance remembers: a client reset by another
    /// instance or a tool is then asked about in the store again.
    pub(crate) fn forget_remembered(&self) {
        self.inner.rejections.clear();
    }
}

impl Backend {
    fn of<S: Store>(store: S) -> Backend {
        let any = &store as &dyn Any;
        // A memory store behind an `Arc` is still called directly: it needs no runtime,
        // timer or fault policy.
        let memory = any
            .downcast_ref::<MemoryStore>()
            .or_else(|| any.downcast_ref::<Arc<MemoryStore>>().map(|a| &**a));
        match memory {
            Some(memory) => Backend::Memory(memory.clone()),
            None => Backend::Other(Arc::new(store)),
        }
    }
}

impl Limiter {
    /// A builder; with no settings it gives a limiter with a fresh in-memory store and the
    /// system clock.
    pub fn builder() -> LimiterBuilder {
        LimiterBuilder::default()
    }

    /// The process-wide default: [`MemoryStore::global`], [`SystemClock`](crate::SystemClock), default settings.
    ///
    /// Conflicting scopes (see [`LimiterBuilder::build`]) cannot stop a program that never
    /// builds a limiter: they are logged as an `error` event when this one is first used,
    /// and each conflicting limit keeps a budget of its own.
    pub fn global() -> &'static Limiter {
        static GLOBAL: OnceLock<Limiter> = OnceLock::new();
        GLOBAL.get_or_init(|| {
            for conflict in registry::conflicts() {
                tracing::error!(%conflict, "rate limit scopes in conflict");
            }
            registry::report_in_flight_conflicts();
            Limiter::builder()
                .store(MemoryStore::global().clone())
                .build_unchecked(true)
        })
    }

    /// Counts a request of `key` against `limit` now, and decides it.
    ///
    /// A networked store gets at most the limiter's timeout; when it fails, the store error
    /// policy decides: under [`OnStoreError::FallBackToMemory`] the answer comes from this
    /// instance's memory, under the others the error is returned for the handler to apply.
    /// That path needs a Tokio runtime (actix provides one).
    #[inline(always)]
    pub fn check<'a>(&'a self, limit: &'a Limit, key: &'a [u8]) -> Check<'a> {
        let now = self.inner.clock.now();
        match &self.inner.store {
            Backend::Memory(memory) => Check::ready(Ok(memory.check_at(limit, key, now))),
            Backend::Other(store) => {
                let rejections = &self.inner.rejections;
                if let Some(decision) = rejections.answer(limit, key, now) {
                    return Check::ready(Ok(decision));
                }
                // Only the store's own answers are remembered, not the fallback's.
                let answered = Check::pending(async move {
                    let answer = store.check(limit, key, now).await;
                    if let Ok(decision) = &answer {
                        rejections.remember(limit, key, now, decision);
                    }
                    answer
                });
                Check::pending(self.check_remote(
                    [store.part(limit, key)],
                    answered,
                    move |fallback| fallback.check_at(limit, key, now),
                ))
            }
        }
    }

    /// Counts one request against several limits (each with its key and cost) now, all or
    /// nothing: see [`Store::check_all`]. The store error policy applies as for
    /// [`check`](Self::check). The answer reads as the decisions, one per charge, and
    /// carries the [`Receipt`] to [`refund`](Self::refund) the request with.
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::{Charge, Limit, Limiter, Policy};
    /// let limiter = Limiter::builder().build();
    /// let minute = Limit::new("comment", Policy::new(5, Duration::from_secs(60))?);
    /// let day = Limit::new("comment-1d", Policy::new(1, Duration::from_secs(86_400))?);
    /// let both = [Charge::new(&minute, b"client"), Charge::new(&day, b"client")];
    /// let first = limiter.check_all(&both).now_or_never().unwrap()?;
    /// assert!(first.iter().all(|d| d.allowed()));
    /// let second = limiter.check_all(&both).now_or_never().unwrap()?;
    /// // The daily limit rejects it, so the minute limit did not count it either.
    /// assert_eq!((second[0].remaining(), second[1].allowed()), (4, false));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_all<'a>(&'a self, charges: &'a [Charge<'a>]) -> Check<'a, Checked> {
        self.check_all_at(charges, self.inner.clock.now())
    }

    /// [`check_all`](Self::check_all) at a reading of the limiter's clock taken already.
    pub(crate) fn check_all_at<'a>(
        &'a self,
        charges: &'a [Charge<'a>],
        now: Duration,
    ) -> Check<'a, Checked> {
        match &self.inner.store {
            Backend::Memory(memory) => Check::ready(Ok(memory.check_all_at(charges, now))),
            Backend::Other(store) => Check::pending(self.check_remote(
                parts(&**store, charges),
                store.check_all(charges, now),
                move |fallback| fallback.check_all_at(charges, now),
            )),
        }
    }

    /// The clock's reading now.
    pub fn now(&self) -> Duration {
        self.inner.clock.now()
    }

    /// Gives back what a check of `charges` counted, as the `receipt` of its
    /// [`check_all`](Self::check_all) says (`count = "failures"`: the request turned out a
    /// success): to the store that counted it — this instance's fallback memory if that
    /// is where it was counted while a networked store was away — and only what is still
    /// counted of it. A refund is never worth an error: one the store cannot take leaves
    /// the units counted, erring on the side of the limit.
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::{Charge, Limit, Limiter, ManualClock, Policy};
    /// let clock = ManualClock::new();
    /// let limiter = Limiter::builder().clock(clock.clone()).build();
    /// let login = Limit::new("login", Policy::new(1, Duration::from_secs(60))?);
    /// let attempt = [Charge::new(&login, b"ann")];
    /// let checked = limiter.check_all(&attempt).now_or_never().unwrap()?;
    /// clock.advance(Duration::from_secs(2)); // the handler ran, and succeeded
    /// limiter.refund(&attempt, checked.receipt()).now_or_never().unwrap()?;
    /// assert!(limiter.check_all(&attempt).now_or_never().unwrap()?[0].allowed());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn refund<'a>(&'a self, charges: &'a [Charge<'a>], receipt: &'a Receipt) -> Check<'a, ()> {
        if !receipt.counted_anything() {
            return Check::ready(Ok(()));
        }
        let now = self.inner.clock.now();
        if receipt.is_fallback() {
            self.inner.fallback.refund_at(charges, receipt, now);
            return Check::ready(Ok(()));
        }
        match &self.inner.store {
            Backend::Memory(memory) => {
                memory.refund_at(charges, receipt, now);
                Check::ready(Ok(()))
            }
            Backend::Other(store) => Check::pending(async move {
                for charge in charges {
                    self.inner.rejections.refunded(charge.limit, charge.key);
                }
                let parts = parts(&**store, charges);
                // A store that is away cannot take it back now: the units stay counted,
                // which errs on the side of the limit, and the response is not held up.
                if self.inner.health.is_up(&parts) {
                    let _ = self
                        .within_timeout(store.refund(charges, receipt, now))
                        .await;
                }
                Ok(())
            }),
        }
    }

    /// A networked store's check, within the timeout and under the store error policy.
    async fn check_remote<'a, T: Unpin>(
        &'a self,
        parts: impl AsRef<[u16]>,
        attempt: Check<'a, T>,
        fallback: impl FnOnce(&fallback::Fallback) -> T,
    ) -> Result<T, StoreError> {
        let settings = &*self.inner;
        let store = match &settings.store {
            Backend::Other(store) => store.name(),
            Backend::Memory(_) => "memory",
        };
        let parts = parts.as_ref();
        let error = if settings.health.should_try(parts) {
            let started = crate::observe::ENABLED.then(std::time::Instant::now);
            let answer = self.within_timeout(attempt).await;
            if let Some(started) = started {
                crate::observe::store_answered(store, started.elapsed());
            }
            let error = match answer {
                Ok(answer) => {
                    settings.health.answered(parts, store);
                    return Ok(answer);
                }
                Err(error) => error,
            };
            settings
                .health
                .failed(parts, store, &error, settings.on_store_error);
            error
        } else {
            StoreError::msg("the rate limit store is unavailable; retrying it shortly")
        };
        match settings.on_store_error {
            OnStoreError::FallBackToMemory => Ok(fallback(&settings.fallback)),
            OnStoreError::FailOpen | OnStoreError::FailClosed => Err(error),
        }
    }

    /// A store's answer within the limiter's timeout — unless the store bounds its
    /// backend's time itself, or the answer is there at once. Outside a Tokio runtime there
    /// is no timer: the store's answer is awaited as it comes.
    async fn within_timeout<T: Unpin>(&self, mut attempt: Check<'_, T>) -> Result<T, StoreError> {
        if let Some(answer) = attempt.take_ready() {
            return answer;
        }
        let settings = &*self.inner;
        if settings.store_times_itself || tokio::runtime::Handle::try_current().is_err() {
            return attempt.await;
        }
        match tokio::time::timeout(settings.store_timeout, attempt).await {
            Ok(answer) => answer,
            Err(_) => Err(StoreError::msg(format!(
                "the rate limit store did not answer within {:?}",
                settings.store_timeout
            ))),
        }
    }

    /// Notes a limit of a scope that is not declared in the code (an override, a policy
    /// chosen per request), so that [`reset`](Self::reset) finds its budget too. At most
    /// 4,096 are noted (a `policy` function choosing from more gets a `warn`,
    /// once): memory a program's requests choose stays bounded.
    #[doc(hidden)]
    pub fn remember(&self, limit: &Limit) {
        // Read first: once a limit is known, remembering it again costs no exclusive lock.
        if self.inner.seen.read().iter().any(|l| l == limit) {
            return;
        }
        let mut seen = self.inner.seen.write();
        if seen.iter().any(|l| l == limit) {
            return;
        }
        if seen.len() < MOST_REMEMBERED {
            seen.push(limit.clone());
        } else if !self.inner.forgetful.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                scope = limit.scope(),
                "rate limit: more than {MOST_REMEMBERED} limits chosen per request \
                 (`policy = fn`, `check`) or set while serving; the ones beyond are counted \
                 but not remembered, so `reset` does not find their budgets"
            );
        }
    }

    /// Forgets the state of `key` under every limit of `scope` this program knows (the
    /// declared ones, overrides, and policies seen per request): a client starts afresh. In
    /// memory and in Redis alike. `key` is the store's key; to name a client as requests
    /// are counted (an address, a user id), use `Limiter::reset` with a `Subject`.
    pub fn reset<'a>(&'a self, scope: &'a str, key: &'a [u8]) -> Check<'a, ()> {
        let mut limits: Vec<Limit> = registry::limits_of(scope);
        for limit in self.inner.seen.read().iter() {
            if limit.scope() == scope && !limits.contains(limit) {
                limits.push(limit.clone());
            }
        }
        match &self.inner.store {
            Backend::Memory(memory) => {
                for limit in &limits {
                    memory.reset(limit, key);
                }
                Check::ready(Ok(()))
            }
            Backend::Other(store) => Check::pending(async move {
                for limit in &limits {
                    self.inner.rejections.forget(limit, key);
                    store.reset(limit, key).await?;
                }
                Ok(())
            }),
        }
    }

    /// What limited handlers do when the store fails.
    pub fn on_store_error(&self) -> OnStoreError {
        self.inner.on_store_error
    }

    /// The limiter's clock.
    pub fn clock(&self) -> &dyn Clock {
        &*self.inner.clock
    }

    /// The limiter's store.
    pub fn store(&self) -> &dyn Store {
        match &self.inner.store {
            Backend::Memory(memory) => memory,
            Backend::Other(store) => &**store,
        }
    }

    /// The in-memory store, when that is the store.
    pub fn memory_store(&self) -> Option<&MemoryStore> {
        match &self.inner.store {
            Backend::Memory(memory) => Some(memory),
            Backend::Other(_) => None,
        }
    }
}

impl fmt::Debug for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limiter")
            .field("on_store_error", &self.inner.on_store_error)
            .field("store_timeout", &self.inner.store_timeout)
            .finish_non_exhaustive()
    }
}
