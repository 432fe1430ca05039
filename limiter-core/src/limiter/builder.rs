//! [`LimiterBuilder`]: every setting of a [`Limiter`], in one place.

use std::fmt;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;

use super::failover::StoreHealth;
use super::overrides::{Override, Overrides};
use super::{fallback, rejections, Backend, Limiter, Settings};
use crate::clock::{Clock, SystemClock};
use crate::policy::Policy;
use crate::registry::{self, ScopeConflict};
use crate::store::{Limit, MemoryStore, Store};
use crate::OnStoreError;

/// Settings for a [`Limiter`].
pub struct LimiterBuilder {
    store: Option<Backend>,
    clock: Option<Arc<dyn Clock>>,
    on_store_error: OnStoreError,
    store_timeout: Duration,
    overrides: Overrides,
    rejection_cache: usize,
    fallback_share: u32,
    /// Minutes east of UTC at which declared calendar quotas begin their periods.
    utc_offset: i32,
    /// A Redis store, whose stored policies the limiter follows.
    #[cfg(feature = "redis")]
    follows: Option<crate::RedisStore>,
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
            rejection_cache: LimiterBuilder::DEFAULT_REJECTION_CACHE,
            overrides: Overrides::new(),
            utc_offset: 0,
            fallback_share: 1,
            #[cfg(feature = "redis")]
            follows: None,
        }
    }
}

impl LimiterBuilder {
    /// How long a networked store may take per check, by default: 50 ms.
    pub const DEFAULT_STORE_TIMEOUT: Duration = crate::store::DEFAULT_TIMEOUT;

    /// How many rejections of a networked store an instance remembers, by default.
    pub const DEFAULT_REJECTION_CACHE: usize = 65_536;

    /// How many rejections of a networked store (Redis) this instance remembers and answers
    /// itself until they end (default [`DEFAULT_REJECTION_CACHE`](Self::DEFAULT_REJECTION_CACHE);
    /// 0 turns it off). A rejection says "not before T" for its limit and key, and nothing
    /// any instance does admits that key earlier, so the answer given here is the one the
    /// store would give, `Retry-After` counted down: under a flood from one client, each
    /// instance asks the store about once per retry window. Only checks of one unit are
    /// remembered, from limits that refund nothing (no `count = "failures"`, no cost);
    /// [`reset`](Limiter::reset) forgets this instance's entries at once, while
    /// other instances keep answering theirs until they end (a tool's
    /// `RedisStore::reset_everywhere` reaches them all within a second).
    pub fn rejection_cache(mut self, capacity: usize) -> LimiterBuilder {
        self.rejection_cache = capacity;
        self
    }

    /// What limited handlers do when a networked store fails or exceeds the timeout
    /// (default: [`OnStoreError::FallBackToMemory`]). Transitions (lost, back) are logged
    /// once each as `tracing` events; while the store is away, one request per
    /// [`RETRY_INTERVAL`](crate::RETRY_INTERVAL) tries it, the others get the policy's answer at once.
    pub fn on_store_error(mut self, policy: OnStoreError) -> LimiterBuilder {
        self.on_store_error = policy;
        self
    }

    /// The longest a networked store may take to answer (default 50 ms) before a request gets
    /// the fault policy. It judges the store, not the load: a store that queues checks of
    /// its own (the Redis store batches them) applies it to its backend's answer, and the
    /// time a check waits for its turn in the queue is not a failure (see
    /// [`Store::accept_timeout`]). The Redis store on one server (or behind Sentinel) asks a
    /// server whose answer is late whether it is alive, on a connection of its own, before
    /// it fails the call: a stalled Redis costs a request about one and a half timeouts, and
    /// a call held up while Redis answers (a segment lost on its way, a host that paused) is
    /// given more time, up to five timeouts in all (as is a call on a host that starves the
    /// store's thread). A cluster, or a store made `from_manager`, fails a call after one.
    pub fn store_timeout(mut self, timeout: Duration) -> LimiterBuilder {
        self.store_timeout = timeout;
        self
    }

    /// While the networked store is away and requests are counted in this instance's memory
    /// ([`OnStoreError::FallBackToMemory`]), count each budget as one of `instances` equal
    /// shares: `N / instances` per window (rounded up, at least 1; for the token bucket the
    /// burst too; a request's cost too, so that what fits the budget fits a share). Without
    /// it (the default, 1), each of `k` instances falling back at once
    /// admits up to `N`: `k × N` in all behind a balancer. With it, at most about `N`
    /// in all — and a client that one instance serves alone gets its share only.
    ///
    /// ```
    /// use limiter::{Limiter, OnStoreError};
    /// let limiter = Limiter::builder()
    ///     .on_store_error(OnStoreError::FallBackToMemory)
    ///     .fallback_share(3) // three instances behind the balancer
    ///     .build();
    /// ```
    pub fn fallback_share(mut self, instances: u32) -> LimiterBuilder {
        self.fallback_share = instances.max(1);
        self
    }

    /// Where counts live (default: a fresh [`MemoryStore`] owned by this limiter and its
    /// clones). Pass `MemoryStore::global().clone()` to share the process-wide one.
    pub fn store(mut self, store: impl Store) -> LimiterBuilder {
        #[cfg(feature = "redis")]
        {
            let any = &store as &dyn std::any::Any;
            self.follows = any
                .downcast_ref::<crate::RedisStore>()
                .or_else(|| any.downcast_ref::<Arc<crate::RedisStore>>().map(|a| &**a))
                .cloned();
        }
        self.store = Some(Backend::of(store));
        self
    }

    /// Where time comes from (default: [`SystemClock`]). Tests pass a
    /// [`ManualClock`](crate::ManualClock).
    pub fn clock(mut self, clock: impl Clock) -> LimiterBuilder {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// The policy of every handler and middleware of `scope`, whatever the code declares:
    /// the attribute's limit is the default a deployment overrides from its configuration,
    /// without recompiling. [`Limiter::set_policy`] changes it while serving.
    /// A policy made by [`Policy::new`] keeps each declared limit's algorithm (a
    /// `fixed_window` route stays a fixed window with the new numbers); one made by
    /// [`Policy::for_algorithm`] replaces it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::{Limiter, Policy};
    /// let limiter = Limiter::builder()
    ///     .policy("login", Policy::new(10, Duration::from_secs(60))?)
    ///     .build();
    /// assert_eq!(limiter.policy("login").unwrap().max().get(), 10);
    /// # Ok::<(), limiter::PolicyError>(())
    /// ```
    pub fn policy(mut self, scope: &str, policy: Policy) -> LimiterBuilder {
        self.overrides
            .insert(scope.into(), Override::new(scope, policy));
        self
    }

    /// Where the program's calendar quotas (`per = "day"`, `"week"`, `"month"`) begin their
    /// periods: at `minutes` east of UTC (negative: west), for those whose policy gives no
    /// offset of its own — a day that ends at local midnight. Applied when the limiter is
    /// built, as configuration (the route table marks them `configured`); a `RateLimit`
    /// middleware's quota takes its offset on its policy
    /// ([`Policy::with_utc_offset`]). A fixed offset: no daylight saving time.
    ///
    /// # Panics
    ///
    /// Beyond ±14 hours (840 minutes), naming the value: a programmer's error, caught at
    /// start-up.
    ///
    /// ```
    /// use limiter::Limiter;
    /// let berlin_winter = Limiter::builder().utc_offset(60).build();
    /// ```
    pub fn utc_offset(mut self, minutes: i32) -> LimiterBuilder {
        assert!(
            minutes.abs() <= 840,
            "utc_offset({minutes}): an offset from UTC is within ±14 hours (±840 minutes)"
        );
        self.utc_offset = minutes;
        self
    }

    /// The limiter.
    ///
    /// # Panics
    ///
    /// When two `#[rate_limit]` handlers of the program name one `scope` with different
    /// limits: a scope is one budget, so the program does not say which limit it means. The
    /// message names both handlers and where they are; [`try_build`](Self::try_build)
    /// returns the conflict instead. Two `#[concurrency_limit]`s that give one scope
    /// different limits are an `error` event naming both (each keeps a pool of its own).
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
    pub fn try_build(mut self) -> Result<Limiter, ScopeConflict> {
        if let Some(conflict) = registry::conflicts().into_iter().next() {
            return Err(conflict);
        }
        registry::report_in_flight_conflicts();
        if self.utc_offset != 0 {
            self.offset_calendars();
        }
        Ok(self.build_unchecked(false))
    }

    /// Sets the configured offset on every declared calendar quota that gives none, unless
    /// configuration sets its scope's policy already.
    fn offset_calendars(&mut self) {
        for route in registry::routes().0 {
            for entry in route.limits {
                let (scope, policy) = (entry.limit.scope(), entry.limit.policy());
                let unset = policy.calendar().is_some_and(|c| c.offset_minutes() == 0);
                if !unset {
                    continue;
                }
                if let Some(configured) = self.overrides.get(scope) {
                    let configured = configured.given().policy();
                    if configured
                        .calendar()
                        .is_some_and(|c| c.offset_minutes() == 0)
                    {
                        tracing::warn!(
                            scope,
                            "rate limit: utc_offset does not apply to this scope's configured \
                             policy ({configured}), which gives none: its quota is counted in \
                             UTC. Give the policy its offset (Policy::with_utc_offset)"
                        );
                    }
                    continue;
                }
                if let Ok(offset) = policy.with_utc_offset(self.utc_offset) {
                    self.overrides
                        .insert(scope.into(), Override::new(scope, offset));
                }
            }
        }
    }

    pub(super) fn build_unchecked(self, _global: bool) -> Limiter {
        let seen = self
            .overrides
            .values()
            .map(|o| Limit::clone(o.given()))
            .collect();
        let overridden = AtomicBool::new(!self.overrides.is_empty());
        let store = self
            .store
            .unwrap_or_else(|| Backend::Memory(MemoryStore::new()));
        let store_times_itself = match &store {
            Backend::Other(store) => store.accept_timeout(self.store_timeout),
            Backend::Memory(_) => false,
        };
        let limiter = Limiter {
            inner: Arc::new(Settings {
                store,
                clock: self.clock.unwrap_or_else(|| Arc::new(SystemClock)),
                on_store_error: self.on_store_error,
                store_timeout: self.store_timeout,
                store_times_itself,
                health: StoreHealth::new(),
                fallback: fallback::Fallback::new(self.fallback_share),
                overrides: ArcSwap::from_pointee(self.overrides),
                overridden,
                seen: parking_lot::RwLock::new(seen),
                forgetful: AtomicBool::new(false),
                rejections: rejections::Rejections::new(self.rejection_cache),
            }),
        };
        #[cfg(feature = "redis")]
        if let Some(redis) = &self.follows {
            let mut following = super::following::Following::new(limiter.downgrade());
            redis.follow_overrides(move |reading| following.take(reading));
        }
        limiter
    }
}
