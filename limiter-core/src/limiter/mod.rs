//! The entry point of the engine: a store, a clock and a policy for store faults, asked "may
//! this key pass this limit now?". It knows nothing of HTTP: the actix glue
//! ([`crate::actix`]) keeps its settings here without this module naming them.

mod failover;

pub use failover::{OnStoreError, Verdict, RETRY_INTERVAL};

use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::clock::{Clock, SystemClock};
use crate::registry::{self, ScopeConflict};
use crate::store::{Check, Limit, MemoryStore, Store, StoreError};
use crate::Decision;
use failover::StoreHealth;

/// Decides requests: reads its clock, asks its store, and applies its policy when the store
/// fails. The actix glue adds how responses look and who the client is.
///
/// Build it once, outside `HttpServer::new`'s closure, and clone it into each worker's
/// `App` with `.app_data(limiter.clone())`: clones share the store and the clock. A limiter
/// built inside the closure would exist once per worker, and multiply the limit.
/// Handlers that find no `Limiter` in their app data use [`Limiter::global`].
///
/// ```
/// use std::time::Duration;
/// use limiter_core::{Limit, Limiter, ManualClock, Policy};
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
    health: StoreHealth,
    /// Counts while a networked store is away, under [`OnStoreError::FallBackToMemory`].
    fallback: MemoryStore,
    /// The glue's settings, opaque to the engine.
    glue: Option<Box<dyn Any + Send + Sync>>,
    /// The name of the thread that built it, for the glue to judge where that was.
    built_on: Option<String>,
}

/// The in-memory store is called directly, without a virtual call or a future: it is the
/// hot path of most services.
#[derive(Clone)]
enum Backend {
    Memory(MemoryStore),
    Other(Arc<dyn Store>),
}

impl Backend {
    fn of<S: Store>(store: S) -> Backend {
        match (&store as &dyn Any).downcast_ref::<MemoryStore>() {
            Some(memory) => Backend::Memory(memory.clone()),
            None => Backend::Other(Arc::new(store)),
        }
    }
}

/// Whether a limiter other than the global one was built in this process.
static BUILT: AtomicBool = AtomicBool::new(false);

impl Limiter {
    /// A builder; with no settings it gives a limiter with a fresh in-memory store and the
    /// system clock.
    pub fn builder() -> LimiterBuilder {
        LimiterBuilder::default()
    }

    /// The process-wide default: [`MemoryStore::global`], [`SystemClock`], default settings.
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
            Limiter::builder()
                .store(MemoryStore::global().clone())
                .build_unchecked(true)
        })
    }

    /// Whether any limiter besides [`Limiter::global`] was built in this process.
    pub(crate) fn any_built() -> bool {
        BUILT.load(Ordering::Relaxed)
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
            Backend::Other(store) => Check::pending(
                self.check_remote(store.check(limit, key, now), move |fallback| {
                    fallback.check_at(limit, key, now)
                }),
            ),
        }
    }

    /// Counts one request against several limits (each with its key) now, all or nothing:
    /// see [`Store::check_all`]. The store error policy applies as for
    /// [`check`](Self::check).
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter_core::{Limit, Limiter, Policy};
    /// let limiter = Limiter::builder().build();
    /// let minute = Limit::new("comment", Policy::new(5, Duration::from_secs(60))?);
    /// let day = Limit::new("comment-1d", Policy::new(1, Duration::from_secs(86_400))?);
    /// let both = [(&minute, &b"client"[..]), (&day, &b"client"[..])];
    /// let first = limiter.check_all(&both).now_or_never().unwrap()?;
    /// assert!(first.iter().all(|d| d.allowed()));
    /// let second = limiter.check_all(&both).now_or_never().unwrap()?;
    /// // The daily limit rejects it, so the minute limit did not count it either.
    /// assert_eq!((second[0].remaining(), second[1].allowed()), (4, false));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_all<'a>(
        &'a self,
        requests: &'a [(&'a Limit, &'a [u8])],
    ) -> Check<'a, Vec<Decision>> {
        let now = self.inner.clock.now();
        match &self.inner.store {
            Backend::Memory(memory) => Check::ready(Ok(memory.check_all_at(requests, now))),
            Backend::Other(store) => Check::pending(
                self.check_remote(store.check_all(requests, now), move |fallback| {
                    fallback.check_all_at(requests, now)
                }),
            ),
        }
    }

    /// A networked store's check, within the timeout and under the store error policy.
    async fn check_remote<'a, T: Unpin>(
        &'a self,
        attempt: Check<'a, T>,
        fallback: impl FnOnce(&MemoryStore) -> T,
    ) -> Result<T, StoreError> {
        let settings = &*self.inner;
        let error = if settings.health.should_try() {
            let error = match tokio::time::timeout(settings.store_timeout, attempt).await {
                Ok(Ok(answer)) => {
                    settings.health.answered();
                    return Ok(answer);
                }
                Ok(Err(error)) => error,
                Err(_) => StoreError::msg(format!(
                    "the rate limit store did not answer within {:?}",
                    settings.store_timeout
                )),
            };
            settings.health.failed(&error, settings.on_store_error);
            error
        } else {
            StoreError::msg("the rate limit store is unavailable; retrying it shortly")
        };
        match settings.on_store_error {
            OnStoreError::FallBackToMemory => Ok(fallback(&settings.fallback)),
            OnStoreError::FailOpen | OnStoreError::FailClosed => Err(error),
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
    pub(crate) fn memory_store(&self) -> Option<&MemoryStore> {
        match &self.inner.store {
            Backend::Memory(memory) => Some(memory),
            Backend::Other(_) => None,
        }
    }

    /// Which limiter this is: clones are the same one.
    pub(crate) fn identity(&self) -> usize {
        Arc::as_ptr(&self.inner) as usize
    }

    /// The name of the thread it was built on.
    pub(crate) fn built_on(&self) -> Option<&str> {
        self.inner.built_on.as_deref()
    }

    /// The glue's settings of type `G`, if it gave any.
    #[inline]
    pub(crate) fn glue<G: 'static>(&self) -> Option<&G> {
        self.inner.glue.as_deref()?.downcast_ref()
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

/// Settings for a [`Limiter`].
pub struct LimiterBuilder {
    store: Option<Backend>,
    clock: Option<Arc<dyn Clock>>,
    on_store_error: OnStoreError,
    store_timeout: Duration,
    glue: Option<Box<dyn Any + Send + Sync>>,
}

impl fmt::Debug for LimiterBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LimiterBuilder")
            .field("on_store_error", &self.on_store_error)
            .field("store_timeout", &self.store_timeout)
            .finish_non_exhaustive()
    }
}

impl Default for LimiterBuilder {
    fn default() -> LimiterBuilder {
        LimiterBuilder {
            store: None,
            clock: None,
            on_store_error: OnStoreError::FallBackToMemory,
            store_timeout: LimiterBuilder::DEFAULT_STORE_TIMEOUT,
            glue: None,
        }
    }
}

impl LimiterBuilder {
    /// How long a networked store may take per check, by default: 50 ms.
    pub const DEFAULT_STORE_TIMEOUT: Duration = Duration::from_millis(50);

    /// What limited handlers do when a networked store fails or exceeds the timeout
    /// (default: [`OnStoreError::FallBackToMemory`]). Transitions (lost, back) are logged
    /// once each as `tracing` events; while the store is away, one request per
    /// [`RETRY_INTERVAL`] tries it, the others get the policy's answer at once.
    pub fn on_store_error(mut self, policy: OnStoreError) -> LimiterBuilder {
        self.on_store_error = policy;
        self
    }

    /// The longest a networked store may take per check (default 50 ms): a stalled store
    /// never stalls requests longer than this.
    pub fn store_timeout(mut self, timeout: Duration) -> LimiterBuilder {
        self.store_timeout = timeout;
        self
    }

    /// Where counts live (default: a fresh [`MemoryStore`] owned by this limiter and its
    /// clones). Pass `MemoryStore::global().clone()` to share the process-wide one.
    pub fn store(mut self, store: impl Store) -> LimiterBuilder {
        self.store = Some(Backend::of(store));
        self
    }

    /// Where time comes from (default: [`SystemClock`]). Tests pass a
    /// [`ManualClock`](crate::ManualClock).
    pub fn clock(mut self, clock: impl Clock) -> LimiterBuilder {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// The glue's settings of type `G`, made with their defaults on first use.
    pub(crate) fn glue_mut<G: Default + Send + Sync + 'static>(&mut self) -> &mut G {
        if !self.glue.as_ref().is_some_and(|g| g.is::<G>()) {
            self.glue = Some(Box::new(G::default()));
        }
        match self.glue.as_mut().and_then(|g| g.downcast_mut::<G>()) {
            Some(glue) => glue,
            None => unreachable!("just made"),
        }
    }

    /// The limiter.
    ///
    /// # Panics
    ///
    /// When two `#[rate_limit]` handlers of the program name one `scope` with different
    /// limits: a scope is one budget, so the program does not say which limit it means. The
    /// message names both handlers and where they are; [`try_build`](Self::try_build)
    /// returns the conflict instead.
    pub fn build(self) -> Limiter {
        match self.try_build() {
            Ok(limiter) => limiter,
            Err(conflict) => panic!("{conflict}"),
        }
    }

    /// The limiter, or the first conflict between the program's rate-limited handlers (see
    /// [`build`](Self::build)).
    // Called once at start-up: the size of its error costs nothing.
    #[allow(clippy::result_large_err)]
    pub fn try_build(self) -> Result<Limiter, ScopeConflict> {
        match registry::conflicts().into_iter().next() {
            Some(conflict) => Err(conflict),
            None => Ok(self.build_unchecked(false)),
        }
    }

    fn build_unchecked(self, global: bool) -> Limiter {
        if !global {
            BUILT.store(true, Ordering::Relaxed);
        }
        Limiter {
            inner: Arc::new(Settings {
                store: self
                    .store
                    .unwrap_or_else(|| Backend::Memory(MemoryStore::new())),
                clock: self.clock.unwrap_or_else(|| Arc::new(SystemClock)),
                on_store_error: self.on_store_error,
                store_timeout: self.store_timeout,
                health: StoreHealth::new(),
                fallback: MemoryStore::new(),
                glue: self.glue,
                built_on: std::thread::current().name().map(str::to_owned),
            }),
        }
    }
}
