//! The entry point: a store, a clock and the settings of the responses, asked "may this key
//! pass this limit now?".

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse};

use crate::clock::{Clock, SystemClock};
use crate::failover::{OnStoreError, StoreHealth};
use crate::mistakes;
use crate::proxy::{ForwardingHeaders, InvalidProxy, ProxyNet, TrustedProxies};
use crate::registry::{self, ScopeConflict};
use crate::response::{Failure, HeaderOptions, Rejection};
use crate::store::{Check, Limit, MemoryStore, Store, StoreError};
use crate::Decision;

type UserKey = dyn Fn(&HttpRequest) -> Option<String> + Send + Sync;
type RejectionResponse = dyn Fn(&Rejection<'_>) -> HttpResponse + Send + Sync;
type FailureResponse = dyn Fn(&Failure) -> HttpResponse + Send + Sync;

/// Decides requests: reads its clock, asks its store, and says how responses look.
///
/// Build it once, outside `HttpServer::new`'s closure, and clone it into each worker's
/// `App` with `.app_data(limiter.clone())`: clones share the store and the clock. A limiter
/// built inside the closure would exist once per worker, and multiply the limit.
/// Handlers that find no `Limiter` in their app data use [`Limiter::global`].
///
/// ```
/// use std::time::Duration;
/// use limiter_core::{Limit, Limiter, ManualClock, Policy};
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
    inner: Arc<Settings>,
}

struct Settings {
    store: Backend,
    clock: Arc<dyn Clock>,
    options: Options,
    health: StoreHealth,
    /// Counts while a networked store is away, under [`OnStoreError::FallBackToMemory`].
    fallback: MemoryStore,
}

/// What the builder sets besides the store and the clock.
struct Options {
    ipv6_prefix: u8,
    trusted_proxies: TrustedProxies,
    forwarding_headers: ForwardingHeaders,
    user_key: Option<Arc<UserKey>>,
    rejection_message: Cow<'static, str>,
    rejection_response: Option<Arc<RejectionResponse>>,
    failure_response: Option<Arc<FailureResponse>>,
    headers: HeaderOptions,
    on_store_error: OnStoreError,
    store_timeout: Duration,
    keep_alive_body_limit: usize,
}

/// The in-memory store is called directly, without a virtual call or a future: it is the
/// hot path of most services.
#[derive(Clone)]
enum Backend {
    Memory(MemoryStore),
    Other(Arc<dyn Store>),
}

impl Backend {
    fn of<S: Store>(store: S) -> Backend {
        match (&store as &dyn Any).downcast_ref::<MemoryStore>() {
            Some(memory) => Backend::Memory(memory.clone()),
            None => Backend::Other(Arc::new(store)),
        }
    }
}

/// The default `detail` of a 429.
const DEFAULT_MESSAGE: &str =
    "Too many requests: wait as long as Retry-After says, then try again.";

impl Limiter {
    /// A builder; with no settings it gives a limiter with a fresh in-memory store and the
    /// system clock.
    pub fn builder() -> LimiterBuilder {
        LimiterBuilder::default()
    }

    /// The process-wide default: [`MemoryStore::global`], [`SystemClock`], default settings.
    ///
    /// Conflicting scopes (see [`LimiterBuilder::build`]) cannot stop a program that never
    /// builds a limiter: they are logged as an `error` event when this one is first used,
    /// and each conflicting limit keeps a budget of its own.
    pub fn global() -> &'static Limiter {
        static GLOBAL: OnceLock<Limiter> = OnceLock::new();
        GLOBAL.get_or_init(|| {
            for conflict in registry::conflicts() {
                tracing::error!(%conflict, "rate limit scopes in conflict");
            }
            Limiter::builder()
                .store(MemoryStore::global().clone())
                .build_unchecked(true)
        })
    }

    /// Counts a request of `key` against `limit` now, and decides it.
    ///
    /// A networked store gets at most the limiter's timeout; when it fails, the store error
    /// policy decides: under [`OnStoreError::FallBackToMemory`] the answer comes from this
    /// instance's memory, under the others the error is returned for the handler to apply.
    /// That path needs a Tokio runtime (actix provides one).
    #[inline(always)]
    pub fn check<'a>(&'a self, limit: &'a Limit, key: &'a [u8]) -> Check<'a> {
        let now = self.inner.clock.now();
        match &self.inner.store {
            Backend::Memory(memory) => Check::ready(Ok(memory.check_at(limit, key, now))),
            Backend::Other(store) => Check::pending(
                self.check_remote(store.check(limit, key, now), move |fallback| {
                    fallback.check_at(limit, key, now)
                }),
            ),
        }
    }

    /// Counts one request against several limits (each with its key) now, all or nothing:
    /// see [`Store::check_all`]. The store error policy applies as for
    /// [`check`](Self::check).
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter_core::{Limit, Limiter, Policy};
    /// let limiter = Limiter::builder().build();
    /// let minute = Limit::new("comment", Policy::new(5, Duration::from_secs(60))?);
    /// let day = Limit::new("comment-1d", Policy::new(1, Duration::from_secs(86_400))?);
    /// let both = [(&minute, &b"client"[..]), (&day, &b"client"[..])];
    /// let first = limiter.check_all(&both).now_or_never().unwrap()?;
    /// assert!(first.iter().all(|d| d.allowed()));
    /// let second = limiter.check_all(&both).now_or_never().unwrap()?;
    /// // The daily limit rejects it, so the minute limit did not count it either.
    /// assert_eq!((second[0].remaining(), second[1].allowed()), (4, false));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_all<'a>(
        &'a self,
        requests: &'a [(&'a Limit, &'a [u8])],
    ) -> Check<'a, Vec<Decision>> {
        let now = self.inner.clock.now();
        match &self.inner.store {
            Backend::Memory(memory) => Check::ready(Ok(memory.check_all_at(requests, now))),
            Backend::Other(store) => Check::pending(
                self.check_remote(store.check_all(requests, now), move |fallback| {
                    fallback.check_all_at(requests, now)
                }),
            ),
        }
    }

    /// A networked store's check, within the timeout and under the store error policy.
    async fn check_remote<'a, T: Unpin>(
        &'a self,
        attempt: Check<'a, T>,
        fallback: impl FnOnce(&MemoryStore) -> T,
    ) -> Result<T, StoreError> {
        let settings = &*self.inner;
        let error = if settings.health.should_try() {
            let error = match tokio::time::timeout(settings.options.store_timeout, attempt).await {
                Ok(Ok(answer)) => {
                    settings.health.answered();
                    return Ok(answer);
                }
                Ok(Err(error)) => error,
                Err(_) => StoreError::msg(format!(
                    "the rate limit store did not answer within {:?}",
                    settings.options.store_timeout
                )),
            };
            settings
                .health
                .failed(&error, settings.options.on_store_error);
            error
        } else {
            StoreError::msg("the rate limit store is unavailable; retrying it shortly")
        };
        match settings.options.on_store_error {
            OnStoreError::FallBackToMemory => Ok(fallback(&settings.fallback)),
            OnStoreError::FailOpen | OnStoreError::FailClosed => Err(error),
        }
    }

    /// What limited handlers do when the store fails.
    pub fn on_store_error(&self) -> OnStoreError {
        self.inner.options.on_store_error
    }

    /// The limiter's clock.
    pub fn clock(&self) -> &dyn Clock {
        &*self.inner.clock
    }

    /// The limiter's store.
    pub fn store(&self) -> &dyn Store {
        match &self.inner.store {
            Backend::Memory(memory) => memory,
            Backend::Other(store) => &**store,
        }
    }

    /// The IPv6 prefix length clients are grouped by.
    pub fn ipv6_prefix(&self) -> u8 {
        self.inner.options.ipv6_prefix
    }

    /// The proxies whose forwarding headers are believed.
    pub fn trusted_proxies(&self) -> &TrustedProxies {
        &self.inner.options.trusted_proxies
    }

    pub(crate) fn forwarding_headers(&self) -> ForwardingHeaders {
        self.inner.options.forwarding_headers
    }

    pub(crate) fn user_key(&self) -> Option<&UserKey> {
        self.inner.options.user_key.as_deref()
    }

    pub(crate) fn rejection_message(&self) -> &str {
        &self.inner.options.rejection_message
    }

    pub(crate) fn rejection_response(&self) -> Option<&RejectionResponse> {
        self.inner.options.rejection_response.as_deref()
    }

    pub(crate) fn keep_alive_body_limit(&self) -> usize {
        self.inner.options.keep_alive_body_limit
    }

    pub(crate) fn failure_response(&self) -> Option<&FailureResponse> {
        self.inner.options.failure_response.as_deref()
    }

    pub(crate) fn header_options(&self) -> HeaderOptions {
        self.inner.options.headers
    }
}

impl fmt::Debug for Limiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Limiter")
            .field("ipv6_prefix", &self.inner.options.ipv6_prefix)
            .field("user_key", &self.inner.options.user_key.is_some())
            .field("headers", &self.inner.options.headers)
            .finish_non_exhaustive()
    }
}

/// Settings for a [`Limiter`].
pub struct LimiterBuilder {
    store: Option<Backend>,
    clock: Option<Arc<dyn Clock>>,
    options: Options,
}

impl fmt::Debug for LimiterBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LimiterBuilder")
            .field("ipv6_prefix", &self.options.ipv6_prefix)
            .field("trusted_proxies", &self.options.trusted_proxies)
            .field("forwarding_headers", &self.options.forwarding_headers)
            .field("on_store_error", &self.options.on_store_error)
            .field("store_timeout", &self.options.store_timeout)
            .finish_non_exhaustive()
    }
}

impl Default for LimiterBuilder {
    fn default() -> LimiterBuilder {
        LimiterBuilder {
            store: None,
            clock: None,
            options: Options {
                ipv6_prefix: 56,
                trusted_proxies: TrustedProxies::none(),
                forwarding_headers: ForwardingHeaders::Both,
                user_key: None,
                rejection_message: Cow::Borrowed(DEFAULT_MESSAGE),
                rejection_response: None,
                failure_response: None,
                headers: HeaderOptions {
                    ietf: true,
                    legacy: false,
                },
                on_store_error: OnStoreError::FallBackToMemory,
                store_timeout: LimiterBuilder::DEFAULT_STORE_TIMEOUT,
                keep_alive_body_limit: LimiterBuilder::DEFAULT_KEEP_ALIVE_BODY_LIMIT,
            },
        }
    }
}

impl LimiterBuilder {
    /// How long a networked store may take per check, by default: 50 ms.
    pub const DEFAULT_STORE_TIMEOUT: Duration = Duration::from_millis(50);

    /// The largest body a refused request has read and dropped, by default: 16 KiB.
    pub const DEFAULT_KEEP_ALIVE_BODY_LIMIT: usize = 16 * 1024;

    /// Refused requests whose `Content-Length` is at most `bytes` (default
    /// [`DEFAULT_KEEP_ALIVE_BODY_LIMIT`](Self::DEFAULT_KEEP_ALIVE_BODY_LIMIT)) have their
    /// body read and dropped — never parsed — so that their connection is kept alive: actix
    /// closes a connection whose request body was left unread, and a client told to wait
    /// would pay a new connection for its next request. Larger bodies, and bodies of unknown
    /// length, are left unread and their connection closes. `0` reads none.
    pub fn keep_alive_body_limit(mut self, bytes: usize) -> LimiterBuilder {
        self.options.keep_alive_body_limit = bytes;
        self
    }

    /// What limited handlers do when a networked store fails or exceeds the timeout
    /// (default: [`OnStoreError::FallBackToMemory`]). Transitions (lost, back) are logged
    /// once each as `tracing` events; while the store is away, one request per
    /// [`RETRY_INTERVAL`](crate::failover::RETRY_INTERVAL) tries it, the others get the
    /// policy's answer at once.
    pub fn on_store_error(mut self, policy: OnStoreError) -> LimiterBuilder {
        self.options.on_store_error = policy;
        self
    }

    /// The longest a networked store may take per check (default 50 ms): a stalled store
    /// never stalls requests longer than this.
    pub fn store_timeout(mut self, timeout: Duration) -> LimiterBuilder {
        self.options.store_timeout = timeout;
        self
    }

    /// Where counts live (default: a fresh [`MemoryStore`] owned by this limiter and its
    /// clones). Pass `MemoryStore::global().clone()` to share the process-wide one.
    pub fn store(mut self, store: impl Store) -> LimiterBuilder {
        self.store = Some(Backend::of(store));
        self
    }

    /// Where time comes from (default: [`SystemClock`]). Tests pass a
    /// [`ManualClock`](crate::ManualClock).
    pub fn clock(mut self, clock: impl Clock) -> LimiterBuilder {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// IPv6 clients are counted per network of this prefix length (default 56, capped at
    /// 128): a home connection usually owns a /56 or more, so a per-address key would be
    /// rotated at will.
    pub fn ipv6_prefix(mut self, bits: u8) -> LimiterBuilder {
        self.options.ipv6_prefix = bits.min(128);
        self
    }

    /// The proxies in front of this service, whose `Forwarded` and `X-Forwarded-For` headers
    /// are believed: addresses or CIDRs (`"10.0.0.0/8"`, `"fd00::/8"`, `"192.0.2.7"`) or parsed
    /// [`IpNet`](ipnet::IpNet)s. The client is then the right-most address in those headers
    /// that is not itself a trusted proxy. Default: none — no header is believed.
    ///
    /// # Panics
    ///
    /// On an entry that is not an address or a CIDR, naming it: a list written in the code
    /// is a programmer error, found at start-up (as `HeaderValue::from_static` does). Lists
    /// read from configuration go through [`try_trusted_proxies`](Self::try_trusted_proxies).
    pub fn trusted_proxies<I>(self, proxies: I) -> LimiterBuilder
    where
        I: IntoIterator,
        I::Item: ProxyNet,
    {
        match self.try_trusted_proxies(proxies) {
            Ok(builder) => builder,
            Err(error) => panic!("{error}"),
        }
    }

    /// [`trusted_proxies`](Self::trusted_proxies) for lists read at run time: says which
    /// entry is wrong instead of panicking.
    ///
    /// ```
    /// use limiter_core::Limiter;
    /// let error = Limiter::builder().try_trusted_proxies(["10.0.0.0/8", "10.0.0.300"]).unwrap_err();
    /// assert!(error.to_string().contains("`10.0.0.300`"));
    /// ```
    pub fn try_trusted_proxies<I>(mut self, proxies: I) -> Result<LimiterBuilder, InvalidProxy>
    where
        I: IntoIterator,
        I::Item: ProxyNet,
    {
        self.options.trusted_proxies = TrustedProxies::parse(proxies)?;
        Ok(self)
    }

    /// Which forwarding headers the trusted proxies write (default: both, which must then
    /// agree). Name the one your proxy writes to ignore the other.
    pub fn forwarding_headers(mut self, headers: ForwardingHeaders) -> LimiterBuilder {
        self.options.forwarding_headers = headers;
        self
    }

    /// Who the user is, for `key = "user"`: the id of the signed-in user, or `None` for an
    /// anonymous request, which is then counted by address (in a namespace of its own, so a
    /// user id never shares an address's budget).
    pub fn user_key(
        mut self,
        resolve: impl Fn(&HttpRequest) -> Option<String> + Send + Sync + 'static,
    ) -> LimiterBuilder {
        self.options.user_key = Some(Arc::new(resolve));
        self
    }

    /// The `detail` of the default 429 problem body.
    pub fn rejection_message(mut self, message: impl Into<Cow<'static, str>>) -> LimiterBuilder {
        self.options.rejection_message = message.into();
        self
    }

    /// Builds the whole rejection response instead of the default problem body.
    /// `Retry-After`, `Cache-Control: no-store` and the RateLimit fields are added unless
    /// the response sets them itself.
    pub fn rejection_response(
        mut self,
        build: impl Fn(&Rejection<'_>) -> HttpResponse + Send + Sync + 'static,
    ) -> LimiterBuilder {
        self.options.rejection_response = Some(Arc::new(build));
        self
    }

    /// Builds the response for a request the limiter could not decide (a [`Failure`]: the
    /// store is unavailable and the limiter fails closed, no client address, contradictory
    /// forwarding headers) instead of the default problem body. `Cache-Control: no-store`,
    /// `Retry-After` (for a 503) and `RateLimit-Policy` are added unless the response sets
    /// them itself.
    ///
    /// ```
    /// use actix_web::HttpResponse;
    /// use limiter_core::{Failure, Limiter};
    /// let limiter = Limiter::builder()
    ///     .failure_response(|failure: &Failure| {
    ///         HttpResponse::build(failure.status()).body(failure.title())
    ///     })
    ///     .build();
    /// ```
    pub fn failure_response(
        mut self,
        build: impl Fn(&Failure) -> HttpResponse + Send + Sync + 'static,
    ) -> LimiterBuilder {
        self.options.failure_response = Some(Arc::new(build));
        self
    }

    /// Whether responses carry `RateLimit-Policy` and `RateLimit` (default: yes).
    pub fn ietf_headers(mut self, on: bool) -> LimiterBuilder {
        self.options.headers.ietf = on;
        self
    }

    /// Whether responses carry `X-RateLimit-Limit`, `X-RateLimit-Remaining` and
    /// `X-RateLimit-Reset` (default: no), for the most restrictive limit of the handler.
    pub fn legacy_headers(mut self, on: bool) -> LimiterBuilder {
        self.options.headers.legacy = on;
        self
    }

    /// The limiter.
    ///
    /// # Panics
    ///
    /// When two `#[rate_limit]` handlers of the program name one `scope` with different
    /// limits: a scope is one budget, so the program does not say which limit it means. The
    /// message names both handlers and where they are; [`try_build`](Self::try_build)
    /// returns the conflict instead.
    pub fn build(self) -> Limiter {
        match self.try_build() {
            Ok(limiter) => limiter,
            Err(conflict) => panic!("{conflict}"),
        }
    }

    /// The limiter, or the first conflict between the program's rate-limited handlers (see
    /// [`build`](Self::build)).
    // Called once at start-up: the size of its error costs nothing.
    #[allow(clippy::result_large_err)]
    pub fn try_build(self) -> Result<Limiter, ScopeConflict> {
        match registry::conflicts().into_iter().next() {
            Some(conflict) => Err(conflict),
            None => Ok(self.build_unchecked(false)),
        }
    }

    fn build_unchecked(self, global: bool) -> Limiter {
        if !global {
            mistakes::limiter_built();
        }
        let store = self
            .store
            .unwrap_or_else(|| Backend::Memory(MemoryStore::new()));
        if let (false, Backend::Memory(memory)) = (global, &store) {
            mistakes::memory_limiter_built(memory.identity());
        }
        Limiter {
            inner: Arc::new(Settings {
                store,
                clock: self.clock.unwrap_or_else(|| Arc::new(SystemClock)),
                options: self.options,
                health: StoreHealth::new(),
                fallback: MemoryStore::new(),
            }),
        }
    }
}
