//! Where counts live: the [`Store`] trait, the in-memory store, and the pieces every store
//! shares ([`Limit`], [`Check`], [`StoreError`]).

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::{Decision, Policy};

pub mod memory;
#[cfg(feature = "redis")]
pub mod redis;

#[cfg(feature = "redis")]
pub use self::redis::RedisStore;
pub use memory::MemoryStore;

/// A policy under a scope name: the unit a budget belongs to. Keys are counted per limit,
/// so two handlers given the same scope (and policy) share one budget.
///
/// ```
/// use std::time::Duration;
/// use limiter_core::{Limit, Policy};
/// let login = Limit::new("login", Policy::new(5, Duration::from_secs(60))?);
/// assert_eq!(login.scope(), "login");
/// # Ok::<(), limiter_core::PolicyError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Limit {
    scope: Cow<'static, str>,
    policy: Policy,
    id: u64,
}

impl Limit {
    /// The limit `policy` under the name `scope`.
    pub fn new(scope: impl Into<Cow<'static, str>>, policy: Policy) -> Limit {
        let scope = scope.into();
        // A fixed-key hash: the id must be the same for every store and every run.
        #[allow(deprecated)]
        let mut hasher = std::hash::SipHasher::new();
        scope.hash(&mut hasher);
        policy.hash(&mut hasher);
        Limit {
            id: hasher.finish(),
            scope,
            policy,
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

    /// A 64-bit identity of (scope, policy), equal for equal limits in every process.
    pub fn id(&self) -> u64 {
        self.id
    }
}

impl PartialEq for Limit {
    fn eq(&self, other: &Limit) -> bool {
        self.id == other.id && self.policy == other.policy && self.scope == other.scope
    }
}

impl Eq for Limit {}

/// A place that counts requests: the in-memory store, Redis, or one of your own.
///
/// `check` is asynchronous so that a networked store fits, yet costs nothing for a local
/// one: [`Check::ready`] carries a result without allocating.
pub trait Store: Send + Sync + 'static {
    /// Counts a request of `key` against `limit` at `now` (a reading of the limiter's clock)
    /// and decides it. A store with a clock of its own (Redis) may use that instead.
    fn check<'a>(&'a self, limit: &'a Limit, key: &'a [u8], now: Duration) -> Check<'a>;
}

impl<S: Store + ?Sized> Store for std::sync::Arc<S> {
    fn check<'a>(&'a self, limit: &'a Limit, key: &'a [u8], now: Duration) -> Check<'a> {
        (**self).check(limit, key, now)
    }
}

type BoxedCheck<'a> = Pin<Box<dyn Future<Output = Result<Decision, StoreError>> + Send + 'a>>;

/// The future of a [`Store::check`]: either already decided, or a boxed future.
#[must_use = "a check does nothing unless awaited"]
pub struct Check<'a> {
    state: CheckState<'a>,
}

enum CheckState<'a> {
    Ready(Option<Result<Decision, StoreError>>),
    Pending(BoxedCheck<'a>),
}

impl<'a> Check<'a> {
    /// A check already decided.
    pub fn ready(result: Result<Decision, StoreError>) -> Check<'a> {
        Check {
            state: CheckState::Ready(Some(result)),
        }
    }

    /// A check still under way.
    pub fn pending(
        future: impl Future<Output = Result<Decision, StoreError>> + Send + 'a,
    ) -> Check<'a> {
        Check {
            state: CheckState::Pending(Box::pin(future)),
        }
    }

    /// The result if it is available without waiting (always, for the in-memory store).
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter_core::{Limit, MemoryStore, Policy, Store};
    /// let store = MemoryStore::new();
    /// let limit = Limit::new("demo", Policy::new(1, Duration::from_secs(1))?);
    /// let decision = store.check(&limit, b"client", Duration::ZERO).now_or_never();
    /// assert!(decision.unwrap().unwrap().allowed());
    /// # Ok::<(), limiter_core::PolicyError>(())
    /// ```
    #[inline]
    pub fn now_or_never(self) -> Option<Result<Decision, StoreError>> {
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

impl Future for Check<'_> {
    type Output = Result<Decision, StoreError>;

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

impl fmt::Debug for Check<'_> {
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
        }))
    }

    /// An error described by `message` alone.
    pub fn msg(message: impl Into<String>) -> StoreError {
        StoreError(Box::new(StoreErrorInner {
            message: message.into(),
            source: None,
        }))
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
