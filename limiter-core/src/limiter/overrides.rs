//! Policies configuration sets for scopes, over the limits the code declares: read on every
//! request without a lock, replaced whole when one changes.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::policy::Policy;
use crate::registry::Routes;
use crate::store::Limit;

use super::Limiter;

/// Scope → the policy configuration gives it.
pub(super) type Overrides = HashMap<Box<str>, Arc<Override>>;

/// A policy set for a scope, and what it becomes over each declared algorithm.
pub(super) struct Override {
    given: Arc<Limit>,
    /// A policy that does not name its algorithm ([`Policy::new`]) keeps the declared one,
    /// and one without a penalty or a delay the declared penalty or delay (see
    /// [`Policy::over`]). The limit over each declared policy, made on first use.
    kept: parking_lot::RwLock<Vec<(Policy, Arc<Limit>)>>,
}

/// The declared policies an override keeps a limit for, at most (a scope declares a few).
const MOST_KEPT: usize = 16;

impl Override {
    pub(super) fn new(scope: &str, policy: Policy) -> Arc<Override> {
        Arc::new(Override {
            given: Arc::new(Limit::new(scope.to_string(), policy)),
            kept: parking_lot::RwLock::new(Vec::new()),
        })
    }

    pub(super) fn given(&self) -> &Arc<Limit> {
        &self.given
    }

    /// The limit this override puts in place of `declared`: the given policy with what it
    /// keeps of the declared one — its algorithm unless it names one, its penalty and its
    /// delay unless it has its own — the whole policy, whatever the override names.
    fn over(&self, declared: &Limit, limiter: &Limiter) -> Arc<Limit> {
        let policy = self.given.policy();
        let declared = declared.policy();
        if let Some((_, kept)) = self.kept.read().iter().find(|(d, _)| d == declared) {
            return Arc::clone(kept);
        }
        let kept = match policy.over(declared) {
            Ok(kept) if kept == *policy => Arc::clone(&self.given),
            Ok(kept) => {
                let limit = Arc::new(Limit::new(self.given.scope().to_string(), kept));
                limiter.remember(&limit);
                limit
            }
            Err(error) => {
                let algorithm = declared.algorithm();
                tracing::warn!(
                    scope = self.given.scope(),
                    "rate limit: the policy configured for this scope ({policy}) cannot keep \
                     the declared algorithm {algorithm} ({error}); it is counted by the \
                     sliding window instead. Name the algorithm with Policy::for_algorithm \
                     to choose"
                );
                Arc::clone(&self.given)
            }
        };
        let mut cache = self.kept.write();
        if cache.len() < MOST_KEPT && !cache.iter().any(|(d, _)| d == declared) {
            cache.push((*declared, Arc::clone(&kept)));
        }
        kept
    }
}

impl Limiter {
    /// The limit configuration gives `declared`'s scope, if it overrides the declared one.
    /// Lock-free: a relaxed load when no override exists.
    #[inline]
    #[doc(hidden)]
    pub fn overridden(&self, declared: &Limit) -> Option<Arc<Limit>> {
        match self.inner.overridden.load(Ordering::Relaxed) {
            false => None,
            true => self.overridden_now(declared),
        }
    }

    /// [`overridden`](Self::overridden) once an override exists: kept out of line, so that
    /// the check every request makes is the load alone.
    #[inline(never)]
    fn overridden_now(&self, declared: &Limit) -> Option<Arc<Limit>> {
        let overrides = self.inner.overrides.load();
        let limit = overrides.get(declared.scope())?.over(declared, self);
        (limit.policy() != declared.policy()).then_some(limit)
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

impl Limiter {
    /// [`routes`](crate::routes), each limit as this limiter applies it: a policy its configuration
    /// replaced ([`LimiterBuilder::policy`](crate::LimiterBuilder::policy),
    /// [`set_policy`](crate::Limiter::set_policy)) is shown instead, marked `configured`.
    pub fn routes(&self) -> Routes {
        let mut routes = crate::registry::routes();
        for route in &mut routes.0 {
            for entry in &mut route.limits {
                if let Some(configured) = self.overridden(&entry.limit) {
                    entry.limit = Limit::clone(&configured);
                    entry.options.push("configured".to_string());
                }
            }
        }
        routes
    }
}
