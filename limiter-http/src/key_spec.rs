//! Who is counted: the client key of a request under a limit's `key = ...`, read through
//! the front end's request. Who the client is by address — trusted proxies, forwarding
//! headers, IPv6 prefixes — is [`ip_key`]'s, the same for every front end.

use crate::limiter::settings::HttpSettings;
use crate::resolve::{self, Resolution, Resolver};
use crate::{ip_key, ClientKey, Front, KeyError, Kind};

/// How a limit picks the client key (the `key = ...` of `#[rate_limit]`), over the front
/// end `F`'s requests.
pub enum KeySpec<F: Front> {
    /// The client's address (the peer, IPv6 grouped per prefix).
    Ip,
    /// The id from the limiter's user resolver; anonymous requests fall back to the address.
    User,
    /// One budget for everyone.
    Global,
    /// A header's value (an API key, say); absent, the address.
    Header(F::HeaderName),
    /// A key the application computes; `None`, the address.
    Function(fn(&F::Request) -> Option<String>),
    /// A key a [`Resolver`] finds, which may be `async` (what `key = path` makes); `None`,
    /// or no answer within the limiter's
    /// [`resolver_timeout`](crate::LimiterBuilder::resolver_timeout), the address.
    Resolved(Resolver<F, String>),
}

impl<F: Front> Clone for KeySpec<F> {
    fn clone(&self) -> KeySpec<F> {
        match self {
            KeySpec::Ip => KeySpec::Ip,
            KeySpec::User => KeySpec::User,
            KeySpec::Global => KeySpec::Global,
            KeySpec::Header(name) => KeySpec::Header(name.clone()),
            KeySpec::Function(compute) => KeySpec::Function(*compute),
            KeySpec::Resolved(resolver) => KeySpec::Resolved(resolver.clone()),
        }
    }
}

impl<F: Front> std::fmt::Debug for KeySpec<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeySpec::Ip => f.write_str("Ip"),
            KeySpec::User => f.write_str("User"),
            KeySpec::Global => f.write_str("Global"),
            KeySpec::Header(name) => f.debug_tuple("Header").field(name).finish(),
            KeySpec::Function(_) => f.write_str("Function(fn)"),
            KeySpec::Resolved(resolver) => f.debug_tuple("Resolved").field(resolver).finish(),
        }
    }
}

impl<F: Front> KeySpec<F> {
    /// What kind of key it is, for logs: `ip`, `user`, `global`, `header:NAME`, `function`, `async-function`.
    pub fn kind(&self) -> std::borrow::Cow<'static, str> {
        match self {
            KeySpec::Ip => "ip".into(),
            KeySpec::User => "user".into(),
            KeySpec::Global => "global".into(),
            KeySpec::Header(name) => format!("header:{name}").into(),
            KeySpec::Function(_) => "function".into(),
            KeySpec::Resolved(resolver) if resolver.is_async() => "async-function".into(),
            KeySpec::Resolved(_) => "function".into(),
        }
    }

    /// Whether finding a key means awaiting an `async` resolver.
    pub(crate) fn is_async(&self) -> bool {
        matches!(self, KeySpec::Resolved(resolver) if resolver.is_async())
    }

    /// The key of `req` under this spec, awaiting an `async` resolver (within the
    /// limiter's resolver timeout).
    #[doc(hidden)]
    pub async fn key_for(
        &self,
        req: &F::Request,
        http: &HttpSettings<F>,
    ) -> Result<ClientKey, KeyError> {
        match self {
            KeySpec::Resolved(resolver) if resolver.is_async() => {
                let timeout = http.resolver_timeout;
                match resolve::within(resolver, req, timeout, "key").await {
                    Some(key) => Ok(ClientKey::of(Kind::Function, key.as_bytes())),
                    None => ip_key(&F::head(req), &http.clients),
                }
            }
            _ => self.key_of(req, http),
        }
    }

    /// The key of `req` under this spec.
    pub(crate) fn key_of(
        &self,
        req: &F::Request,
        http: &HttpSettings<F>,
    ) -> Result<ClientKey, KeyError> {
        let value = match self {
            KeySpec::Ip => None,
            KeySpec::Global => return Ok(ClientKey::of(Kind::Global, b"")),
            KeySpec::User => match http.user_key.as_deref() {
                Some(resolve) => resolve(req).map(|id| ClientKey::of(Kind::User, id.as_bytes())),
                None => {
                    crate::mistakes::user_key_without_resolver();
                    None
                }
            },
            KeySpec::Header(name) => {
                F::header(req, name).map(|value| ClientKey::of(Kind::Header, value))
            }
            KeySpec::Function(compute) => {
                compute(req).map(|key| ClientKey::of(Kind::Function, key.as_bytes()))
            }
            // An `async` one is awaited by `key_for`; here (a path that cannot wait) it
            // gives no answer.
            KeySpec::Resolved(resolver) => match resolver.resolve(req) {
                Resolution::Now(key) => {
                    key.map(|key| ClientKey::of(Kind::Function, key.as_bytes()))
                }
                Resolution::Later(_) => None,
            },
        };
        match value {
            Some(key) => Ok(key),
            None => ip_key(&F::head(req), &http.clients),
        }
    }
}
