//! Where counts live: the [`Store`] trait, the in-memory store, and the pieces every store
//! shares ([`Limit`], [`Check`], [`StoreError`]).

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::concurrency::Acquired;
use crate::{Concurrency, Decision, Policy, Slot};

/// How long a check may wait for a networked store by default, before the fault policy
/// answers it.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_millis(50);

mod memory;
mod receipt;
#[cfg(feature = "redis")]
mod redis;

pub use receipt::{Checked, Receipt};

#[cfg(feature = "redis")]
pub use self::redis::RedisStore;
#[cfg(feature = "redis")]
pub(crate) use self::redis::{Reading, Stored};
pub use memory::{MemoryStore, RestoreError};

/// A policy under a scope name: the unit a budget belongs to. Keys are counted per limit,
/// so two handlers given the same scope (and policy) share one budget.
///
/// Its [`id`](Limit::id) is a stable encoding of both, the same in every process, on every
/// platform and with every compiler: the first 8 bytes (big-endian) of the SHA-1 of
///
/// ```text
/// SCOPE \n ALGORITHM \n MAX \n WINDOW_MS \n BURST
/// ```
///
/// with the algorithm's attribute name and the numbers in decimal (`BURST` is the token
/// bucket's capacity, and `MAX` for the other algorithms; a calendar quota's `WINDOW_MS` is
/// its calendar as its policy prints it, `month` or `day, utc+02:00`). The Redis store's key names
/// carry it, so instances that disagree on it would not share budgets: a test pins it.
///
/// ```
/// use std::time::Duration;
/// use limiter::{Limit, Policy};
/// let login = Limit::new("login", Policy::new(5, Duration::from_secs(60))?);
/// assert_eq!(login.scope(), "login");
/// assert_eq!(format!("{:016x}", login.id()), "bf4aa7cc945c59d8");
/// # Ok::<(), limiter::PolicyError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Limit {
    scope: Cow<'static, str>,
    policy: Policy,
    /// Computed on first use: a `const` limit cannot hash.
    id: OnceLock<u64>,
}

impl Limit {
    /// The limit `policy` under the name `scope`.
    pub fn new(scope: impl Into<Cow<'static, str>>, policy: Policy) -> Limit {
        let scope = scope.into();
        let id = OnceLock::new();
        let _ = id.set(stable_id(&scope, &policy));
        Limit { scope, policy, id }
    }

    /// A limit made in a `const` or `static`: for the limits a handler checks itself
    /// (see `limiter::check`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::{Limit, Policy};
    /// const PER_MINUTE: Policy = match Policy::new(5, Duration::from_secs(60)) {
    ///     Ok(policy) => policy,
    ///     Err(error) => panic!("{}", error.message()),
    /// };
    /// static PER_USERNAME: Limit = Limit::constant("login-username", PER_MINUTE);
    /// assert_eq!(PER_USERNAME.scope(), "login-username");
    /// ```
    pub const fn constant(scope: &'static str, policy: Policy) -> Limit {
        Limit {
            scope: Cow::Borrowed(scope),
            policy,
            id: OnceLock::new(),
        }
    }

    /// The scope name.
    pub fn scope(&self) -> &str {
        &self.scope
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// A 64-bit identity of (scope, policy), equal for equal limits in every process (see
    /// above for its encoding).
    #[inline]
    pub fn id(&self) -> u64 {
        *self.id.get_or_init(|| stable_id(&self.scope, &self.policy))
    }
}

/// See [`Limit`]'s documentation: this encoding is a public contract.
fn stable_id(scope: &str, policy: &Policy) -> u64 {
    // A calendar quota's window is its calendar's text (`month`, `day, utc+02:00`).
    let window = match policy.calendar() {
        Some(calendar) => calendar.to_string(),
        None => policy.window_ms().to_string(),
    };
    let text = format!(
        "{scope}\n{}\n{}\n{window}\n{}",
        policy.algorithm().name(),
        policy.max(),
        policy.burst()
    );
    let digest = sha1_smol::Sha1::from(text.as_bytes()).digest().bytes();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

impl PartialEq for Limit {
    fn eq(&self, other: &Limit) -> bool {
        self.policy == other.policy && self.scope == other.scope
    }
}

impl Eq for Limit {}

/// One limit a request is counted against: the limit, the client's key, and how many units
/// the request costs (1 unless said otherwise).
///
/// ```
/// use std::time::Duration;
/// use limiter::{Charge, Limit, MemoryStore, Policy};
/// let store = MemoryStore::new();
/// let exports = Limit::new("exports", Policy::new(100, Duration::from_secs(60))?);
/// let batch = [Charge::new(&exports, b"tenant-7").cost(40)];
/// assert_eq!(store.check_all_at(&batch, Duration::ZERO)[0].remaining(), 60);
/// # Ok::<(), limiter::PolicyError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Charge<'a> {
    /// The limit.
    pub limit: &'a Limit,
    /// The client's key under it.
    pub key: &'a [u8],
    /// The units the request takes, at least 1 (set through [`Charge::cost`], which keeps
    /// it so).
    units: u32,
}

impl<'a> Charge<'a> {
    /// One unit of `limit` for `key`.
    pub const fn new(limit: &'a Limit, key: &'a [u8]) -> Charge<'a> {
        Charge {
            limit,
            key,
            units: 1,
        }
    }

    /// The same charge, for `cost` units (0 counts as 1).
    pub const fn cost(self, cost: u32) -> Charge<'a> {
        Charge {
            units: if cost == 0 { 1 } else { cost },
            ..self
        }
    }

    /// The units the request takes: at least 1.
    pub const fn units(&self) -> u32 {
        self.units
    }
}

/// A place that counts requests: the in-memory store, Redis, or one of your own.
///
/// `check` is asynchronous so that a networked store fits, yet costs nothing for a local
/// one: [`Check::ready`] carries a result without allocating.
pub trait Store: Send + Sync + 'static {
    /// Counts a request of `key` against `limit` at `now` (a reading of the limiter's clock)
    /// and decides it. A store with a clock of its own (Redis) may use that instead.
    ///
    /// Readings may arrive out of order (two workers read the clock, the later reader is
    /// served first): a reading earlier than a key's state must never drop, reset or
    /// rewind that state.
    fn check<'a>(&'a self, limit: &'a Limit, key: &'a [u8], now: Duration) -> Check<'a>;

    /// Counts one request against several limits (each with its key), **all or nothing**:
    /// the request is admitted only if every limit admits it, and then each counts it;
    /// otherwise none does — atomically, so that no other request sees it half counted.
    ///
    /// The decisions come in the order of `requests`. On a rejection, each limit that
    /// rejects says so with its `retry_after`, and each limit that would have admitted it
    /// reports where it stands with nothing counted: `remaining` is what it would admit
    /// now, `reset_after` when used quota next comes back (zero when none is used).
    ///
    /// With them comes a [`Receipt`] of what was counted, in terms the store's
    /// [`refund`](Store::refund) understands: a refund gives back by it, not by a reading
    /// taken later.
    fn check_all<'a>(&'a self, charges: &'a [Charge<'a>], now: Duration) -> Check<'a, Checked>;

    /// Takes back what a check of `charges` counted, as its `receipt` says (for
    /// `count = "failures"`: a request that turned out a success). `now` is the reading of
    /// the refund (a store with a clock of its own may read that instead). A refund gives
    /// back only what is still counted of that check's own units: never another request's,
    /// never more than the check took, nothing that has come back by itself.
    fn refund<'a>(
        &'a self,
        charges: &'a [Charge<'a>],
        receipt: &'a Receipt,
        now: Duration,
    ) -> Check<'a, ()>;

    /// Forgets `key`'s state under `limit`: the client starts afresh
    /// ([`Limiter::reset`](crate::Limiter::reset)).
    fn reset<'a>(&'a self, limit: &'a Limit, key: &'a [u8]) -> Check<'a, ()>;

    /// Its name in the metrics' `store` label (`redis`, `memory`).
    fn name(&self) -> &'static str {
        "custom"
    }

    /// Takes the limiter's [`store_timeout`](crate::LimiterBuilder::store_timeout), once,
    /// when the limiter is built. A store that queues checks of its own (the Redis store
    /// batches them) applies it to its backend's answer — the time a check waits for its
    /// turn is load, not a failure — and returns `true`; the limiter then leaves the
    /// timing of its checks to it. By default `false`: the limiter bounds each check's
    /// whole wait by the timeout.
    fn accept_timeout(&self, timeout: Duration) -> bool {
        let _ = timeout;
        false
    }

    /// Whether it keeps concurrency slots ([`acquire`](Store::acquire)). A limiter over a
    /// store that does not keeps them in this instance's memory — no store failure, no
    /// fault policy. `false` by default.
    fn keeps_slots(&self) -> bool {
        false
    }

    /// Takes one of `limit`'s slots for `key` (a request in flight), if fewer than its
    /// `max` are taken ([`Limiter::acquire`](crate::Limiter::acquire)); for a store that
    /// [`keeps_slots`](Store::keeps_slots). By default an error.
    fn acquire<'a>(&'a self, limit: &'a Concurrency, key: &'a [u8]) -> Check<'a, Acquired> {
        let _ = (limit, key);
        Check::ready(Err(StoreError::msg(
            "this store keeps no concurrency slots",
        )))
    }

    /// Gives back a slot [`acquire`](Store::acquire) took: at once, or in the store's own
    /// time (a networked store sends it from a task of its own). Never fails the caller: a
    /// slot not given back is the store's to expire.
    fn release(&self, slot: &Slot) {
        let _ = slot;
    }

    /// The part of the store that holds `key`'s slots under `limit` (see
    /// [`part`](Store::part)).
    fn slot_part(&self, limit: &Concurrency, key: &[u8]) -> u16 {
        let _ = (limit, key);
        0
    }

    /// The part of the store that holds `key`'s state under `limit`, for a store whose
    /// parts fail on their own (a Redis Cluster: the key's hash slot). The limiter tracks
    /// each part's health apart, so that a part that is down sends only its own keys to the
    /// fault policy while the others keep counting. One part (0) by default.
    fn part(&self, limit: &Limit, key: &[u8]) -> u16 {
        let _ = (limit, key);
        0
    }
}

impl<S: Store + ?Sized> Store for std::sync::Arc<S> {
    fn check<'a>(&'a self, limit: &'a Limit, key: &'a [u8], now: Duration) -> Check<'a> {
        (**self).check(limit, key, now)
    }

    fn check_all<'a>(&'a self, charges: &'a [Charge<'a>], now: Duration) -> Check<'a, Checked> {
        (**self).check_all(charges, now)
    }

    fn refund<'a>(
        &'a self,
        charges: &'a [Charge<'a>],
        receipt: &'a Receipt,
        now: Duration,
    ) -> Check<'a, ()> {
        (**self).refund(charges, receipt, now)
    }

    fn reset<'a>(&'a self, limit: &'a Limit, key: &'a [u8]) -> Check<'a, ()> {
        (**self).reset(limit, key)
    }

    fn name(&self) -> &'static str {
        (**self).name()
    }

    fn accept_timeout(&self, timeout: Duration) -> bool {
        (**self).accept_timeout(timeout)
    }

    fn part(&self, limit: &Limit, key: &[u8]) -> u16 {
        (**self).part(limit, key)
    }

    fn keeps_slots(&self) -> bool {
        (**self).keeps_slots()
    }

    fn acquire<'a>(&'a self, limit: &'a Concurrency, key: &'a [u8]) -> Check<'a, Acquired> {
        (**self).acquire(limit, key)
    }

    fn release(&self, slot: &Slot) {
        (**self).release(slot)
    }

    fn slot_part(&self, limit: &Concurrency, key: &[u8]) -> u16 {
        (**self).slot_part(limit, key)
    }
}

type BoxedCheck<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// The future of a [`Store::check`] (or [`Store::check_all`]): either already decided, or a
/// boxed future.
#[must_use = "a check does nothing unless awaited"]
pub struct Check<'a, T = Decision> {
    state: CheckState<'a, T>,
}

enum CheckState<'a, T> {
    Ready(Option<Result<T, StoreError>>),
    Pending(BoxedCheck<'a, T>),
}

impl<'a, T> Check<'a, T> {
    /// A check already decided.
    pub fn ready(result: Result<T, StoreError>) -> Check<'a, T> {
        Check {
            state: CheckState::Ready(Some(result)),
        }
    }

    /// A check still under way.
    pub fn pending(
        future: impl Future<Output = Result<T, StoreError>> + Send + 'a,
    ) -> Check<'a, T> {
        Check {
            state: CheckState::Pending(Box::pin(future)),
        }
    }

    /// The result, if it was decided at once (the in-memory store's always are); the check
    /// is left to be awaited otherwise. Never polls.
    #[inline]
    pub fn take_ready(&mut self) -> Option<Result<T, StoreError>> {
        match &mut self.state {
            CheckState::Ready(result) => result.take(),
            CheckState::Pending(_) => None,
        }
    }

    /// The result if it is available without waiting (always, for the in-memory store).
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::{Limit, MemoryStore, Policy, Store};
    /// let store = MemoryStore::new();
    /// let limit = Limit::new("demo", Policy::new(1, Duration::from_secs(1))?);
    /// let decision = store.check(&limit, b"client", Duration::ZERO).now_or_never();
    /// assert!(decision.unwrap().unwrap().allowed());
    /// # Ok::<(), limiter::PolicyError>(())
    /// ```
    #[inline]
    pub fn now_or_never(self) -> Option<Result<T, StoreError>> {
        match self.state {
            CheckState::Ready(result) => result,
            CheckState::Pending(mut future) => {
                let mut cx = Context::from_waker(std::task::Waker::noop());
                match future.as_mut().poll(&mut cx) {
                    Poll::Ready(result) => Some(result),
                    Poll::Pending => None,
                }
            }
        }
    }
}

impl<T: Unpin> Future for Check<'_, T> {
    type Output = Result<T, StoreError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.state {
            CheckState::Ready(result) => match result.take() {
                Some(result) => Poll::Ready(result),
                None => panic!("Check polled after completion"),
            },
            CheckState::Pending(future) => future.as_mut().poll(cx),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Check<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.state {
            CheckState::Ready(result) => f.debug_tuple("Check::Ready").field(result).finish(),
            CheckState::Pending(_) => f.write_str("Check::Pending"),
        }
    }
}

/// A store could not decide: it is unreachable, timed out, or answered nonsense.
#[derive(Debug)]
pub struct StoreError(Box<StoreErrorInner>);

/// Boxed so that `Result<Decision, StoreError>` stays small on the success path.
#[derive(Debug)]
struct StoreErrorInner {
    message: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
    /// The failure it is one of, when one failure fails many checks (a batch's call): the
    /// limiter counts it once.
    incident: Option<u64>,
    /// Whether the store's backend answered, with a refusal (Redis out of memory, say): it
    /// is up, and the failure shows nothing down.
    answered: bool,
}

impl StoreError {
    /// An error described by `message`, caused by `source`.
    pub fn new(
        message: impl Into<String>,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> StoreError {
        StoreError(Box::new(StoreErrorInner {
            message: message.into(),
            source: Some(source.into()),
            incident: None,
            answered: false,
        }))
    }

    /// An error described by `message` alone.
    pub fn msg(message: impl Into<String>) -> StoreError {
        StoreError(Box::new(StoreErrorInner {
            message: message.into(),
            source: None,
            incident: None,
            answered: false,
        }))
    }

    /// The same error, as one of the checks a single failure failed (numbered `incident`).
    // Only the Redis store batches checks (and the breaker's tests make such errors).
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn of_incident(mut self, incident: u64) -> StoreError {
        self.0.incident = Some(incident);
        self
    }

    /// The failure this error is one of, if it failed many checks at once.
    pub(crate) fn incident(&self) -> Option<u64> {
        self.0.incident
    }

    /// The same error, as the backend's own answer (a refusal): the store is up.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn of_refusal(mut self) -> StoreError {
        self.0.answered = true;
        self
    }

    /// Whether the backend answered it (see [`of_refusal`](Self::of_refusal)).
    pub(crate) fn was_answered(&self) -> bool {
        self.0.answered
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)?;
        if let Some(source) = &self.0.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0
            .source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}
