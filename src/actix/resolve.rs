//! Resolvers: the functions `key = path` and `policy = path` name, plain or `async`.
//!
//! A plain `fn(&HttpRequest) -> Option<T>` is called in place, as it always was: no future,
//! no allocation, the lean path stays open. An `async fn(&HttpRequest) -> Option<T>` (a
//! tenant's plan in a database, a key in a cache) is awaited within the limiter's
//! [`resolver_timeout`](crate::LimiterBuilder::resolver_timeout); one that takes longer, or
//! answers `None`, counts as no answer — the client's address for a key, the declared
//! policy for a policy — so a slow database never refuses a request by itself.
//!
//! Which of the two a function is, the compiler says: the attribute hands it to
//! [`Resolver::new`], whose trait has one implementation for each.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use actix_web::HttpRequest;

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
    awaited: bool,
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
        }
    }
}

/// `resolving`'s answer, or `None` (with a `warn` event naming `what`) when it takes longer
/// than `timeout`.
pub(crate) async fn within<T>(
    resolution: Resolution<'_, T>,
    timeout: Duration,
    what: &str,
) -> Option<T> {
    match resolution {
        Resolution::Now(answer) => answer,
        Resolution::Later(resolving) => match tokio::time::timeout(timeout, resolving).await {
            Ok(answer) => answer,
            Err(_) => {
                tracing::warn!(
                    resolver = what,
                    ?timeout,
                    "an async rate limit resolver did not answer in time; using its default"
                );
                None
            }
        },
    }
}
