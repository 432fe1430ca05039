//! The [`Limiter`] a service uses: the engine's limiter (store, clock, fault policy, the
//! limits configuration sets), with who the client is and what responses look like. Its
//! public methods are all here (and [`reset`](Limiter::reset) beside the `Subject` it
//! takes); its builder is in `builder.rs`.

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use actix_web::HttpRequest;

use crate::actix::settings::HttpSettings;
use crate::{Client, Failure, LimiterBuilder, RejectedClient, Share, TrustedProxies};

/// Decides requests: reads its clock, asks its store, applies its policy when the store
/// fails — and knows who a request's client is, and how a rejection is answered.
///
/// Build it once, outside `HttpServer::new`'s closure, and clone it into each worker's
/// `App` with `.app_data(limiter.clone())`: clones share the store and the clock. A limiter
/// built inside the closure would exist once per worker, and multiply the limit. Handlers
/// that find no `Limiter` in their app data use [`Limiter::global`].
///
/// It derefs to the engine's limiter, whose methods it has:
/// [`check`](limiter_core::Limiter::check), [`check_all`](limiter_core::Limiter::check_all),
/// [`refund`](limiter_core::Limiter::refund), [`set_policy`](limiter_core::Limiter::set_policy)
/// and the others.
///
/// ```
/// use std::time::Duration;
/// use limiter::{Limit, Limiter, ManualClock, Policy};
///
/// let clock = ManualClock::new();
/// let limiter = Limiter::builder().clock(clock.clone()).build();
/// let limit = Limit::new("login", Policy::new(1, Duration::from_secs(60))?);
///
/// let first = limiter.check(&limit, b"198.51.100.4").now_or_never().unwrap()?;
/// assert!(first.allowed());
/// let second = limiter.check(&limit, b"198.51.100.4").now_or_never().unwrap()?;
/// assert_eq!(second.retry_after(), Some(Duration::from_secs(60)));
/// clock.advance(Duration::from_secs(60));
/// assert!(limiter.check(&limit, b"198.51.100.4").now_or_never().unwrap()?.allowed());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Limiter {
    pub(crate) engine: limiter_core::Limiter,
    pub(crate) http: Arc<Http>,
}

/// The HTTP settings, and where the limiter was built.
pub(crate) struct Http {
    pub(crate) settings: HttpSettings,
    /// The name of the thread that built it, to judge whether that was a worker.
    pub(crate) built_on: Option<String>,
}

/// Whether a limiter other than the global one was built in this process.
pub(crate) static BUILT: AtomicBool = AtomicBool::new(false);

impl Limiter {
    /// A builder; with no settings it gives a limiter with a fresh in-memory store and the
    /// system clock.
    pub fn builder() -> LimiterBuilder {
        LimiterBuilder::default()
    }

    /// The process-wide default: [`MemoryStore::global`](crate::MemoryStore::global),
    /// [`SystemClock`](crate::SystemClock), default settings.
    ///
    /// Conflicting scopes (see [`LimiterBuilder::build`]) cannot stop a program that never
    /// builds a limiter: they are logged as an `error` event when this one is first used,
    /// and each conflicting limit keeps a budget of its own.
    pub fn global() -> &'static Limiter {
        static GLOBAL: OnceLock<Limiter> = OnceLock::new();
        GLOBAL.get_or_init(|| Limiter {
            engine: limiter_core::Limiter::global().clone(),
            http: Arc::new(Http {
                settings: HttpSettings::default(),
                built_on: None,
            }),
        })
    }

    /// The limiter a request is counted by: the `Limiter` in its app data (given as
    /// `.app_data(limiter)` or, as actix habits go, `.app_data(web::Data::new(limiter))`),
    /// else [`Limiter::global`].
    ///
    /// A program that built a `Limiter` and handed it to no `App` gets one `warn` event at
    /// the first request that falls back to the global one.
    pub fn of(req: &HttpRequest) -> &Limiter {
        let found = req
            .app_data::<Limiter>()
            .or_else(|| {
                req.app_data::<actix_web::web::Data<Limiter>>()
                    .map(|d| d.as_ref())
            })
            .or_else(|| req.app_data::<std::sync::Arc<Limiter>>().map(|a| &**a));
        match found {
            Some(limiter) => {
                crate::actix::mistakes::serving(limiter);
                limiter
            }
            None => {
                crate::actix::mistakes::counted_by_the_global_limiter();
                Limiter::global()
            }
        }
    }

    /// Who `req` is counted as when its key is its address: the peer, or the client a
    /// trusted proxy vouched for (an IPv6 address is then grouped by
    /// [`ipv6_prefix`](Self::ipv6_prefix); see [`client_ip`](crate::client_ip)). For logs,
    /// and for checking a proxy setup. `Err` says why there is none.
    pub fn client(&self, req: &HttpRequest) -> Result<Client, Failure> {
        crate::actix::keys::client(req, self).map_err(|error| match error {
            crate::actix::keys::KeyError::NoClientAddress => Failure::NoClientAddress,
            crate::actix::keys::KeyError::Contradiction(_) => Failure::ContradictoryForwarding,
        })
    }

    /// The IPv6 prefix length clients are grouped by.
    pub fn ipv6_prefix(&self) -> u8 {
        self.http().ipv6_prefix
    }

    /// The proxies whose forwarding headers are believed.
    pub fn trusted_proxies(&self) -> &TrustedProxies {
        &self.http().trusted_proxies
    }

    /// Enforces the limits of `scope` on `share` of their clients from the next request on,
    /// on every worker, over what the attribute declares (`enforce = "10%"`): for rolling a
    /// limit out gradually, raised while serving. Each client is consistently in or out of
    /// the share (see [`Share`]); the others' would-be rejections pass as in a dry run
    /// — counted as `dry_run`, with a `warn` event and an `X-RateLimit-Dry-Run` field naming
    /// the limit (beside the IETF fields, when they are on). [`LimiterBuilder::dry_run`]
    /// still enforces nothing. Limits checked inside handlers ([`check`](crate::check)) are
    /// always enforced: they take no share.
    ///
    /// ```
    /// use limiter::{Limiter, Share};
    /// let limiter = Limiter::builder().enforcement("login", Share::percent(10.0)?).build();
    /// limiter.set_enforcement("login", Share::percent(50.0)?);
    /// assert_eq!(limiter.enforcement("login"), Some(Share::percent(50.0)?));
    /// assert_eq!(limiter.enforcement("search"), None);
    /// # Ok::<(), limiter::InvalidShare>(())
    /// ```
    pub fn set_enforcement(&self, scope: &str, share: Share) {
        self.http().enforcement.set(scope, share);
    }

    /// The share of clients configuration enforces `scope`'s limits on, if it sets one
    /// ([`set_enforcement`](Self::set_enforcement)); `None`: as each limit declares.
    pub fn enforcement(&self, scope: &str) -> Option<Share> {
        self.http().enforcement.of(scope)
    }

    /// Who is being limited right now: the clients `scope`'s limits rejected most over the
    /// last one to two minutes, at most 10, most first by the rejections that are sure
    /// (`rejections - overcount`). Any client with more than a 64th of the scope's rejections
    /// is among them, whatever a flood of distinct clients sends (a space-saving summary of
    /// 64 counters per scope and minute); its count is over by at most its `overcount`.
    /// Under a flood of many clients, rejections that meet another worker's update of the
    /// summary go uncounted (a sample; rejections never wait for it). Header and key
    /// function values show as a digest unless [`trace_keys`](LimiterBuilder::trace_keys)
    /// is on. The [routes page](crate::routes_service) shows them for every scope. Empty
    /// when [`track_rejected_clients`](LimiterBuilder::track_rejected_clients) is off.
    ///
    /// ```
    /// use limiter::Limiter;
    ///
    /// let limiter = Limiter::builder().build();
    /// // Rejections by the attribute, the middleware and `limiter::check` are counted;
    /// // nobody was rejected yet.
    /// assert!(limiter.rejected_clients("login").is_empty());
    /// for client in limiter.rejected_clients("login") {
    ///     println!("{}: {} rejections", client.client, client.rejections);
    /// }
    /// ```
    pub fn rejected_clients(&self, scope: &str) -> Vec<RejectedClient> {
        let http = self.http();
        http.rejected
            .top(scope, self.now(), |key| key.shown(http.trace_keys))
    }

    /// The scopes [`rejected_clients`](Self::rejected_clients) has clients of, sorted.
    pub(crate) fn scopes_rejecting(&self) -> Vec<String> {
        self.http().rejected.scopes()
    }

    /// The engine's limiter, which this one derefs to.
    pub fn engine(&self) -> &limiter_core::Limiter {
        &self.engine
    }

    /// The HTTP settings.
    #[inline]
    pub(crate) fn http(&self) -> &HttpSettings {
        &self.http.settings
    }

    /// Whether any limiter besides [`Limiter::global`] was built in this process.
    pub(crate) fn any_built() -> bool {
        BUILT.load(Ordering::Relaxed)
    }

    /// Which limiter this is: clones are the same one.
    pub(crate) fn identity(&self) -> usize {
        Arc::as_ptr(&self.http) as usize
    }

    /// The name of the thread it was built on.
    pub(crate) fn built_on(&self) -> Option<&str> {
        self.http.built_on.as_deref()
    }
}

impl Deref for Limiter {
    type Target = limiter_core::Limiter;

    #[inline]
    fn deref(&self) -> &limiter_core::Limiter {
        &self.engine
    }
}

impl std::fmt::Debug for Limiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.engine.fmt(f)
    }
}
