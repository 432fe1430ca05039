//! What the actix glue adds to a [`Limiter`]: who the client is (proxies, IPv6 grouping,
//! users) and what responses look like, set on its builder.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse};

use super::fields::HeaderOptions;
use super::problem::{Failure, Rejection};
use limiter_http::plumbing::Enforcement;
use limiter_http::plumbing::RejectedClients;
use limiter_http::{ClientSettings, TrustedProxies};

/// The most requests waiting for their turn at once (`delay`), by default.
pub(crate) const DEFAULT_MOST_WAITING: usize = 1_024;

/// How long an `async` key or policy function may take by default.
pub(crate) const DEFAULT_RESOLVER_TIMEOUT: Duration = Duration::from_millis(100);

/// The largest body a refused request has read and dropped, by default.
pub(crate) const DEFAULT_KEEP_ALIVE_BODY_LIMIT: usize = 16 * 1024;

/// How long a refused request's small body may take to arrive, by default.
pub(crate) const DEFAULT_KEEP_ALIVE_BODY_TIME: Duration = Duration::from_millis(200);

pub(crate) type UserKey = dyn Fn(&HttpRequest) -> Option<String> + Send + Sync;
pub(crate) type ExemptWhen = dyn Fn(&HttpRequest) -> bool + Send + Sync;
pub(crate) type RejectionResponse = dyn Fn(&Rejection<'_>) -> HttpResponse + Send + Sync;
pub(crate) type FailureResponse = dyn Fn(&Failure) -> HttpResponse + Send + Sync;

/// The default `detail` of a 429.
const DEFAULT_MESSAGE: &str =
    "Too many requests: wait as long as Retry-After says, then try again.";

/// The glue's settings of one limiter.
pub(crate) struct HttpSettings {
    /// Who a client is by address: IPv6 grouping, trusted proxies and their header.
    pub(crate) clients: ClientSettings,
    pub(crate) user_key: Option<Arc<UserKey>>,
    pub(crate) rejection_message: Cow<'static, str>,
    /// The default 429's body up to `retry_after`, made once from the message.
    problem_head: std::sync::OnceLock<Box<[u8]>>,
    pub(crate) rejection_response: Option<Arc<RejectionResponse>>,
    pub(crate) failure_response: Option<Arc<FailureResponse>>,
    pub(crate) headers: HeaderOptions,
    pub(crate) keep_alive_body_limit: usize,
    pub(crate) keep_alive_body_time: std::time::Duration,
    /// Client addresses (as keys resolve them) that are never counted.
    pub(crate) exempt: TrustedProxies,
    pub(crate) exempt_when: Option<Arc<ExemptWhen>>,
    pub(crate) dry_run: bool,
    /// The share of each configured scope's clients its limits are enforced on.
    pub(crate) enforcement: Enforcement,
    /// Whether rejection events carry the client's key (it may be personal data).
    pub(crate) trace_keys: bool,
    /// Whether a 429's body is the IETF draft's `quota-exceeded` problem.
    pub(crate) quota_exceeded: bool,
    /// Whether CORS preflights a CORS layer answers stay counted (they are given back by
    /// default: a browser sends one before the request it asks about, which is counted).
    pub(crate) count_preflights: bool,
    /// Whether the most rejected clients of each scope are kept (for the routes page).
    pub(crate) track_rejected: bool,
    /// The most rejected clients of each scope, lately.
    pub(crate) rejected: RejectedClients,
    /// The requests waiting for their turn now (`delay`), and the most that may.
    pub(crate) waiting: super::delay::Waiting,
    pub(crate) most_waiting: usize,
    /// How long an `async` key or policy function may take before its default applies.
    pub(crate) resolver_timeout: std::time::Duration,
}

impl Default for HttpSettings {
    fn default() -> HttpSettings {
        HttpSettings {
            clients: ClientSettings::default(),
            user_key: None,
            rejection_message: Cow::Borrowed(DEFAULT_MESSAGE),
            problem_head: std::sync::OnceLock::new(),
            rejection_response: None,
            failure_response: None,
            headers: HeaderOptions {
                ietf: true,
                legacy: false,
            },
            keep_alive_body_limit: DEFAULT_KEEP_ALIVE_BODY_LIMIT,
            keep_alive_body_time: DEFAULT_KEEP_ALIVE_BODY_TIME,
            exempt: TrustedProxies::none(),
            exempt_when: None,
            dry_run: false,
            enforcement: Enforcement::default(),
            trace_keys: false,
            count_preflights: false,
            quota_exceeded: false,
            track_rejected: true,
            rejected: RejectedClients::default(),
            waiting: Default::default(),
            most_waiting: DEFAULT_MOST_WAITING,
            resolver_timeout: DEFAULT_RESOLVER_TIMEOUT,
        }
    }
}

impl HttpSettings {
    /// Sets the 429's `detail`; the body's opening is made again from it.
    pub(crate) fn set_rejection_message(&mut self, message: Cow<'static, str>) {
        self.rejection_message = message;
        self.problem_head = std::sync::OnceLock::new();
    }

    /// The default 429's body up to `retry_after`: [`limiter_http::problem_head`] of the
    /// message, made on first use.
    pub(crate) fn problem_head(&self) -> &[u8] {
        self.problem_head
            .get_or_init(|| limiter_http::problem_head(&self.rejection_message))
    }

    /// Whether no limiter-wide rule applies to requests (exemptions, dry run): the lean
    /// path is open.
    #[inline]
    pub(crate) fn plain(&self) -> bool {
        !self.dry_run && self.exempt_when.is_none() && self.exempt.is_empty()
    }
}
