//! Every rate-limited handler of the program, registered at compile time, so that what
//! cannot be right is found when the [`Limiter`](crate::Limiter) is built — before any
//! request — rather than per request, or never.

use std::fmt;

use std::sync::Arc;

use crate::{Limit, Policy};

/// What a part of the program declares: a handler's limits, a middleware's. The glue
/// implements it; not a public API.
#[doc(hidden)]
pub trait Declares: Sync {
    /// The path of the handler (or middleware) the limits belong to.
    fn owner(&self) -> &str;
    /// The limits, in the order they are checked.
    fn limits(&self) -> Vec<&Limit>;
}

/// One `#[rate_limit]` handler, as the attribute registers it. Not a public API.
#[doc(hidden)]
pub struct Registration {
    declares: fn() -> &'static dyn Declares,
    file: &'static str,
    line: u32,
}

impl Registration {
    /// The registration of what `declares` gives, written at `file:line`.
    pub const fn new(
        declares: fn() -> &'static dyn Declares,
        file: &'static str,
        line: u32,
    ) -> Registration {
        Registration {
            declares,
            file,
            line,
        }
    }
}

inventory::collect!(Registration);

/// What registered at run time: the [`RateLimit`](crate::RateLimit) middlewares, made as
/// each worker builds its `App` (so each once per worker: kept once).
static AT_RUN_TIME: parking_lot::Mutex<Vec<Shared>> = parking_lot::Mutex::new(Vec::new());

type Shared = Arc<dyn Declares + Send>;
/// A registration, and where in the source it was written (compile-time ones only).
type Registered = (Shared, Option<(&'static str, u32)>);

/// Registers what a middleware declares. A scope it gives a different limit than a
/// handler or another middleware is reported as an `error` event: the limiters are built by
/// then.
pub(crate) fn register(declares: Shared) {
    let mut registered = AT_RUN_TIME.lock();
    let same = |d: &Shared| {
        d.owner() == declares.owner()
            && d.limits()
                .iter()
                .map(|l| l.id())
                .eq(declares.limits().iter().map(|l| l.id()))
    };
    if registered.iter().any(same) {
        return;
    }
    let new = declares.clone();
    registered.push(declares);
    drop(registered);
    for conflict in conflicts_among(everything())
        .into_iter()
        .filter(|c| new.limits().iter().any(|l| l.scope() == c.scope))
    {
        tracing::error!(%conflict, "rate limit scopes in conflict");
    }
}

/// What the attribute registered at compile time.
fn at_compile_time() -> Vec<Registered> {
    inventory::iter::<Registration>
        .into_iter()
        .map(|registration| {
            let shared: Shared = Arc::new(Static((registration.declares)()));
            (shared, Some((registration.file, registration.line)))
        })
        .collect()
}

/// Everything registered: at compile time, then at run time.
fn everything() -> Vec<Registered> {
    let mut all = at_compile_time();
    all.extend(AT_RUN_TIME.lock().iter().map(|d| (d.clone(), None)));
    all
}

/// A compile-time registration, as the run-time ones are held.
struct Static(&'static dyn Declares);

impl Declares for Static {
    fn owner(&self) -> &str {
        self.0.owner()
    }
    fn limits(&self) -> Vec<&Limit> {
        self.0.limits()
    }
}

/// Where a limit was declared: the handler's path and its place in the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declaration {
    /// The handler's path (see [`handler_path`](crate::handler_path)).
    pub handler: String,
    /// The source file and line of its `#[rate_limit]`.
    pub location: String,
    /// The limit's policy there.
    pub policy: Policy,
}

impl fmt::Display for Declaration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.policy;
        write!(
            f,
            "`{}` ({}): {} per {}ms, {}",
            self.handler,
            self.location,
            p.max(),
            p.window_ms(),
            p.algorithm()
        )
    }
}

/// Two handlers that name one scope with different limits. A scope is one budget, so the
/// program does not say which limit it means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopeConflict {
    /// The scope.
    pub scope: String,
    /// One declaration.
    pub first: Declaration,
    /// Another, with a different policy.
    pub second: Declaration,
}

impl fmt::Display for ScopeConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "scope \"{}\" is one budget, but it is declared with two different limits: {} and {}; \
             give them the same limit, or different scopes",
            self.scope, self.first, self.second
        )
    }
}

impl std::error::Error for ScopeConflict {}

/// A rate-limited handler of the program: where it is, and its limits.
#[derive(Clone, Debug)]
pub struct Route {
    /// The handler's path (see [`handler_path`](crate::handler_path)).
    pub handler: String,
    /// The source file and line of its `#[rate_limit]`.
    pub location: String,
    /// Its limits, in the order they are checked.
    pub limits: Vec<Limit>,
}

/// Every `#[rate_limit]` handler of the program, known before any request: each registers
/// itself at compile time.
///
/// ```
/// for route in limiter_core::routes() {
///     for limit in &route.limits {
///         println!("{} ({}): {:?}", route.handler, limit.scope(), limit.policy());
///     }
/// }
/// ```
pub fn routes() -> Vec<Route> {
    let mut routes: Vec<Route> = everything()
        .into_iter()
        .map(|(declares, place)| Route {
            handler: declares.owner().to_string(),
            location: location(place),
            limits: declares.limits().into_iter().cloned().collect(),
        })
        .collect();
    routes.sort_by(|a, b| a.handler.cmp(&b.handler));
    routes
}

fn location(place: Option<(&'static str, u32)>) -> String {
    match place {
        Some((file, line)) => format!("{file}:{line}"),
        None => "made at run time".to_string(),
    }
}

/// Every declared limit of `scope`, by handlers and middlewares.
pub(crate) fn limits_of(scope: &str) -> Vec<Limit> {
    let mut limits: Vec<Limit> = Vec::new();
    for (declares, _) in everything() {
        for limit in declares.limits() {
            if limit.scope() == scope && !limits.contains(limit) {
                limits.push(limit.clone());
            }
        }
    }
    limits
}

/// Every conflict among the program's `#[rate_limit]` handlers, all known at start-up.
/// (Middlewares are made as workers build their apps, after the limiter: their conflicts
/// are reported when they register.)
pub(crate) fn conflicts() -> Vec<ScopeConflict> {
    conflicts_among(at_compile_time())
}

fn conflicts_among(registered: Vec<Registered>) -> Vec<ScopeConflict> {
    let mut declared: Vec<(String, Declaration)> = Vec::new();
    let mut conflicts = Vec::new();
    for (declares, place) in registered {
        for limit in declares.limits() {
            let declaration = Declaration {
                handler: declares.owner().to_string(),
                location: location(place),
                policy: *limit.policy(),
            };
            let scope = limit.scope();
            let clash = declared
                .iter()
                .find(|(s, d)| s == scope && d.policy != declaration.policy);
            match clash {
                Some((_, first)) => conflicts.push(ScopeConflict {
                    scope: scope.to_string(),
                    first: first.clone(),
                    second: declaration,
                }),
                None => declared.push((scope.to_string(), declaration)),
            }
        }
    }
    conflicts
}
