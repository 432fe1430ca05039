//! Policies configuration sets for scopes, over the limits the code declares: read on every
//! request without a lock, replaced whole when one changes.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};

use crate::policy::{Algorithm, Policy};
use crate::store::Limit;

use super::Limiter;

/// Scope → the policy configuration gives it.
pub(super) type Overrides = HashMap<Box<str>, Arc<Override>>;

/// A policy set for a scope, and what it becomes over each declared algorithm.
pub(super) struct Override {
    given: Arc<Limit>,
    /// A policy that does not name its algorithm ([`Policy::new`]) keeps the declared one,
    /// and one without a penalty the declared penalty (see [`Policy::over`]). The limit for each
    /// declared algorithm, made on first use.
    kept: [OnceLock<Arc<Limit>>; Algorithm::ALL.len()],
}

impl Override {
    pub(super) fn new(scope: &str, policy: Policy) -> Arc<Override> {
        Arc::new(Override {
            given: Arc::new(Limit::new(scope.to_string(), policy)),
            kept: Default::default(),
        })
    }

    pub(super) fn given(&self) -> &Arc<Limit> {
        &self.given
    }

    /// The limit this override puts in place of `declared`.
    fn over(&self, declared: &Limit, limiter: &Limiter) -> &Arc<Limit> {
        let policy = self.given.policy();
        let algorithm = declared.policy().algorithm();
        let keeps_algorithm = policy.names_algorithm() || policy.algorithm() == algorithm;
        let keeps_penalty = policy.penalty().is_some() || declared.policy().penalty().is_none();
        if keeps_algorithm && keeps_penalty {
            return &self.given;
        }
        self.kept[algorithm as usize].get_or_init(|| match policy.over(declared.policy()) {
            Ok(kept) => {
                let limit = Arc::new(Limit::new(self.given.scope().to_string(), kept));
                limiter.remember(&limit);
                limit
            }
            Err(error) => {
                tracing::warn!(
                    scope = self.given.scope(),
                    "rate limit: the policy configured for this scope ({policy}) cannot keep \
                     the declared algorithm {algorithm} ({error}); it is counted by the \
                     sliding window instead. Name the algorithm with Policy::for_algorithm \
                     to choose"
                );
                Arc::clone(&self.given)
            }
        })
    }
}

impl Limiter {
    /// The limit configuration gives `declared`'s scope, if it overrides the declared one.
    /// Lock-free: a relaxed load when no override exists.
    #[inline]
    #[doc(hidden)]
    pub fn overridden(&self, declared: &Limit) -> Option<Arc<Limit>> {
        if !self.inner.overridden.load(Ordering::Relaxed) {
            return None;
        }
        let overrides = self.inner.overrides.load();
        let limit = overrides.get(declared.scope())?.over(declared, self);
        (limit.policy() != declared.policy()).then(|| Arc::clone(limit))
    }

    /// Changes the policy of every handler and middleware of `scope`, from the next request
    /// on: what configuration reloaded at run time does (no lock on the request path:
    /// checks read a snapshot). A policy made by [`Policy::new`] keeps each declared
    /// limit's algorithm; one made by [`Policy::for_algorithm`] replaces it.
    ///
    /// The scope's budget under the new policy is a new one: clients start afresh under
    /// it (and would find their old state if the old policy came back within a window).
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::{Algorithm, Limit, Limiter, Policy};
    /// let limiter = Limiter::builder().build();
    /// let minute = Duration::from_secs(60);
    /// let login = Limit::new("login", Policy::for_algorithm(Algorithm::FixedWindow, 5, minute)?);
    /// assert!(limiter.overridden(&login).is_none());
    ///
    /// limiter.set_policy("login", Policy::new(10, minute)?);
    /// let configured = limiter.overridden(&login).unwrap();
    /// assert_eq!(configured.policy().max().get(), 10);
    /// assert_eq!(configured.policy().algorithm(), Algorithm::FixedWindow);
    ///
    /// limiter.set_policy("login", Policy::for_algorithm(Algorithm::SlidingWindow, 10, minute)?);
    /// let configured = limiter.overridden(&login).unwrap();
    /// assert_eq!(configured.policy().algorithm(), Algorithm::SlidingWindow);
    /// # Ok::<(), limiter::PolicyError>(())
    /// ```
    pub fn set_policy(&self, scope: &str, policy: Policy) {
        let entry = Override::new(scope, policy);
        self.remember(entry.given());
        self.inner.overrides.rcu(|current| {
            let mut next = Overrides::clone(current);
            next.insert(scope.into(), Arc::clone(&entry));
            next
        });
        self.inner.overridden.store(true, Ordering::Relaxed);
    }

    /// Takes back what [`set_policy`](Self::set_policy) (or the builder's
    /// [`policy`](crate::LimiterBuilder::policy)) set for `scope`: from the next request
    /// on, its limits are as declared (and start a new budget, as with any change).
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::{Limiter, Policy};
    /// let limiter = Limiter::builder().build();
    /// limiter.set_policy("login", Policy::new(10, Duration::from_secs(60))?);
    /// limiter.clear_policy("login");
    /// assert_eq!(limiter.policy("login"), None);
    /// # Ok::<(), limiter::PolicyError>(())
    /// ```
    pub fn clear_policy(&self, scope: &str) {
        // The flag stays up: lowering it could race with a `set_policy` of another scope.
        self.inner.overrides.rcu(|current| {
            let mut next = Overrides::clone(current);
            next.remove(scope);
            next
        });
    }

    /// The policy configuration gives `scope`, if any: as given, before it keeps a declared
    /// limit's algorithm.
    pub fn policy(&self, scope: &str) -> Option<Policy> {
        self.inner
            .overrides
            .load()
            .get(scope)
            .map(|entry| *entry.given().policy())
    }
}
