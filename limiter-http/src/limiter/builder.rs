//! [`LimiterBuilder`]: every setting of a [`Limiter`], in one file — the engine's (store,
//! clock, fault policy, configured policies) and the HTTP ones (proxies, users, responses,
//! exemptions, header fields).

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::settings::{self, HttpSettings};
use crate::limiter::{Http, BUILT};
use crate::{ForwardingHeaders, Front, InvalidNetwork, Limiter, ProxyNet, Share, TrustedProxies};
use limiter_core::{Clock, OnStoreError, Policy, ScopeConflict, Store};

/// Settings for a [`Limiter`]: the engine's (store, clock, fault policy, configured
/// policies) and the HTTP ones (proxies, users, responses, exemptions, header fields).
pub struct LimiterBuilder<F: Front> {
    engine: limiter_core::LimiterBuilder,
    http: HttpSettings<F>,
}

impl<F: Front> std::fmt::Debug for LimiterBuilder<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.engine.fmt(f)
    }
}

impl<F: Front> Default for LimiterBuilder<F> {
    fn default() -> LimiterBuilder<F> {
        LimiterBuilder {
            engine: limiter_core::Limiter::builder(),
            http: HttpSettings::default(),
        }
    }
}

impl<F: Front> LimiterBuilder<F> {
    /// How long a networked store may take to answer, by default: 50 ms.
    pub const DEFAULT_STORE_TIMEOUT: Duration = limiter_core::LimiterBuilder::DEFAULT_STORE_TIMEOUT;

    /// How many rejections of a networked store an instance remembers, by default.
    pub const DEFAULT_REJECTION_CACHE: usize =
        limiter_core::LimiterBuilder::DEFAULT_REJECTION_CACHE;

    pub(crate) fn http(&mut self) -> &mut HttpSettings<F> {
        &mut self.http
    }

    fn engine(
        mut self,
        set: impl FnOnce(limiter_core::LimiterBuilder) -> limiter_core::LimiterBuilder,
    ) -> Self {
        self.engine = set(self.engine);
        self
    }

    /// Where counts live (default: a fresh [`MemoryStore`](limiter_core::MemoryStore) owned by
    /// this limiter and its clones). Pass `MemoryStore::global().clone()` to share the
    /// process-wide one. See [`limiter_core::LimiterBuilder::store`].
    pub fn store(self, store: impl Store) -> LimiterBuilder<F> {
        self.engine(|b| b.store(store))
    }

    /// Where time comes from (default: [`SystemClock`](limiter_core::SystemClock)). Tests pass a
    /// [`ManualClock`](limiter_core::ManualClock).
    pub fn clock(self, clock: impl Clock) -> LimiterBuilder<F> {
        self.engine(|b| b.clock(clock))
    }

    /// What limited handlers do when a networked store fails (default:
    /// [`OnStoreError::FallBackToMemory`]). See
    /// [`limiter_core::LimiterBuilder::on_store_error`].
    pub fn on_store_error(self, policy: OnStoreError) -> LimiterBuilder<F> {
        self.engine(|b| b.on_store_error(policy))
    }

    /// The longest a networked store may take to answer (default 50 ms), judging the
    /// store, not the load. See [`limiter_core::LimiterBuilder::store_timeout`].
    pub fn store_timeout(self, timeout: Duration) -> LimiterBuilder<F> {
        self.engine(|b| b.store_timeout(timeout))
    }

    /// How many rejections of a networked store this instance remembers and answers itself
    /// until they end (default 65,536; 0 turns it off). See
    /// [`limiter_core::LimiterBuilder::rejection_cache`].
    pub fn rejection_cache(self, capacity: usize) -> LimiterBuilder<F> {
        self.engine(|b| b.rejection_cache(capacity))
    }

    /// While falling back to memory, count each budget as one of `instances` shares. See
    /// [`limiter_core::LimiterBuilder::fallback_share`].
    ///
    /// ```
    /// use limiter::{Limiter, OnStoreError};
    /// let limiter = Limiter::builder()
    ///     .on_store_error(OnStoreError::FallBackToMemory)
    ///     .fallback_share(3) // three instances behind the balancer
    ///     .build();
    /// ```
    pub fn fallback_share(self, instances: u32) -> LimiterBuilder<F> {
        self.engine(|b| b.fallback_share(instances))
    }

    /// The policy of every handler and middleware of `scope`, whatever the code declares.
    /// See [`limiter_core::LimiterBuilder::policy`].
    /// A policy made by [`Policy::new`] keeps each declared limit's algorithm (a
    /// `fixed_window` route stays a fixed window with the new numbers); one made by
    /// [`Policy::for_algorithm`] replaces it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::{Limiter, Policy};
    /// let limiter = Limiter::builder()
    ///     .policy("login", Policy::new(10, Duration::from_secs(60))?)
    ///     .build();
    /// assert_eq!(limiter.policy("login").unwrap().max().get(), 10);
    /// # Ok::<(), limiter::PolicyError>(())
    /// ```
    pub fn policy(self, scope: &str, policy: Policy) -> LimiterBuilder<F> {
        self.engine(|b| b.policy(scope, policy))
    }

    /// Where the program's calendar quotas (`per = "month"`) begin their periods: at
    /// `minutes` east of UTC. See [`limiter_core::LimiterBuilder::utc_offset`].
    ///
    /// # Panics
    ///
    /// Beyond ±14 hours (840 minutes).
    pub fn utc_offset(self, minutes: i32) -> LimiterBuilder<F> {
        self.engine(|b| b.utc_offset(minutes))
    }

    /// The limiter.
    ///
    /// # Panics
    ///
    /// When two `#[rate_limit]` handlers of the program name one `scope` with different
    /// limits: a scope is one budget, so the program does not say which limit it means. The
    /// message names both handlers and where they are; [`try_build`](Self::try_build)
    /// returns the conflict instead. Two `#[concurrency_limit]`s that give one scope
    /// different limits are an `error` event naming both (each keeps a pool of its own).
    #[track_caller]
    pub fn build(self) -> Limiter<F> {
        match self.try_build() {
            Ok(limiter) => limiter,
            Err(conflict) => panic!("{conflict}"),
        }
    }

    /// The limiter, or the first conflict between the program's rate-limited handlers (see
    /// [`build`](Self::build)).
    // Called once at start-up: the size of its error costs nothing.
    #[allow(clippy::result_large_err)]
    pub fn try_build(self) -> Result<Limiter<F>, ScopeConflict> {
        let engine = self.engine.try_build()?;
        BUILT.store(true, Ordering::Relaxed);
        Ok(Limiter {
            engine,
            http: Arc::new(Http {
                settings: self.http,
                built_on: std::thread::current().name().map(str::to_owned),
            }),
        })
    }

    // ---- who the client is, and what responses look like ----------------------------

    /// The most requests waiting for their turn at once (`delay`), by default: 1,024.
    pub const DEFAULT_MOST_WAITING: usize = settings::DEFAULT_MOST_WAITING;

    /// How long an `async` key or policy function may take by default: 100 ms.
    pub const DEFAULT_RESOLVER_TIMEOUT: std::time::Duration = settings::DEFAULT_RESOLVER_TIMEOUT;

    /// The largest body a refused request has read and dropped, by default: 16 KiB.
    pub const DEFAULT_KEEP_ALIVE_BODY_LIMIT: usize = settings::DEFAULT_KEEP_ALIVE_BODY_LIMIT;

    /// How long a refused request's small body may take to arrive, by default: 200 ms.
    pub const DEFAULT_KEEP_ALIVE_BODY_TIME: std::time::Duration =
        settings::DEFAULT_KEEP_ALIVE_BODY_TIME;

    /// Refused requests whose `Content-Length` is at most `bytes` (default
    /// [`DEFAULT_KEEP_ALIVE_BODY_LIMIT`](Self::DEFAULT_KEEP_ALIVE_BODY_LIMIT)) have their
    /// body read and dropped — never parsed — if it all arrives within
    /// [`keep_alive_body_time`](Self::keep_alive_body_time), so that their connection is
    /// kept alive: a client told to wait would otherwise pay a new connection for its next
    /// request. Larger bodies, bodies of unknown length (chunked) and bodies that arrive
    /// slowly are left unread, and the connection closes right after the 429: a rejected
    /// request never holds a connection. `0` reads none.
    pub fn keep_alive_body_limit(mut self, bytes: usize) -> LimiterBuilder<F> {
        self.http().keep_alive_body_limit = bytes;
        self
    }

    /// How long a refused request's small body may take to arrive before the limiter stops
    /// reading it, answers, and closes the connection (default
    /// [`DEFAULT_KEEP_ALIVE_BODY_TIME`](Self::DEFAULT_KEEP_ALIVE_BODY_TIME)). A body sent a
    /// few bytes a second never holds the 429 longer than this.
    pub fn keep_alive_body_time(mut self, time: std::time::Duration) -> LimiterBuilder<F> {
        self.http().keep_alive_body_time = time;
        self
    }

    /// IPv6 clients are counted per network of this prefix length (default 56, capped at
    /// 128): a home connection usually owns a /56 or more, so a per-address key would be
    /// rotated at will.
    pub fn ipv6_prefix(mut self, bits: u8) -> LimiterBuilder<F> {
        self.http().clients.ipv6_prefix = bits.min(128);
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
    #[track_caller]
    pub fn trusted_proxies<I>(self, proxies: I) -> LimiterBuilder<F>
    where
        I: IntoIterator,
        I::Item: ProxyNet,
    {
        match self.try_trusted_proxies(proxies) {
            Ok(builder) => builder,
            Err(error) => panic!("invalid trusted proxy: {error}"),
        }
    }

    /// [`trusted_proxies`](Self::trusted_proxies) for lists read at run time: says which
    /// entry is wrong instead of panicking.
    ///
    /// ```
    /// use limiter::Limiter;
    /// let error = Limiter::builder().try_trusted_proxies(["10.0.0.0/8", "10.0.0.300"]).unwrap_err();
    /// assert!(error.to_string().contains("`10.0.0.300`"));
    /// ```
    pub fn try_trusted_proxies<I>(mut self, proxies: I) -> Result<LimiterBuilder<F>, InvalidNetwork>
    where
        I: IntoIterator,
        I::Item: ProxyNet,
    {
        self.http().clients.trusted_proxies = TrustedProxies::parse(proxies)?;
        Ok(self)
    }

    /// Which forwarding header the trusted proxies write, the one believed (default
    /// [`ForwardingHeaders::XForwardedFor`], what nginx, HAProxy and the cloud balancers
    /// write). The other is ignored: a client's own header passed through never makes a
    /// request an error, and one that names another client is reported once as a `warn`.
    pub fn forwarding_headers(mut self, headers: ForwardingHeaders) -> LimiterBuilder<F> {
        self.http().clients.forwarding_headers = headers;
        self
    }

    /// Who the user is, for `key = "user"`: the id of the signed-in user, or `None` for an
    /// anonymous request, which is then counted by address (in a namespace of its own, so a
    /// user id never shares an address's budget).
    pub fn user_key(
        mut self,
        resolve: impl Fn(&F::Request) -> Option<String> + Send + Sync + 'static,
    ) -> LimiterBuilder<F> {
        self.http().user_key = Some(Arc::new(resolve));
        self
    }

    /// The `detail` of the default 429 problem body.
    pub fn rejection_message(mut self, message: impl Into<Cow<'static, str>>) -> LimiterBuilder<F> {
        self.http().set_rejection_message(message.into());
        self
    }

    /// Builds the whole rejection response instead of the default problem body.
    /// `Retry-After`, `Cache-Control: no-store` and the RateLimit fields are added unless
    /// the response sets them itself.
    pub fn rejection_response(
        mut self,
        build: impl Fn(&F::Rejection<'_>) -> F::Response + Send + Sync + 'static,
    ) -> LimiterBuilder<F> {
        self.http().rejection_response = Some(Arc::new(build));
        self
    }

    /// Builds the response for a request the limiter could not decide (a failure: the
    /// store is unavailable and the limiter fails closed, no client address, contradictory
    /// forwarding headers) instead of the default problem body. `Cache-Control: no-store`,
    /// `Retry-After` (for a 503) and `RateLimit-Policy` are added unless the response sets
    /// them itself.
    ///
    /// ```
    /// use actix_web::HttpResponse;
    /// use limiter::{Failure, Limiter};
    /// let limiter = Limiter::builder()
    ///     .failure_response(|failure: &Failure| {
    ///         HttpResponse::build(failure.status()).body(failure.title())
    ///     })
    ///     .build();
    /// ```
    pub fn failure_response(
        mut self,
        build: impl Fn(&F::Failure) -> F::Response + Send + Sync + 'static,
    ) -> LimiterBuilder<F> {
        self.http().failure_response = Some(Arc::new(build));
        self
    }

    /// Clients never counted: addresses or CIDRs (`"127.0.0.1/32"`, `"10.0.0.0/8"`), matched
    /// against the client address as keys resolve it (a trusted proxy's client, not the
    /// proxy). An exempt request is not counted and carries no RateLimit fields.
    ///
    /// # Panics
    ///
    /// On an entry that is not an address or a CIDR, naming it;
    /// [`try_exempt`](Self::try_exempt) returns the error instead.
    #[track_caller]
    pub fn exempt<I>(self, clients: I) -> LimiterBuilder<F>
    where
        I: IntoIterator,
        I::Item: ProxyNet,
    {
        match self.try_exempt(clients) {
            Ok(builder) => builder,
            Err(error) => panic!("invalid exempt client: {error}"),
        }
    }

    /// [`exempt`](Self::exempt) for lists read at run time: says which entry is wrong.
    ///
    /// ```
    /// use limiter::Limiter;
    /// assert!(Limiter::builder().try_exempt(["10.0.0.0/8", "10.0.0/8"]).is_err());
    /// ```
    pub fn try_exempt<I>(mut self, clients: I) -> Result<LimiterBuilder<F>, InvalidNetwork>
    where
        I: IntoIterator,
        I::Item: ProxyNet,
    {
        self.http().exempt = TrustedProxies::parse(clients)?;
        Ok(self)
    }

    /// Requests for which `exempt` says so are not counted, and carry no RateLimit fields:
    /// health checks, an internal token, a paying plan.
    ///
    /// ```
    /// use limiter::Limiter;
    /// let limiter = Limiter::builder()
    ///     .exempt_when(|req| req.path() == "/health")
    ///     .build();
    /// ```
    pub fn exempt_when(
        mut self,
        exempt: impl Fn(&F::Request) -> bool + Send + Sync + 'static,
    ) -> LimiterBuilder<F> {
        self.http().exempt_when = Some(Arc::new(exempt));
        self
    }

    /// Decide and count everything, enforce nothing: a would-be rejection passes with a
    /// `warn` event naming the limit, its key kind and the Retry-After it would have had,
    /// and its response carries the RateLimit fields as if enforced. For rolling a new
    /// limit out safely (default: off; `dry_run = true` does it for one limit).
    pub fn dry_run(mut self, on: bool) -> LimiterBuilder<F> {
        self.http().dry_run = on;
        self
    }

    /// Enforces the limits of `scope` on `share` of their clients, over what the attribute
    /// declares; see [`Limiter::set_enforcement`], which
    /// changes it while serving.
    pub fn enforcement(mut self, scope: &str, share: Share) -> LimiterBuilder<F> {
        self.http().enforcement.set(scope, share);
        self
    }

    /// Whether the `debug` event of each rejection carries the client's key (an address, a
    /// user id, an API key: personal data, or a secret, in many services). Default: no —
    /// the event names the scope, the kind of key and the Retry-After.
    pub fn trace_keys(mut self, on: bool) -> LimiterBuilder<F> {
        self.http().trace_keys = on;
        self
    }

    /// Whether a 429's problem body has the IETF draft's type (default: no, `about:blank`):
    /// `"type": "https://iana.org/assignments/http-problem-types#quota-exceeded"`, its
    /// title, and `"violated-policies": ["login"]` naming the limit that refused (as the
    /// RateLimit fields name it), beside the same `detail` and `retry_after`. Opt-in while
    /// the draft is a draft: clients that match on `type` see a change.
    ///
    /// ```
    /// let limiter = limiter::Limiter::builder().quota_exceeded_problems(true).build();
    /// ```
    pub fn quota_exceeded_problems(mut self, on: bool) -> LimiterBuilder<F> {
        self.http().quota_exceeded = on;
        self
    }

    /// The most requests waiting for their turn at once (`delay = "..."`, over every
    /// limit), default [`DEFAULT_MOST_WAITING`](Self::DEFAULT_MOST_WAITING): one more
    /// is refused at once with its 429, its place given back — unless its limit holds fewer
    /// than its share of the places (the bound over the limits waiting): one limit's flood
    /// never takes another's places, and the line holds at most twice the bound.
    ///
    /// ```
    /// use limiter::Limiter;
    /// let limiter = Limiter::builder().most_waiting(10_000).build();
    /// ```
    pub fn most_waiting(mut self, most: usize) -> LimiterBuilder<F> {
        self.http().most_waiting = most;
        self
    }

    /// How long a request's `async` key and policy functions (`key = path`, `policy = path`
    /// naming an `async fn`) may take between them, default
    /// [`DEFAULT_RESOLVER_TIMEOUT`](Self::DEFAULT_RESOLVER_TIMEOUT). One still running then
    /// is given up, with a `warn` event (at most one a second), and counts as `None`: the
    /// client's address for a key, the declared policy for a policy — a slow database holds
    /// a request at most this long, and never refuses it by itself.
    ///
    /// ```
    /// use limiter::Limiter;
    /// use std::time::Duration;
    /// let limiter = Limiter::builder()
    ///     .resolver_timeout(Duration::from_millis(20))
    ///     .build();
    /// ```
    pub fn resolver_timeout(mut self, timeout: std::time::Duration) -> LimiterBuilder<F> {
        self.http().resolver_timeout = timeout;
        self
    }

    /// Whether CORS preflights (`OPTIONS` with `Access-Control-Request-Method`) that a CORS
    /// layer answers stay counted (default: no — a browser sends one before the request it
    /// asks about, which is). A `RateLimit` middleware counts a preflight
    /// as any request and gives it back when the answer is the CORS layer's own (it carries
    /// `Access-Control-Allow-Methods`); a preflight that reaches a limited handler runs it,
    /// and is counted whatever this says.
    pub fn count_preflights(mut self, on: bool) -> LimiterBuilder<F> {
        self.http().count_preflights = on;
        self
    }

    /// Whether each scope's most rejected clients are kept, for
    /// [`Limiter::rejected_clients`] and the routes page
    /// (default: yes; a few hundred nanoseconds per rejection, and at most 13 KiB per scope).
    pub fn track_rejected_clients(mut self, on: bool) -> LimiterBuilder<F> {
        self.http().track_rejected = on;
        self
    }

    /// Whether responses carry `RateLimit-Policy` and `RateLimit` (default: yes).
    pub fn ietf_headers(mut self, on: bool) -> LimiterBuilder<F> {
        self.http().headers.ietf = on;
        self
    }

    /// Whether responses carry `X-RateLimit-Limit`, `X-RateLimit-Remaining` and
    /// `X-RateLimit-Reset` (default: no), for the most restrictive limit of the handler.
    pub fn legacy_headers(mut self, on: bool) -> LimiterBuilder<F> {
        self.http().headers.legacy = on;
        self
    }
}
