//! Resolvers: the functions `key = path` and `policy = path` name, plain or `async`.
//!
//! A plain `fn(&Request) -> Option<T>` (the front end's request) is called in place: no
//! future, no allocation, the lean path stays open. An `async fn(&Request) -> Option<T>` (a
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

use tokio::time::Instant;

use crate::{Front, LocalFront, SendFront};

/// What a resolver gives for a request: its answer now, or a future of it (boxed: one
/// allocation per request it serves).
pub(crate) enum Resolution<'a, F: Front, T: 'a> {
    Now(Option<T>),
    Later(F::Pending<'a, T>),
}

trait Resolve<F: Front, T>: Send + Sync {
    fn resolve<'a>(&'a self, req: &'a F::Request) -> Resolution<'a, F, T>;
}

struct Plain<Fun>(Fun);

impl<F: Front, T, Fun: Fn(&F::Request) -> Option<T> + Send + Sync> Resolve<F, T> for Plain<Fun> {
    fn resolve<'a>(&'a self, req: &'a F::Request) -> Resolution<'a, F, T> {
        Resolution::Now((self.0)(req))
    }
}

struct Deferred<Fun>(Fun);

impl<F: LocalFront, T, Fun: AsyncFn(&F::Request) -> Option<T> + Send + Sync> Resolve<F, T>
    for Deferred<Fun>
{
    fn resolve<'a>(&'a self, req: &'a F::Request) -> Resolution<'a, F, T> {
        let pending: Pin<Box<dyn Future<Output = Option<T>> + 'a>> = Box::pin((self.0)(req));
        Resolution::Later(F::pending(pending))
    }
}

/// An `async fn(&Request) -> Option<T>` whose future is `Send` (what a front end of `Send`
/// handlers awaits): the future's type named for each borrow of the request, so that it
/// can be required `Send` on stable Rust. Every such function is one; nothing to
/// implement.
pub trait SendAsyncFn<'a, Request: 'a, T>: Fn(&'a Request) -> Self::Future {
    /// The function's future for a request borrowed for `'a`.
    type Future: Future<Output = Option<T>> + Send + 'a;
}

impl<'a, Request: 'a, T, Fun, Fut> SendAsyncFn<'a, Request, T> for Fun
where
    Fun: Fn(&'a Request) -> Fut,
    Fut: Future<Output = Option<T>> + Send + 'a,
{
    type Future = Fut;
}

struct DeferredSend<Fun>(Fun);

impl<F: SendFront, T, Fun> Resolve<F, T> for DeferredSend<Fun>
where
    Fun: for<'a> SendAsyncFn<'a, F::Request, T> + Send + Sync,
{
    fn resolve<'a>(&'a self, req: &'a F::Request) -> Resolution<'a, F, T> {
        let pending: Pin<Box<dyn Future<Output = Option<T>> + Send + 'a>> = Box::pin((self.0)(req));
        Resolution::Later(F::pending_send(pending))
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
pub struct Resolver<F: Front, T: 'static> {
    resolve: Arc<dyn Resolve<F, T>>,
    /// Whether it is `async`.
    awaited: bool,
    /// What tells an `async` function's answers apart in a request: its type, when that
    /// names one function (a fn item, a closure that captures nothing — zero-sized); `None`
    /// for one whose values of one type may differ (a fn pointer, a capturing closure),
    /// which is asked again for each limit.
    answers_by: Option<TypeId>,
}

impl<F: Front, T: 'static> Resolver<F, T> {
    /// A resolver of `function`: a `fn(&Request) -> Option<T>` or an
    /// `async fn(&Request) -> Option<T>` (or a closure of either kind), over the front
    /// end's request.
    pub fn new<Kind>(function: impl IntoResolver<F, T, Kind>) -> Resolver<F, T> {
        function.into_resolver()
    }

    /// Whether it is `async` (awaited, within the resolver timeout).
    pub fn is_async(&self) -> bool {
        self.awaited
    }

    pub(crate) fn resolve<'a>(&'a self, req: &'a F::Request) -> Resolution<'a, F, T> {
        self.resolve.resolve(req)
    }
}

impl<F: Front, T: 'static> Clone for Resolver<F, T> {
    fn clone(&self) -> Resolver<F, T> {
        Resolver {
            resolve: Arc::clone(&self.resolve),
            awaited: self.awaited,
            answers_by: self.answers_by,
        }
    }
}

impl<F: Front, T: 'static> std::fmt::Debug for Resolver<F, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.awaited {
            "Resolver(async fn)"
        } else {
            "Resolver(fn)"
        })
    }
}

/// The functions a [`Resolver`] is made of: `fn(&Request) -> Option<T>` and
/// `async fn(&Request) -> Option<T>`, over the front end `F`'s request. `Kind` tells the
/// two apart ([`Now`] or [`Awaited`]); the compiler infers it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a resolver of `Option<{T}>`",
    label = "expected a function of the request (on the `{F}` front end): `fn(&HttpRequest) -> Option<{T}>` or an `async fn` on actix, `fn(&http::request::Parts) -> Option<{T}>` or an `async fn` on axum",
    note = "a key function returns `Option<String>` (`None`: the client's address); a policy \
            function `Option<Policy>` (`None`: the declared policy); either may be `async` (on \
            axum, its future must be `Send`: hold no `Rc` or `RefCell` borrow across an `.await`)"
)]
pub trait IntoResolver<F: Front, T: 'static, Kind> {
    /// The resolver.
    fn into_resolver(self) -> Resolver<F, T>;
}

/// The [`IntoResolver`] kind of a plain function, answered in place.
pub enum Now {}

/// The [`IntoResolver`] kind of an `async` function, awaited.
pub enum Awaited {}

/// The [`IntoResolver`] kind of an `async` function whose future is `Send`, awaited on a
/// front end of `Send` handlers.
pub enum AwaitedSend {}

impl<F: Front, T: 'static, Fun> IntoResolver<F, T, Now> for Fun
where
    Fun: Fn(&F::Request) -> Option<T> + Send + Sync + 'static,
{
    fn into_resolver(self) -> Resolver<F, T> {
        Resolver {
            resolve: Arc::new(Plain(self)),
            awaited: false,
            answers_by: None,
        }
    }
}

impl<F: LocalFront, T: 'static, Fun> IntoResolver<F, T, Awaited> for Fun
where
    Fun: AsyncFn(&F::Request) -> Option<T> + Send + Sync + 'static,
{
    fn into_resolver(self) -> Resolver<F, T> {
        Resolver {
            resolve: Arc::new(Deferred(self)),
            awaited: true,
            answers_by: (std::mem::size_of::<Fun>() == 0).then(TypeId::of::<Fun>),
        }
    }
}

impl<F: SendFront, T: 'static, Fun> IntoResolver<F, T, AwaitedSend> for Fun
where
    Fun: for<'a> SendAsyncFn<'a, F::Request, T> + Send + Sync + 'static,
{
    fn into_resolver(self) -> Resolver<F, T> {
        Resolver {
            resolve: Arc::new(DeferredSend(self)),
            awaited: true,
            answers_by: (std::mem::size_of::<Fun>() == 0).then(TypeId::of::<Fun>),
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
#[derive(Clone)]
struct Answers<T>(Vec<(TypeId, Option<T>)>);

/// `resolver`'s answer for `req`, or `None` when the request's resolvers have taken
/// `timeout` between them (with a `warn` event naming `what`, at most one a second: a
/// database down would otherwise log every request).
pub(crate) async fn within<F: Front, T: Clone + Send + Sync + 'static>(
    resolver: &Resolver<F, T>,
    req: &F::Request,
    timeout: Duration,
    what: &str,
) -> Option<T> {
    let asked = resolver.answers_by;
    if let Some(function) = asked {
        let given = F::local::<Answers<T>>(req).and_then(|answers| {
            let (_, answer) = answers.0.into_iter().find(|(f, _)| *f == function)?;
            Some(answer)
        });
        if let Some(answer) = given {
            return answer;
        }
    }
    let resolving = match resolver.resolve(req) {
        Resolution::Now(answer) => return answer,
        Resolution::Later(resolving) => resolving,
    };
    let by = match F::local::<AnswerBy>(req) {
        Some(by) => by,
        None => {
            let by = AnswerBy(Instant::now() + timeout);
            F::set_local(req, by);
            by
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
        let mut answers = F::local::<Answers<T>>(req).unwrap_or(Answers(Vec::new()));
        answers.0.push((function, answer.clone()));
        F::set_local(req, answers);
    }
    answer
}

/// When this process first needed the time of a late resolver.
fn started() -> std::time::Instant {
    static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *STARTED.get_or_init(std::time::Instant::now)
}
