//! The [`Limiter`] a service uses: the engine's limiter (store, clock, fault policy, the
//! limits configuration sets), with who the client is and what responses look like.

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::actix::settings::HttpSettings;
use crate::{Clock, OnStoreError, Policy, ScopeConflict, Store};

/// Decides requests: reads its clock, asks its store, applies its policy when the store
/// fails — and knows who a request's client is, and how a rejection is answered.
///
/// Build it once, outside `HttpServer::new`'s closure, and clone it into each worker's
/// `App` with `.app_data(limiter.clone())`: clones share the store and the clock. A limiter
/// built inside the closure would exist once per worker, and multiply the limit. Handlers
/// that find no `Limiter` in their app data use [`Limiter::global`].
///
/// It derefs to the engine's limiter, whose methods it has:
/// [`check`](limiter_core::Limiter::check), [`check_all`](limiter_core::Limiter::check_all),
/// [`refund`](limiter_core::Limiter::refund), [`set_policy`](limiter_core::Limiter::set_policy)
/// and the others.
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
    engine: limiter_core::Limiter,
    http: Arc<Http>,
}

/// The HTTP settings, and where the limiter was built.
struct Http {
    settings: HttpSettings,
    /// The name of the thread that built it, to judge whether that was a worker.
    built_on: Option<String>,
}

/// Whether a limiter other than the global one was built in this process.
static BUILT: AtomicBool = AtomicBool::new(false);

impl Limiter {
    /// A builder; with no settings it gives a limiter with a fresh in-memory store and the
    /// system clock.
    pub fn builder() -> LimiterBuilder {
        LimiterBuilder {
            engine: limiter_core::Limiter::builder(),
            http: HttpSettings::default(),
        }
    }

    /// The process-wide default: [`MemoryStore::global`](crate::MemoryStore::global),
    /// [`SystemClock`](crate::SystemClock), default settings.
    ///
    /// Conflicting scopes (see [`LimiterBuilder::build`]) cannot stop a program that never
    /// builds a limiter: they are logged as an `error` event when this one is first used,
    /// and each conflicting limit keeps a budget of its own.
    pub fn global() -> &'static Limiter {
        static GLOBAL: OnceLock<Limiter> = OnceLock::new();
        GLOBAL.get_or_init(|| Limiter {
            engine: limiter_core::Limiter::global().clone(),
            http: Arc::new(Http {
                settings: HttpSettings::default(),
                built_on: None,
            }),
        })
    }

    /// The engine's limiter, which this one derefs to.
    pub fn engine(&self) -> &limiter_core::Limiter {
        &self.engine
    }

    /// The HTTP settings.
    #[inline]
    pub(crate) fn http(&self) -> &HttpSettings {
        &self.http.settings
    }

    /// Whether any limiter besides [`Limiter::global`] was built in this process.
    pub(crate) fn any_built() -> bool {
        BUILT.load(Ordering::Relaxed)
    }

    /// Which limiter this is: clones are the same one.
    pub(crate) fn identity(&self) -> usize {
        Arc::as_ptr(&self.http) as usize
    }

    /// The name of the thread it was built on.
    pub(crate) fn built_on(&self) -> Option<&str> {
        self.http.built_on.as_deref()
    }
}

impl Deref for Limiter {
    type Target = limiter_core::Limiter;

    #[inline]
    fn deref(&self) -> &limiter_core::Limiter {
        &self.engine
    }
}

impl std::fmt::Debug for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.engine.fmt(f)
    }
}

/// Settings for a [`Limiter`]: the engine's (store, clock, fault policy, configured
/// policies) and the HTTP ones (proxies, users, responses, exemptions, header fields).
pub struct LimiterBuilder {
    engine: limiter_core::LimiterBuilder,
    http: HttpSettings,
}

impl std::fmt::Debug for LimiterBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.engine.fmt(f)
    }
}

impl Default for LimiterBuilder {
    fn default() -> LimiterBuilder {
        Limiter::builder()
    }
}

impl LimiterBuilder {
    /// How long a networked store may take to answer, by default: 50 ms.
    pub const DEFAULT_STORE_TIMEOUT: Duration = limiter_core::LimiterBuilder::DEFAULT_STORE_TIMEOUT;

    /// How many rejections of a networked store an instance remembers, by default.
    pub const DEFAULT_REJECTION_CACHE: usize =
        limiter_core::LimiterBuilder::DEFAULT_REJECTION_CACHE;

    pub(crate) fn http(&mut self) -> &mut HttpSettings {
        &mut self.http
    }

    fn engine(
        mut self,
        set: impl FnOnce(limiter_core::LimiterBuilder) -> limiter_core::LimiterBuilder,
    ) -> Self {
        self.engine = set(self.engine);
        self
    }

    /// Where counts live (default: a fresh [`MemoryStore`](crate::MemoryStore) owned by
    /// this limiter and its clones). Pass `MemoryStore::global().clone()` to share the
    /// process-wide one. See [`limiter_core::LimiterBuilder::store`].
    pub fn store(self, store: impl Store) -> LimiterBuilder {
        self.engine(|b| b.store(store))
    }

    /// Where time comes from (default: [`SystemClock`](crate::SystemClock)). Tests pass a
    /// [`ManualClock`](crate::ManualClock).
    pub fn clock(self, clock: impl Clock) -> LimiterBuilder {
        self.engine(|b| b.clock(clock))
    }

    /// What limited handlers do when a networked store fails (default:
    /// [`OnStoreError::FallBackToMemory`]). See
    /// [`limiter_core::LimiterBuilder::on_store_error`].
    pub fn on_store_error(self, policy: OnStoreError) -> LimiterBuilder {
        self.engine(|b| b.on_store_error(policy))
    }

    /// The longest a networked store may take to answer (default 50 ms), judging the
    /// store, not the load. See [`limiter_core::LimiterBuilder::store_timeout`].
    pub fn store_timeout(self, timeout: Duration) -> LimiterBuilder {
        self.engine(|b| b.store_timeout(timeout))
    }

    /// How many rejections of a networked store this instance remembers and answers itself
    /// until they end (default 65,536; 0 turns it off). See
    /// [`limiter_core::LimiterBuilder::rejection_cache`].
    pub fn rejection_cache(self, capacity: usize) -> LimiterBuilder {
        self.engine(|b| b.rejection_cache(capacity))
    }

    /// While falling back to memory, count each budget as one of `instances` shares. See
    /// [`limiter_core::LimiterBuilder::fallback_share`].
    ///
    /// ```
    /// use limiter::{Limiter, OnStoreError};
    /// let limiter = Limiter::builder()
    ///     .on_store_error(OnStoreError::FallBackToMemory)
    ///     .fallback_share(3) // three instances behind the balancer
    ///     .build();
    /// ```
    pub fn fallback_share(self, instances: u32) -> LimiterBuilder {
        self.engine(|b| b.fallback_share(instances))
    }

    /// The policy of every handler and middleware of `scope`, whatever the code declares.
    /// See [`limiter_core::LimiterBuilder::policy`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::{Limiter, Policy};
    /// let limiter = Limiter::builder()
    ///     .policy("login", Policy::new(10, Duration::from_secs(60))?)
    ///     .build();
    /// assert_eq!(limiter.policy_of("login").unwrap().max().get(), 10);
    /// # Ok::<(), limiter::PolicyError>(())
    /// ```
    pub fn policy(self, scope: &str, policy: Policy) -> LimiterBuilder {
        self.engine(|b| b.policy(scope, policy))
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
        let engine = self.engine.try_build()?;
        BUILT.store(true, Ordering::Relaxed);
        Ok(Limiter {
            engine,
            http: Arc::new(Http {
                settings: self.http,
                built_on: std::thread::current().name().map(str::to_owned),
            }),
        })
    }
}
