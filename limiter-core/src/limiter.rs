//! The entry point: a store and a clock, asked "may this key pass this limit now?".

use std::any::Any;
use std::fmt;
use std::sync::{Arc, OnceLock};

use crate::clock::{Clock, SystemClock};
use crate::store::{Check, Limit, MemoryStore, Store};

/// Decides requests: reads its clock and asks its store.
///
/// Build it once and clone it where needed: clones share the store and the clock.
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
    store: Backend,
    clock: Arc<dyn Clock>,
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

impl Limiter {
    /// A builder; with no settings it gives a limiter with a fresh in-memory store and the
    /// system clock.
    pub fn builder() -> LimiterBuilder {
        LimiterBuilder::default()
    }

    /// The process-wide default: [`MemoryStore::global`] and [`SystemClock`].
    pub fn global() -> &'static Limiter {
        static GLOBAL: OnceLock<Limiter> = OnceLock::new();
        GLOBAL.get_or_init(|| Limiter {
            store: Backend::Memory(MemoryStore::global().clone()),
            clock: Arc::new(SystemClock),
        })
    }

    /// Counts a request of `key` against `limit` now, and decides it.
    #[inline]
    pub fn check<'a>(&'a self, limit: &'a Limit, key: &'a [u8]) -> Check<'a> {
        let now = self.clock.now();
        match &self.store {
            Backend::Memory(memory) => Check::ready(Ok(memory.check_at(limit, key, now))),
            Backend::Other(store) => store.check(limit, key, now),
        }
    }

    /// The limiter's clock.
    pub fn clock(&self) -> &dyn Clock {
        &*self.clock
    }

    /// The limiter's store.
    pub fn store(&self) -> &dyn Store {
        match &self.store {
            Backend::Memory(memory) => memory,
            Backend::Other(store) => &**store,
        }
    }
}

impl fmt::Debug for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limiter").finish_non_exhaustive()
    }
}

/// Settings for a [`Limiter`].
#[derive(Default)]
pub struct LimiterBuilder {
    store: Option<Backend>,
    clock: Option<Arc<dyn Clock>>,
}

impl LimiterBuilder {
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

    /// The limiter.
    pub fn build(self) -> Limiter {
        Limiter {
            store: self
                .store
                .unwrap_or_else(|| Backend::Memory(MemoryStore::new())),
            clock: self.clock.unwrap_or_else(|| Arc::new(SystemClock)),
        }
    }
}
