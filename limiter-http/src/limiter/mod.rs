//! The [`Limiter`] a service uses, in one place: the engine's limiter (store, clock, fault policy, the
//! limits configuration sets), with who the client is and what responses look like, for a
//! front end ([`Front`]). Its public methods are all here (the engine's in `engine.rs`); its
//! builder is in `builder.rs`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use settings::HttpSettings;

mod builder;
mod engine;
mod front;
mod mistakes;
pub(crate) mod settings;
use crate::{Client, RejectedClient, Share, Subject, TrustedProxies};
pub use builder::LimiterBuilder;
pub use front::{Front, LocalFront, SendFront};
use limiter_core::Check;

/// Decides requests: reads its clock, asks its store, applies its policy when the store
/// fails — and knows who a request's client is, and how a rejection is answered. Generic
/// over the front end `F` only where settings are closures over its requests and responses:
/// a service names it through its front end's crate (`limiter::Limiter`, the actix one).
///
/// Build it once, outside `HttpServer::new`'s closure, and clone it into each worker's
/// `App` with `.app_data(limiter.clone())`: clones share the store and the clock. A limiter
/// built inside the closure would exist once per worker, and multiply the limit. Handlers
/// that find no `Limiter` in their app data use [`Limiter::global`].
///
/// It has the engine's methods ([`check`](Self::check), [`check_all`](Self::check_all),
/// [`refund`](Self::refund), [`set_policy`](Self::set_policy) and the others, in
/// `engine.rs`), and [`engine`](Self::engine) hands out the engine's limiter itself.
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
pub struct Limiter<F: Front> {
    pub(crate) engine: limiter_core::Limiter,
    pub(crate) http: Arc<Http<F>>,
}

impl<F: Front> Clone for Limiter<F> {
    fn clone(&self) -> Limiter<F> {
        Limiter {
            engine: self.engine.clone(),
            http: Arc::clone(&self.http),
        }
    }
}

/// The HTTP settings, and where the limiter was built.
pub struct Http<F: Front> {
    pub(crate) settings: HttpSettings<F>,
    /// The name of the thread that built it, to judge whether that was a worker.
    pub(crate) built_on: Option<String>,
}

/// Whether a limiter other than the global one was built in this process.
pub(crate) static BUILT: AtomicBool = AtomicBool::new(false);

impl<F: Front> Limiter<F> {
    /// A builder; with no settings it gives a limiter with a fresh in-memory store and the
    /// system clock.
    pub fn builder() -> LimiterBuilder<F> {
        LimiterBuilder::default()
    }

    /// The process-wide default: [`MemoryStore::global`](limiter_core::MemoryStore::global),
    /// [`SystemClock`](limiter_core::SystemClock), default settings.
    ///
    /// Conflicting scopes (see [`LimiterBuilder::build`]) cannot stop a program that never
    /// builds a limiter: they are logged as an `error` event when this one is first used,
    /// and each conflicting limit keeps a budget of its own.
    pub fn global() -> &'static Limiter<F> {
        F::global()
    }

    /// What [`global`](Self::global) is: the front end keeps it in a static of its own.
    #[doc(hidden)]
    pub fn new_global() -> Limiter<F> {
        Limiter {
            engine: limiter_core::Limiter::global().clone(),
            http: Arc::new(Http {
                settings: HttpSettings::default(),
                built_on: None,
            }),
        }
    }

    /// Makes `limiter` the process-global one a front end keeps in `global` (what
    /// [`global`](Self::global) returns, and what every request the service hands no
    /// limiter is counted by), unless that one is made already — a request was counted by
    /// it, or one was installed: then `limiter` comes back. Not a public API: a front end's
    /// `install` calls it with its static.
    #[doc(hidden)]
    pub fn install_in(
        global: &'static OnceLock<Limiter<F>>,
        limiter: Limiter<F>,
    ) -> Result<(), Limiter<F>> {
        global.set(limiter)?;
        mistakes::global_installed();
        Ok(())
    }

    /// The limiter a request is counted by: the one the service handed to its framework
    /// (on actix, the `Limiter` in its app data, given as `.app_data(limiter)` or, as
    /// actix habits go, `.app_data(web::Data::new(limiter))`), else [`Limiter::global`].
    ///
    /// A program that built a `Limiter` and handed it to no `App` gets one `warn` event at
    /// the first request that falls back to the global one.
    #[inline]
    pub fn of(req: &F::Request) -> &Limiter<F> {
        // A program that built no limiter can have handed its framework none but clones of
        // the global one: the lookups (three on actix, about 60 instructions) are skipped.
        if !Limiter::<F>::any_built() {
            return Limiter::global();
        }
        match F::limiter_of(req) {
            Some(limiter) => {
                mistakes::serving(limiter);
                limiter
            }
            None => {
                mistakes::counted_by_the_global_limiter::<F>();
                Limiter::global()
            }
        }
    }

    /// Who `req` is counted as when its key is its address: the peer, or the client a
    /// trusted proxy vouched for (an IPv6 address is then grouped by
    /// [`ipv6_prefix`](Self::ipv6_prefix); see [`client_ip`](crate::client_ip)). For logs,
    /// and for checking a proxy setup. `Err` says why there is none.
    pub fn client(&self, req: &F::Request) -> Result<Client, F::Failure> {
        crate::client(&F::head(req), &self.http().clients)
            .map_err(|error| crate::Failure::of(&error).into())
    }

    /// The IPv6 prefix length clients are grouped by.
    pub fn ipv6_prefix(&self) -> u8 {
        self.http().clients.ipv6_prefix
    }

    /// The proxies whose forwarding headers are believed.
    pub fn trusted_proxies(&self) -> &TrustedProxies {
        &self.http().clients.trusted_proxies
    }

    /// Enforces the limits of `scope` on `share` of their clients from the next request on,
    /// on every worker, over what the attribute declares (`enforce = "10%"`): for rolling a
    /// limit out gradually, raised while serving. Each client is consistently in or out of
    /// the share (see [`Share`]); the others' would-be rejections pass as in a dry run
    /// — counted as `dry_run`, with a `warn` event and an `X-RateLimit-Dry-Run` field naming
    /// the limit (beside the IETF fields, when they are on). [`LimiterBuilder::dry_run`]
    /// still enforces nothing. Limits checked inside handlers (`limiter::check`) are
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
    /// is on. The routes page (`limiter::routes_service`) shows them for every scope. Empty
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

    /// Forgets `subject`'s state under every limit of `scope` (as declared, as overridden,
    /// and under each policy chosen per request): its next request starts afresh. In
    /// memory and in Redis alike; `Err` only when the store fails.
    ///
    /// ```
    /// use std::net::IpAddr;
    /// use limiter::{Limiter, Subject};
    /// let limiter = Limiter::builder().build();
    /// // A support tool unblocks a customer who mistyped their password too often
    /// // (`.await` it in a handler; the in-memory store answers at once).
    /// let address: IpAddr = "203.0.113.7".parse().unwrap();
    /// limiter.reset("login", Subject::Address(address)).now_or_never().unwrap()?;
    /// limiter.reset("login-username", Subject::Checked("ann")).now_or_never().unwrap()?;
    /// # Ok::<(), limiter::StoreError>(())
    /// ```
    pub fn reset<'a>(&'a self, scope: &'a str, subject: Subject<'_>) -> Check<'a, ()> {
        let key = subject.key(self.ipv6_prefix());
        Check::pending(async move { self.engine().reset(scope, key.as_bytes()).await })
    }

    /// The key a store counts `subject` under, with this limiter's IPv6 grouping: for tools
    /// that look a client up in a store (`RedisStore::status`, feature `redis`).
    ///
    /// ```
    /// use limiter::{Limiter, Subject};
    /// let limiter = Limiter::builder().build();
    /// assert_eq!(limiter.store_key(Subject::User("ann")), b"uann");
    /// ```
    pub fn store_key(&self, subject: Subject<'_>) -> Vec<u8> {
        subject.key(self.ipv6_prefix()).as_bytes().to_vec()
    }

    /// The scopes [`rejected_clients`](Self::rejected_clients) has clients of, sorted.
    #[doc(hidden)]
    pub fn scopes_rejecting(&self) -> Vec<String> {
        self.http().rejected.scopes()
    }

    /// The engine's limiter: the same store, clock and fault policy, for code written
    /// against `limiter_core`.
    pub fn engine(&self) -> &limiter_core::Limiter {
        &self.engine
    }

    /// The HTTP settings.
    #[inline]
    #[doc(hidden)]
    pub fn http(&self) -> &HttpSettings<F> {
        &self.http.settings
    }

    /// Whether any limiter besides [`Limiter::global`] was built in this process.
    #[doc(hidden)]
    pub fn any_built() -> bool {
        BUILT.load(Ordering::Relaxed)
    }

    /// Which limiter this is: clones are the same one.
    #[doc(hidden)]
    pub fn identity(&self) -> usize {
        Arc::as_ptr(&self.http) as usize
    }

    /// Its settings, shared by its clones: what a kept response is compared by.
    #[doc(hidden)]
    pub fn shared(&self) -> &Arc<Http<F>> {
        &self.http
    }

    /// The name of the thread it was built on.
    #[doc(hidden)]
    pub fn built_on(&self) -> Option<&str> {
        self.http.built_on.as_deref()
    }
}

impl<F: Front> std::fmt::Debug for Limiter<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.engine.fmt(f)
    }
}
