//! Resolvers: the functions `key = path` and `policy = path` name, plain or `async`.
//!
//! A plain `fn(&HttpRequest) -> Option<T>` is called in place: no future,
//! no allocation, the lean path stays open. An `async fn(&HttpRequest) -> Option<T>` (a
//! tenant's plan in a database, a key in a cache) is awaited within the limiter's
//! [`resolver_timeout`](crate::LimiterBuilder::resolver_timeout), one for all of a
//! request's resolvers together; one that takes longer, or answers `None`, counts as no
//! answer — the client's address for a key, the declared policy for a policy — so a slow
//! database holds a request at most the timeout, and never refuses it by itself.
//!
//! Which of the two a function is, the compiler says: the attribute hands it to
//! [`Resolver::new`], whose trait has one implementation for each.

use std::any::TypeId;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix_web::{HttpMessage, HttpRequest};
use tokio::time::Instant;

/// The future an `async` resolver returns, boxed: one allocation per request it serves.
type Resolving<'a, T> = Pin<Box<dyn Future<Output = Option<T>> + 'a>>;

/// What a resolver gives for a request: its answer now, or a future of it.
pub(crate) enum Resolution<'a, T> {
    Now(Option<T>),
    Later(Resolving<'a, T>),
}

trait Resolve<T>: Send + Sync {
    fn resolve<'a>(&'a self, req: &'a HttpRequest) -> Resolution<'a, T>;
}

struct Plain<F>(F);

impl<T, F: Fn(&HttpRequest) -> Option<T> + Send + Sync> Resolve<T> for Plain<F> {
    fn resolve<'a>(&'a self, req: &'a HttpRequest) -> Resolution<'a, T> {
        Resolution::Now((self.0)(req))
    }
}

struct Deferred<F>(F);

impl<T, F: AsyncFn(&HttpRequest) -> Option<T> + Send + Sync> Resolve<T> for Deferred<F> {
    fn resolve<'a>(&'a self, req: &'a HttpRequest) -> Resolution<'a, T> {
        Resolution::Later(Box::pin((self.0)(req)))
    }
}

/// A function that finds a `T` for a request — a client key (`T = String`) or a policy —
/// plain or `async`.
///
/// ```
/// use actix_web::HttpRequest;
/// use limiter::{KeySpec, Policy, RateLimit, Resolver};
/// use std::time::Duration;
///
/// /// The tenant of an API key, as a database would say (here: at once).
/// async fn tenant(req: &HttpRequest) -> Option<String> {
///     let key = req.headers().get("x-api-key")?.to_str().ok()?;
///     Some(format!("tenant-of-{key}"))
/// }
///
/// let limit = RateLimit::new(Policy::new(100, Duration::from_secs(60)).unwrap())
///     .scope("api")
///     .key(KeySpec::Resolved(Resolver::new(tenant)));
/// ```
pub struct Resolver<T: 'static> {
    resolve: Arc<dyn Resolve<T>>,
    /// Whether it is `async`.
    awaited: bool,
    /// What tells an `async` function's answers apart in a request: its type, when that
    /// names one function (a fn item, a closure that captures nothing — zero-sized); `None`
    /// for one whose values of one type may differ (a fn pointer, a capturing closure),
    /// which is asked again for each limit.
    answers_by: Option<TypeId>,
}

impl<T: 'static> Resolver<T> {
    /// A resolver of `function`: a `fn(&HttpRequest) -> Option<T>` or an
    /// `async fn(&HttpRequest) -> Option<T>` (or a closure of either kind).
    pub fn new<Kind>(function: impl IntoResolver<T, Kind>) -> Resolver<T> {
        function.into_resolver()
    }

    /// Whether it is `async` (awaited, within the resolver timeout).
    pub fn is_async(&self) -> bool {
        self.awaited
    }

    pub(crate) fn resolve<'a>(&'a self, req: &'a HttpRequest) -> Resolution<'a, T> {
        self.resolve.resolve(req)
    }
}

impl<T: 'static> Clone for Resolver<T> {
    fn clone(&self) -> Resolver<T> {
        Resolver {
            resolve: Arc::clone(&self.resolve),
            awaited: self.awaited,
            answers_by: self.answers_by,
        }
    }
}

impl<T: 'static> std::fmt::Debug for Resolver<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.awaited {
            "Resolver(async fn)"
        } else {
            "Resolver(fn)"
        })
    }
}

/// The functions a [`Resolver`] is made of: `fn(&HttpRequest) -> Option<T>` and
/// `async fn(&HttpRequest) -> Option<T>`. `Kind` tells the two apart ([`Now`] or
/// [`Awaited`]); the compiler infers it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a resolver of `Option<{T}>`",
    label = "expected `fn(&HttpRequest) -> Option<{T}>` or `async fn(&HttpRequest) -> Option<{T}>`",
    note = "a key function returns `Option<String>` (`None`: the client's address); a policy \
            function `Option<Policy>` (`None`: the declared policy); either may be `async`"
)]
pub trait IntoResolver<T: 'static, Kind> {
    /// The resolver.
    fn into_resolver(self) -> Resolver<T>;
}

/// The [`IntoResolver`] kind of a plain function, answered in place.
pub enum Now {}

/// The [`IntoResolver`] kind of an `async` function, awaited.
pub enum Awaited {}

impl<T: 'static, F> IntoResolver<T, Now> for F
where
    F: Fn(&HttpRequest) -> Option<T> + Send + Sync + 'static,
{
    fn into_resolver(self) -> Resolver<T> {
        Resolver {
            resolve: Arc::new(Plain(self)),
            awaited: false,
            answers_by: None,
        }
    }
}

impl<T: 'static, F> IntoResolver<T, Awaited> for F
where
    F: AsyncFn(&HttpRequest) -> Option<T> + Send + Sync + 'static,
{
    fn into_resolver(self) -> Resolver<T> {
        Resolver {
            resolve: Arc::new(Deferred(self)),
            awaited: true,
            answers_by: (std::mem::size_of::<F>() == 0).then(TypeId::of::<F>),
        }
    }
}

/// When a request's resolvers must have answered: one timeout from the first one awaited,
/// for all of them together (its keys and policies, its rate and concurrency limits).
#[derive(Clone, Copy)]
struct AnswerBy(Instant);

/// The second (since the process started) of the last `warn` about a late resolver.
static LAST_WARNED: AtomicU64 = AtomicU64::new(u64::MAX);

/// The answers a request's `async` resolvers of `T` gave, by function: two limits keyed by
/// one `async fn` ask it once, and count by the same answer. (Only functions whose type
/// names them are kept; see `Resolver::answers_by`.)
struct Answers<T>(Vec<(TypeId, Option<T>)>);

/// `resolver`'s answer for `req`, or `None` when the request's resolvers have taken
/// `timeout` between them (with a `warn` event naming `what`, at most one a second: a
/// database down would otherwise log every request).
pub(crate) async fn within<T: Clone + 'static>(
    resolver: &Resolver<T>,
    req: &HttpRequest,
    timeout: Duration,
    what: &str,
) -> Option<T> {
    let asked = resolver.answers_by;
    if let Some(function) = asked {
        let extensions = req.extensions();
        let given = extensions.get::<Answers<T>>().and_then(|answers| {
            let (_, answer) = answers.0.iter().find(|(f, _)| *f == function)?;
            Some(answer.clone())
        });
        if let Some(answer) = given {
            return answer;
        }
    }
    let resolving = match resolver.resolve(req) {
        Resolution::Now(answer) => return answer,
        Resolution::Later(resolving) => resolving,
    };
    let by = {
        let mut extensions = req.extensions_mut();
        match extensions.get::<AnswerBy>() {
            Some(by) => *by,
            None => {
                let by = AnswerBy(Instant::now() + timeout);
                extensions.insert(by);
                by
            }
        }
    };
    let answer = match tokio::time::timeout_at(by.0, resolving).await {
        Ok(answer) => answer,
        Err(_) => {
            let second = started().elapsed().as_secs();
            if LAST_WARNED.swap(second, Ordering::Relaxed) != second {
                tracing::warn!(
                    resolver = what,
                    ?timeout,
                    "an async rate limit resolver did not answer in time; using its default \
                     (the address for a key, the declared policy for a policy)"
                );
            }
            None
        }
    };
    if let Some(function) = asked {
        let mut extensions = req.extensions_mut();
        match extensions.get_mut::<Answers<T>>() {
            Some(answers) => answers.0.push((function, answer.clone())),
            None => {
                extensions.insert(Answers(vec![(function, answer.clone())]));
            }
        }
    }
    answer
}

/// When this process first needed the time of a late resolver.
fn started() -> std::time::Instant {
    static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *STARTED.get_or_init(std::time::Instant::now)
}
