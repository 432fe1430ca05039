//! What a [`Limiter`](crate::Limiter) adds to the engine's: who the client is (proxies,
//! IPv6 grouping, users) and what responses look like, set on its builder. Generic over the
//! front end only for the settings that are closures over its request or build its
//! response.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use crate::enforcement::Enforcement;
use crate::fields::HeaderOptions;
use crate::rejected::RejectedClients;
use crate::waiting::Waiting;
use crate::{ClientSettings, Front, TrustedProxies};

/// The most requests waiting for their turn at once (`delay`), by default.
pub const DEFAULT_MOST_WAITING: usize = 1_024;

/// How long an `async` key or policy function may take by default.
pub const DEFAULT_RESOLVER_TIMEOUT: Duration = Duration::from_millis(100);

/// The largest body a refused request has read and dropped, by default.
pub const DEFAULT_KEEP_ALIVE_BODY_LIMIT: usize = 16 * 1024;

/// How long a refused request's small body may take to arrive, by default.
pub const DEFAULT_KEEP_ALIVE_BODY_TIME: Duration = Duration::from_millis(200);

/// Who the user of a request is (`key = "user"`).
pub type UserKey<F> = dyn Fn(&<F as Front>::Request) -> Option<String> + Send + Sync;
/// Whether the limiter exempts a request.
pub type ExemptWhen<F> = dyn Fn(&<F as Front>::Request) -> bool + Send + Sync;
/// A service's own rejection response.
pub type RejectionResponse<F> =
    dyn Fn(&<F as Front>::Rejection<'_>) -> <F as Front>::Response + Send + Sync;
/// A service's own failure response.
pub type FailureResponse<F> =
    dyn Fn(&<F as Front>::Failure) -> <F as Front>::Response + Send + Sync;

/// The default `detail` of a 429.
const DEFAULT_MESSAGE: &str =
    "Too many requests: wait as long as Retry-After says, then try again.";

/// The HTTP settings of one limiter.
pub struct HttpSettings<F: Front> {
    /// Who a client is by address: IPv6 grouping, trusted proxies and their header.
    pub clients: ClientSettings,
    /// Who the user is, for `key = "user"`.
    pub user_key: Option<Arc<UserKey<F>>>,
    /// The default 429's `detail`.
    pub rejection_message: Cow<'static, str>,
    /// The default 429's body up to `retry_after`, made once from the message.
    problem_head: std::sync::OnceLock<Box<[u8]>>,
    /// The service's own 429.
    pub rejection_response: Option<Arc<RejectionResponse<F>>>,
    /// The service's own failure responses.
    pub failure_response: Option<Arc<FailureResponse<F>>>,
    /// Which rate limit fields responses carry.
    pub headers: HeaderOptions,
    /// The largest body of a refused request read and dropped.
    pub keep_alive_body_limit: usize,
    /// How long that body may take to arrive.
    pub keep_alive_body_time: std::time::Duration,
    /// Client addresses (as keys resolve them) that are never counted.
    pub exempt: TrustedProxies,
    /// The service's own exemption rule.
    pub exempt_when: Option<Arc<ExemptWhen<F>>>,
    /// Whether nothing is enforced.
    pub dry_run: bool,
    /// The share of each configured scope's clients its limits are enforced on.
    pub enforcement: Enforcement,
    /// Whether rejection events carry the client's key (it may be personal data).
    pub trace_keys: bool,
    /// Whether a 429's body is the IETF draft's `quota-exceeded` problem.
    pub quota_exceeded: bool,
    /// Whether CORS preflights a CORS layer answers stay counted (they are given back by
    /// default: a browser sends one before the request it asks about, which is counted).
    pub count_preflights: bool,
    /// Whether the most rejected clients of each scope are kept (for the routes page).
    pub track_rejected: bool,
    /// The most rejected clients of each scope, lately.
    pub rejected: RejectedClients,
    /// The requests waiting for their turn now (`delay`), and the most that may.
    pub waiting: Waiting,
    /// The most requests that may wait their turn at once.
    pub most_waiting: usize,
    /// How long an `async` key or policy function may take before its default applies.
    pub resolver_timeout: std::time::Duration,
}

impl<F: Front> Default for HttpSettings<F> {
    fn default() -> HttpSettings<F> {
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

impl<F: Front> HttpSettings<F> {
    /// Sets the 429's `detail`; the body's opening is made again from it.
    pub fn set_rejection_message(&mut self, message: Cow<'static, str>) {
        self.rejection_message = message;
        self.problem_head = std::sync::OnceLock::new();
    }

    /// The default 429's body up to `retry_after`: [`problem_head`](crate::problem_head) of the
    /// message, made on first use.
    pub fn problem_head(&self) -> &[u8] {
        self.problem_head
            .get_or_init(|| crate::problem_head(&self.rejection_message))
    }

    /// Whether no limiter-wide rule applies to requests (exemptions, dry run): the lean
    /// path is open.
    #[inline]
    pub fn plain(&self) -> bool {
        !self.dry_run && self.exempt_when.is_none() && self.exempt.is_empty()
    }
}
