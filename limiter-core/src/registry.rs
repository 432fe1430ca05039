//! Every rate-limited handler of the program, registered at compile time, so that what
//! cannot be right is found when the [`Limiter`](crate::Limiter) is built — before any
//! request — rather than per request, or never.

use std::fmt;

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
    let mut routes: Vec<Route> = inventory::iter::<Registration>
        .into_iter()
        .map(|registration| {
            let declared = (registration.declares)();
            Route {
                handler: declared.owner().to_string(),
                location: format!("{}:{}", registration.file, registration.line),
                limits: declared.limits().into_iter().cloned().collect(),
            }
        })
        .collect();
    routes.sort_by(|a, b| a.handler.cmp(&b.handler));
    routes
}

/// Every conflict among the program's rate-limited handlers.
pub(crate) fn conflicts() -> Vec<ScopeConflict> {
    let mut declared: Vec<(String, Declaration)> = Vec::new();
    let mut conflicts = Vec::new();
    for registration in inventory::iter::<Registration> {
        let declares = (registration.declares)();
        for limit in declares.limits() {
            let declaration = Declaration {
                handler: declares.owner().to_string(),
                location: format!("{}:{}", registration.file, registration.line),
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
