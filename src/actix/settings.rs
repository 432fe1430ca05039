//! What the actix glue adds to a [`Limiter`]: who the client is (proxies, IPv6 grouping,
//! users) and what responses look like, set on its builder.

use std::borrow::Cow;
use std::sync::Arc;

use actix_web::{HttpRequest, HttpResponse};

use super::proxy::{ForwardingHeaders, InvalidProxy, ProxyNet, TrustedProxies};
use super::response::{Failure, HeaderOptions, Rejection};
use crate::{Limiter, LimiterBuilder};

type UserKey = dyn Fn(&HttpRequest) -> Option<String> + Send + Sync;
type ExemptWhen = dyn Fn(&HttpRequest) -> bool + Send + Sync;
type RejectionResponse = dyn Fn(&Rejection<'_>) -> HttpResponse + Send + Sync;
type FailureResponse = dyn Fn(&Failure) -> HttpResponse + Send + Sync;

/// The default `detail` of a 429.
const DEFAULT_MESSAGE: &str =
    "Too many requests: wait as long as Retry-After says, then try again.";

/// The glue's settings of one limiter.
pub(crate) struct HttpSettings {
    pub(crate) ipv6_prefix: u8,
    pub(crate) trusted_proxies: TrustedProxies,
    pub(crate) forwarding_headers: ForwardingHeaders,
    pub(crate) user_key: Option<Arc<UserKey>>,
    pub(crate) rejection_message: Cow<'static, str>,
    pub(crate) rejection_response: Option<Arc<RejectionResponse>>,
    pub(crate) failure_response: Option<Arc<FailureResponse>>,
    pub(crate) headers: HeaderOptions,
    pub(crate) keep_alive_body_limit: usize,
    pub(crate) keep_alive_body_time: std::time::Duration,
    /// Client addresses (as keys resolve them) that are never counted.
    pub(crate) exempt: TrustedProxies,
    pub(crate) exempt_when: Option<Arc<ExemptWhen>>,
    pub(crate) dry_run: bool,
    /// Whether rejection events carry the client's key (it may be personal data).
    pub(crate) trace_keys: bool,
}

impl Default for HttpSettings {
    fn default() -> HttpSettings {
        HttpSettings {
            ipv6_prefix: 56,
            trusted_proxies: TrustedProxies::none(),
            forwarding_headers: ForwardingHeaders::XForwardedFor,
            user_key: None,
            rejection_message: Cow::Borrowed(DEFAULT_MESSAGE),
            rejection_response: None,
            failure_response: None,
            headers: HeaderOptions {
                ietf: true,
                legacy: false,
            },
            keep_alive_body_limit: LimiterBuilder::DEFAULT_KEEP_ALIVE_BODY_LIMIT,
            keep_alive_body_time: LimiterBuilder::DEFAULT_KEEP_ALIVE_BODY_TIME,
            exempt: TrustedProxies::none(),
            exempt_when: None,
            dry_run: false,
            trace_keys: false,
        }
    }
}

impl HttpSettings {
    /// Whether no limiter-wide rule applies to requests (exemptions, dry run): the lean
    /// path is open.
    #[inline]
    pub(crate) fn plain(&self) -> bool {
        !self.dry_run && self.exempt_when.is_none() && self.exempt.is_empty()
    }
}

impl Limiter {
    /// The IPv6 prefix length clients are grouped by.
    pub fn ipv6_prefix(&self) -> u8 {
        self.http().ipv6_prefix
    }

    /// The proxies whose forwarding headers are believed.
    pub fn trusted_proxies(&self) -> &TrustedProxies {
        &self.http().trusted_proxies
    }
}

impl LimiterBuilder {
    /// The largest body a refused request has read and dropped, by default: 16 KiB.
    pub const DEFAULT_KEEP_ALIVE_BODY_LIMIT: usize = 16 * 1024;

    /// How long a refused request's small body may take to arrive, by default: 200 ms.
    pub const DEFAULT_KEEP_ALIVE_BODY_TIME: std::time::Duration =
        super::body::DEFAULT_KEEP_ALIVE_BODY_TIME;

    /// Refused requests whose `Content-Length` is at most `bytes` (default
    /// [`DEFAULT_KEEP_ALIVE_BODY_LIMIT`](Self::DEFAULT_KEEP_ALIVE_BODY_LIMIT)) have their
    /// body read and dropped — never parsed — if it all arrives within
    /// [`keep_alive_body_time`](Self::keep_alive_body_time), so that their connection is
    /// kept alive: a client told to wait would otherwise pay a new connection for its next
    /// request. Larger bodies, bodies of unknown length (chunked) and bodies that arrive
    /// slowly are left unread, and the connection closes right after the 429: a rejected
    /// request never holds a connection. `0` reads none.
    pub fn keep_alive_body_limit(mut self, bytes: usize) -> LimiterBuilder {
        self.http().keep_alive_body_limit = bytes;
        self
    }

    /// How long a refused request's small body may take to arrive before the limiter stops
    /// reading it, answers, and closes the connection (default
    /// [`DEFAULT_KEEP_ALIVE_BODY_TIME`](Self::DEFAULT_KEEP_ALIVE_BODY_TIME)). A body sent a
    /// few bytes a second never holds the 429 longer than this.
    pub fn keep_alive_body_time(mut self, time: std::time::Duration) -> LimiterBuilder {
        self.http().keep_alive_body_time = time;
        self
    }

    /// IPv6 clients are counted per network of this prefix length (default 56, capped at
    /// 128): a home connection usually owns a /56 or more, so a per-address key would be
    /// rotated at will.
    pub fn ipv6_prefix(mut self, bits: u8) -> LimiterBuilder {
        self.http().ipv6_prefix = bits.min(128);
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
    /// use limiter::Limiter;
    /// let error = Limiter::builder().try_trusted_proxies(["10.0.0.0/8", "10.0.0.300"]).unwrap_err();
    /// assert!(error.to_string().contains("`10.0.0.300`"));
    /// ```
    pub fn try_trusted_proxies<I>(mut self, proxies: I) -> Result<LimiterBuilder, InvalidProxy>
    where
        I: IntoIterator,
        I::Item: ProxyNet,
    {
        self.http().trusted_proxies = TrustedProxies::parse(proxies)?;
        Ok(self)
    }

    /// Which forwarding header the trusted proxies write, the one believed (default
    /// [`ForwardingHeaders::XForwardedFor`], what nginx, HAProxy and the cloud balancers
    /// write). The other is ignored: a client's own header passed through never makes a
    /// request an error, and one that names another client is reported once as a `warn`.
    pub fn forwarding_headers(mut self, headers: ForwardingHeaders) -> LimiterBuilder {
        self.http().forwarding_headers = headers;
        self
    }

    /// Who the user is, for `key = "user"`: the id of the signed-in user, or `None` for an
    /// anonymous request, which is then counted by address (in a namespace of its own, so a
    /// user id never shares an address's budget).
    pub fn user_key(
        mut self,
        resolve: impl Fn(&HttpRequest) -> Option<String> + Send + Sync + 'static,
    ) -> LimiterBuilder {
        self.http().user_key = Some(Arc::new(resolve));
        self
    }

    /// The `detail` of the default 429 problem body.
    pub fn rejection_message(mut self, message: impl Into<Cow<'static, str>>) -> LimiterBuilder {
        self.http().rejection_message = message.into();
        self
    }

    /// Builds the whole rejection response instead of the default problem body.
    /// `Retry-After`, `Cache-Control: no-store` and the RateLimit fields are added unless
    /// the response sets them itself.
    pub fn rejection_response(
        mut self,
        build: impl Fn(&Rejection<'_>) -> HttpResponse + Send + Sync + 'static,
    ) -> LimiterBuilder {
        self.http().rejection_response = Some(Arc::new(build));
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
    /// use limiter::{Failure, Limiter};
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
    pub fn exempt<I>(self, clients: I) -> LimiterBuilder
    where
        I: IntoIterator,
        I::Item: ProxyNet,
    {
        match self.try_exempt(clients) {
            Ok(builder) => builder,
            Err(error) => panic!(
                "{}",
                error.to_string().replace("trusted proxy", "exempt client")
            ),
        }
    }

    /// [`exempt`](Self::exempt) for lists read at run time: says which entry is wrong.
    ///
    /// ```
    /// use limiter::Limiter;
    /// assert!(Limiter::builder().try_exempt(["10.0.0.0/8", "10.0.0/8"]).is_err());
    /// ```
    pub fn try_exempt<I>(mut self, clients: I) -> Result<LimiterBuilder, InvalidProxy>
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
        exempt: impl Fn(&HttpRequest) -> bool + Send + Sync + 'static,
    ) -> LimiterBuilder {
        self.http().exempt_when = Some(Arc::new(exempt));
        self
    }

    /// Decide and count everything, enforce nothing: a would-be rejection passes with a
    /// `warn` event naming the limit, its key kind and the Retry-After it would have had,
    /// and its response carries the RateLimit fields as if enforced. For rolling a new
    /// limit out safely (default: off; `dry_run = true` does it for one limit).
    pub fn dry_run(mut self, on: bool) -> LimiterBuilder {
        self.http().dry_run = on;
        self
    }

    /// Whether the `debug` event of each rejection carries the client's key (an address, a
    /// user id, an API key: personal data, or a secret, in many services). Default: no —
    /// the event names the scope, the kind of key and the Retry-After.
    pub fn trace_keys(mut self, on: bool) -> LimiterBuilder {
        self.http().trace_keys = on;
        self
    }

    /// Whether responses carry `RateLimit-Policy` and `RateLimit` (default: yes).
    pub fn ietf_headers(mut self, on: bool) -> LimiterBuilder {
        self.http().headers.ietf = on;
        self
    }

    /// Whether responses carry `X-RateLimit-Limit`, `X-RateLimit-Remaining` and
    /// `X-RateLimit-Reset` (default: no), for the most restrictive limit of the handler.
    pub fn legacy_headers(mut self, on: bool) -> LimiterBuilder {
        self.http().headers.legacy = on;
        self
    }
}
