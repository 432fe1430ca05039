//! Who is counted: the client key of a request under a limit's `key = ...`. Who the client
//! is by address — trusted proxies, forwarding headers, IPv6 prefixes — and the keys' bytes
//! are `limiter_http`'s, which every front end shares: here actix's request is read
//! through its [`RequestHead`].

use std::net::IpAddr;

use actix_web::http::header::{self, HeaderName};
use actix_web::HttpRequest;
use limiter_http::{ip_key, ClientKey, Header, KeyError, Kind, RequestHead};

use super::resolve::{self, Resolution, Resolver};
use super::settings::HttpSettings;

/// How a limit picks the client key (the `key = ...` of `#[rate_limit]`).
#[derive(Clone, Debug)]
pub enum KeySpec {
    /// The client's address (the peer, IPv6 grouped per prefix).
    Ip,
    /// The id from the limiter's user resolver; anonymous requests fall back to the address.
    User,
    /// One budget for everyone.
    Global,
    /// A header's value (an API key, say); absent, the address.
    Header(HeaderName),
    /// A key the application computes; `None`, the address.
    Function(fn(&HttpRequest) -> Option<String>),
    /// A key a [`Resolver`] finds, which may be `async` (what `key = path` makes); `None`,
    /// or no answer within the limiter's
    /// [`resolver_timeout`](crate::LimiterBuilder::resolver_timeout), the address.
    Resolved(Resolver<String>),
}

/// An actix request as the key logic reads it.
pub(crate) struct Head<'a>(pub(crate) &'a HttpRequest);

impl RequestHead for Head<'_> {
    #[inline]
    fn peer_ip(&self) -> Option<IpAddr> {
        self.0.peer_addr().map(|peer| peer.ip())
    }

    #[inline]
    fn header_values(&self, header: Header) -> impl Iterator<Item = &[u8]> {
        header_values(self.0, header)
    }
}

/// The values of `header` in `req`, in order received.
#[inline]
fn header_values(req: &HttpRequest, header: Header) -> impl Iterator<Item = &[u8]> {
    req.headers()
        .get_all(header_name(header))
        .map(|value| value.as_bytes())
}

/// actix's name of a header the key logic reads.
#[inline]
fn header_name(header: Header) -> &'static HeaderName {
    static CF_CONNECTING_IP: HeaderName = HeaderName::from_static("cf-connecting-ip");
    static TRUE_CLIENT_IP: HeaderName = HeaderName::from_static("true-client-ip");
    static X_REAL_IP: HeaderName = HeaderName::from_static("x-real-ip");
    static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
    match header {
        Header::Forwarded => &header::FORWARDED,
        Header::XForwardedFor => &X_FORWARDED_FOR,
        Header::CfConnectingIp => &CF_CONNECTING_IP,
        Header::TrueClientIp => &TRUE_CLIENT_IP,
        Header::XRealIp => &X_REAL_IP,
    }
}

impl KeySpec {
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
    pub(crate) async fn key_for(
        &self,
        req: &HttpRequest,
        http: &HttpSettings,
    ) -> Result<ClientKey, KeyError> {
        match self {
            KeySpec::Resolved(resolver) if resolver.is_async() => {
                let timeout = http.resolver_timeout;
                match resolve::within(resolver, req, timeout, "key").await {
                    Some(key) => Ok(ClientKey::of(Kind::Function, key.as_bytes())),
                    None => ip_key(&Head(req), &http.clients),
                }
            }
            _ => self.key_of(req, http),
        }
    }

    /// The key of `req` under this spec.
    pub(crate) fn key_of(
        &self,
        req: &HttpRequest,
        http: &HttpSettings,
    ) -> Result<ClientKey, KeyError> {
        let value = match self {
            KeySpec::Ip => None,
            KeySpec::Global => return Ok(ClientKey::of(Kind::Global, b"")),
            KeySpec::User => match http.user_key.as_deref() {
                Some(resolve) => resolve(req).map(|id| ClientKey::of(Kind::User, id.as_bytes())),
                None => {
                    super::mistakes::user_key_without_resolver();
                    None
                }
            },
            KeySpec::Header(name) => req
                .headers()
                .get(name)
                .map(|value| ClientKey::of(Kind::Header, value.as_bytes())),
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
            None => ip_key(&Head(req), &http.clients),
        }
    }
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::Head;

    /// The key logic's cases, on actix's requests as its test requests build them: what the
    /// other front ends run on theirs.
    #[test]
    fn the_key_logic_on_actix_requests() {
        limiter_http::conformance::run_all(|peer, headers| {
            let mut req = TestRequest::default();
            if let Some(peer) = peer {
                req = req.peer_addr(std::net::SocketAddr::new(peer, 40_000));
            }
            for (name, value) in headers {
                req = req.append_header((*name, *value));
            }
            Owned(req.to_http_request())
        });
    }

    /// A request the cases can own (`Head` borrows one).
    struct Owned(actix_web::HttpRequest);

    impl limiter_http::RequestHead for Owned {
        fn peer_ip(&self) -> Option<std::net::IpAddr> {
            Head(&self.0).peer_ip()
        }

        fn header_values(&self, header: limiter_http::Header) -> impl Iterator<Item = &[u8]> {
            super::header_values(&self.0, header)
        }
    }
}
