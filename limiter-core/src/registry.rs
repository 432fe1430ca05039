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
    /// For each limit, who it counts and what it does besides counting one per request,
    /// in words (`ip`; `cost=10`, `count=failures`).
    fn details(&self) -> Vec<(String, Vec<String>)> {
        Vec::new()
    }
    /// The scopes of the limits whose units may be given back (`count = "failures"`).
    fn refunded_scopes(&self) -> Vec<&str> {
        Vec::new()
    }
    /// Its concurrency limits, each with who it counts.
    fn in_flight(&self) -> Vec<(&crate::Concurrency, String)> {
        Vec::new()
    }
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

/// Where a `#[rate_limit]` handler is: its path as the attribute writes it
/// (`module_path!()` and the fn's name) and its place in the source. Plain constants,
/// registered at compile time, so that two handlers of one path (in two `impl` blocks, or
/// two functions, of one module) are known before either builds its limits. Not a public
/// API.
#[doc(hidden)]
pub struct HandlerPath {
    path: &'static str,
    place: (&'static str, u32, u32),
}

impl HandlerPath {
    /// The handler at `path`, written at `file:line:column`.
    pub const fn new(path: &'static str, file: &'static str, line: u32, column: u32) -> Self {
        HandlerPath {
            path,
            place: (file, line, column),
        }
    }
}

inventory::collect!(HandlerPath);

/// Whether more than one handler of the program has `path` (not a public API).
pub fn path_is_shared(path: &str) -> bool {
    let mut places = inventory::iter::<HandlerPath>
        .into_iter()
        .filter(|h| h.path == path)
        .map(|h| h.place);
    match places.next() {
        Some(first) => places.any(|place| place != first),
        None => false,
    }
}

/// What registered at run time: the [`RateLimit`](crate::RateLimit) middlewares, made as
/// each worker builds its `App` (so each once per worker: kept once).
static AT_RUN_TIME: parking_lot::Mutex<Vec<Shared>> = parking_lot::Mutex::new(Vec::new());

/// What a run-time registration holds. Not a public API.
pub type Shared = Arc<dyn Declares + Send>;
/// A registration, and where in the source it was written (compile-time ones only).
type Registered = (Shared, Option<(&'static str, u32)>);

/// Registers what a middleware declares (not a public API). A scope it gives a different limit than a
/// handler or another middleware is reported as an `error` event: the limiters are built by
/// then.
pub fn register(declares: Shared) {
    let mut registered = AT_RUN_TIME.lock();
    // Each worker makes its own middlewares: one registration of what they all declare.
    // Two that differ only in their options or their concurrency limits are two.
    let same = |d: &Shared| {
        d.owner() == declares.owner()
            && d.limits()
                .iter()
                .map(|l| l.id())
                .eq(declares.limits().iter().map(|l| l.id()))
            && d.details() == declares.details()
            && d.in_flight()
                .iter()
                .map(|(limit, key)| (limit.id(), key))
                .eq(declares
                    .in_flight()
                    .iter()
                    .map(|(limit, key)| (limit.id(), key)))
    };
    if registered.iter().any(same) {
        return;
    }
    let new = declares.clone();
    registered.push(declares);
    GENERATION.fetch_add(1, std::sync::atomic::Ordering::Release);
    drop(registered);
    let all = everything();
    for conflict in conflicts_among(all.clone())
        .into_iter()
        .filter(|c| new.limits().iter().any(|l| l.scope() == c.scope))
    {
        tracing::error!(%conflict, "rate limit scopes in conflict");
    }
    for (scope, conflict) in in_flight_conflicts_among(all) {
        if new
            .in_flight()
            .iter()
            .any(|(limit, _)| limit.scope() == scope)
        {
            tracing::error!(%conflict, "concurrency scopes in conflict");
        }
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
    fn details(&self) -> Vec<(String, Vec<String>)> {
        self.0.details()
    }
    fn refunded_scopes(&self) -> Vec<&str> {
        self.0.refunded_scopes()
    }
    fn in_flight(&self) -> Vec<(&crate::Concurrency, String)> {
        self.0.in_flight()
    }
}

/// Bumped whenever something registers at run time, so that what was read from the
/// registry can be read again.
static GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The registry's generation: it changes when a middleware registers.
pub(crate) fn generation() -> u64 {
    GENERATION.load(std::sync::atomic::Ordering::Acquire)
}

/// Whether any declaration gives back units of a budget of `scope` (`count = "failures"`).
pub(crate) fn refunds_in(scope: &str) -> bool {
    everything()
        .iter()
        .any(|(d, _)| d.refunded_scopes().contains(&scope))
}

/// Where a limit was declared: the handler's path and its place in the source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Declaration {
    /// The handler's path (the glue's `limiter::handler_path`).
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

/// A rate-limited handler (or middleware) of the program: where it is, and its limits.
#[derive(Clone, Debug)]
pub struct Route {
    /// The handler's path (the glue's `limiter::handler_path`).
    pub handler: String,
    /// The source file and line of its `#[rate_limit]`.
    pub location: String,
    /// Its limits, in the order they are checked.
    pub limits: Vec<RouteLimit>,
    /// Its concurrency limits (`#[concurrency_limit]`), each with who it counts.
    pub in_flight: Vec<(crate::Concurrency, String)>,
}

/// One limit of a [`Route`]: the limit, who it counts, and its options.
#[derive(Clone, Debug)]
pub struct RouteLimit {
    /// The limit (scope and policy).
    pub limit: Limit,
    /// Who it counts: `ip`, `user`, `global`, `header:NAME`, `function`, `async-function`.
    pub key: String,
    /// What it does besides counting one unit per request: `cost=10`, `cost=fn`,
    /// `count=failures`, `exempt=fn`, `dry_run`, `policy=fn`, `policy=async-fn`, and `configured` when the
    /// limiter's configuration replaced the declared policy.
    pub options: Vec<String>,
}

impl std::ops::Deref for RouteLimit {
    type Target = Limit;

    fn deref(&self) -> &Limit {
        &self.limit
    }
}

/// The program's rate-limited routes ([`routes`], [`Limiter::routes`](crate::Limiter::routes)):
/// a list, printed as an aligned table.
#[derive(Clone, Debug, Default)]
pub struct Routes(pub(crate) Vec<Route>);

impl std::ops::Deref for Routes {
    type Target = [Route];

    fn deref(&self) -> &[Route] {
        &self.0
    }
}

impl IntoIterator for Routes {
    type Item = Route;
    type IntoIter = std::vec::IntoIter<Route>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl Routes {
    /// One row per limit: scope, policy, key, options, handler and where it is declared.
    pub fn rows(&self) -> Vec<[String; 5]> {
        let mut rows = Vec::new();
        for route in &self.0 {
            for (limit, key) in &route.in_flight {
                rows.push([
                    limit.scope().to_string(),
                    limit.to_string(),
                    key.clone(),
                    "-".to_string(),
                    format!("{} ({})", route.handler, route.location),
                ]);
            }
            for limit in &route.limits {
                let options = if limit.options.is_empty() {
                    "-".to_string()
                } else {
                    limit.options.join(" ")
                };
                rows.push([
                    limit.scope().to_string(),
                    limit.policy().to_string(),
                    limit.key.clone(),
                    options,
                    format!("{} ({})", route.handler, route.location),
                ]);
            }
        }
        rows
    }
}

/// ```text
/// scope   limit                       key  options         handler
/// login   5 per 15m, sliding_window   ip   count=failures  my_app::login (src/main.rs:12)
/// ```
impl fmt::Display for Routes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header = ["scope", "limit", "key", "options", "handler"].map(str::to_string);
        let rows = self.rows();
        let mut widths = header.clone().map(|h| h.chars().count());
        for row in &rows {
            for (width, cell) in widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        for row in std::iter::once(&header).chain(&rows) {
            let mut line = String::new();
            for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
                if i + 1 == row.len() {
                    line.push_str(cell);
                } else {
                    line.push_str(&format!("{cell:<width$}  "));
                }
            }
            writeln!(f, "{}", line.trim_end())?;
        }
        Ok(())
    }
}

/// Every `#[rate_limit]` handler of the program, known before any request (each registers
/// itself at compile time), and every `RateLimit` middleware its apps have made, with the
/// limits as declared; [`Limiter::routes`](crate::Limiter::routes) shows them as a limiter
/// configures them.
///
/// ```
/// for route in limiter::routes().iter() {
///     for limit in &route.limits {
///         println!("{} ({}): {}", route.handler, limit.scope(), limit.policy());
///     }
/// }
/// print!("{}", limiter::routes()); // an aligned table
/// ```
pub fn routes() -> Routes {
    let mut routes: Vec<Route> = everything()
        .into_iter()
        .map(|(declares, place)| {
            let mut details = declares.details().into_iter();
            Route {
                handler: declares.owner().to_string(),
                location: location(place),
                limits: declares
                    .limits()
                    .into_iter()
                    .map(|limit| {
                        let (key, options) = details.next().unwrap_or_default();
                        RouteLimit {
                            limit: limit.clone(),
                            key,
                            options,
                        }
                    })
                    .collect(),
                in_flight: declares
                    .in_flight()
                    .into_iter()
                    .map(|(limit, key)| (limit.clone(), key))
                    .collect(),
            }
        })
        .collect();
    routes.sort_by(|a, b| a.handler.cmp(&b.handler));
    Routes(routes)
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

/// Reports every concurrency scope the program's handlers give different limits as an
/// `error` event. (Not a [`ScopeConflict`], which names policies: each limit keeps a pool
/// of its own.)
pub(crate) fn report_in_flight_conflicts() {
    for (_, conflict) in in_flight_conflicts_among(at_compile_time()) {
        tracing::error!(%conflict, "concurrency scopes in conflict");
    }
}

fn in_flight_conflicts_among(registered: Vec<Registered>) -> Vec<(String, String)> {
    let mut declared: Vec<(String, u32, String)> = Vec::new();
    let mut conflicts = Vec::new();
    for (declares, place) in &registered {
        for (limit, _) in declares.in_flight() {
            let here = format!("`{}` ({})", declares.owner(), location(*place));
            let max = limit.max().get();
            match declared
                .iter()
                .find(|(scope, m, _)| scope == limit.scope() && *m != max)
            {
                Some((scope, first_max, first)) => conflicts.push((
                    scope.clone(),
                    format!(
                        "concurrency scope \"{scope}\" is one pool, but it is declared with two \
                         different limits: {first}: {first_max} in flight, and {here}: {max} in \
                         flight; give them the same limit, or different scopes (each keeps a \
                         pool of its own meanwhile)"
                    ),
                )),
                None => declared.push((limit.scope().to_string(), max, here)),
            }
        }
    }
    conflicts
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
