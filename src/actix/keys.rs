//! Who is counted: the client key of a request, as bytes in a namespace of their own.
//!
//! Namespaces keep kinds apart: a user named `203.0.113.7` never shares the budget of the
//! address 203.0.113.7, and an API key never shares a user's.

use std::net::{IpAddr, Ipv6Addr};

use actix_web::http::header::{self, HeaderName};
use actix_web::HttpRequest;

use super::proxy::{client_of, unmap, Client, Contradiction, ForwardingHeaders};
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

/// A key's bytes: short ones (addresses, `global`) on the stack.
#[derive(Clone, Debug)]
pub(crate) enum ClientKey {
    Stack { bytes: [u8; 18], len: u8 },
    Owned(Vec<u8>),
}

impl ClientKey {
    /// The key of a value a handler checks itself (`limiter::check`).
    pub(crate) fn checked(value: &[u8]) -> ClientKey {
        ClientKey::tagged(tag::INLINE, value)
    }

    /// A store key as it is.
    pub(crate) fn raw(key: &[u8]) -> ClientKey {
        ClientKey::Owned(key.to_vec())
    }

    /// The key of `value` under a kind of key, as a request would make it.
    pub(crate) fn of(kind: Kind, value: &[u8]) -> ClientKey {
        match kind {
            Kind::Global => {
                let mut bytes = [0; 18];
                bytes[0] = tag::GLOBAL;
                ClientKey::Stack { bytes, len: 1 }
            }
            Kind::User => ClientKey::tagged(tag::USER, value),
            Kind::Header => ClientKey::tagged(tag::HEADER, value),
            Kind::Function => ClientKey::tagged(tag::FUNCTION, value),
        }
    }

    /// The key in words, for a log line: `203.0.113.7`, `2001:db8::/56`, `user:ann`.
    pub(crate) fn describe(&self) -> String {
        let bytes = self.as_bytes();
        let (tag, value) = match bytes.split_first() {
            Some((tag, value)) => (*tag, value),
            None => return String::new(),
        };
        match (tag, value.len()) {
            (tag::IPV4, 4) => {
                std::net::Ipv4Addr::new(value[0], value[1], value[2], value[3]).to_string()
            }
            (tag::IPV6, 17) => {
                let mut octets = [0; 16];
                octets.copy_from_slice(&value[1..]);
                format!("{}/{}", std::net::Ipv6Addr::from(octets), value[0])
            }
            (tag::GLOBAL, _) => "global".to_string(),
            (tag::HASHED, _) => format!(
                "sha1:{}",
                value
                    .iter()
                    .skip(1)
                    .map(|b| format!("{b:02x}"))
                    .collect::<String>()
            ),
            (tag, _) => {
                let kind = match tag {
                    tag::USER => "user",
                    tag::HEADER => "header",
                    tag::FUNCTION => "function",
                    tag::INLINE => "checked",
                    tag::OBFUSCATED => "obfuscated",
                    _ => "key",
                };
                format!("{kind}:{}", String::from_utf8_lossy(value))
            }
        }
    }

    /// The key in words for an operator's page: as [`describe`](Self::describe) says, but a
    /// header's, a key function's or a handler's own value — often a secret, an API key —
    /// as the first 8 bytes of its SHA-1 digest unless `reveal`.
    pub(crate) fn shown(&self, reveal: bool) -> String {
        let bytes = self.as_bytes();
        match bytes.split_first() {
            Some((&tag, value))
                if !reveal && matches!(tag, tag::HEADER | tag::FUNCTION | tag::INLINE) =>
            {
                let kind = match tag {
                    tag::HEADER => "header",
                    tag::FUNCTION => "function",
                    _ => "checked",
                };
                let digest = sha1_smol::Sha1::from(value).digest().bytes();
                let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
                format!("{kind}:sha1:{hex}")
            }
            _ => self.describe(),
        }
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            ClientKey::Stack { bytes, len } => &bytes[..usize::from(*len)],
            ClientKey::Owned(bytes) => bytes,
        }
    }

    /// A key of kind `tag`. Values longer than [`MAX_KEY_VALUE`] bytes are replaced by their
    /// SHA-1 digest, in a namespace of their own: keys stay bounded whatever a client sends,
    /// and a long value can only share a budget with another long value of the same digest
    /// (a second preimage, out of reach).
    fn tagged(tag: u8, value: &[u8]) -> ClientKey {
        if value.len() > MAX_KEY_VALUE {
            let digest = sha1_smol::Sha1::from(value).digest().bytes();
            let mut bytes = Vec::with_capacity(2 + digest.len());
            bytes.extend_from_slice(&[tag::HASHED, tag]);
            bytes.extend_from_slice(&digest);
            return ClientKey::Owned(bytes);
        }
        let mut bytes = Vec::with_capacity(value.len() + 1);
        bytes.push(tag);
        bytes.extend_from_slice(value);
        ClientKey::Owned(bytes)
    }
}

/// The kinds of key whose value comes from somewhere other than the client's address.
#[derive(Clone, Copy)]
pub(crate) enum Kind {
    Global,
    User,
    Header,
    Function,
}

/// The longest key value kept as it is; longer ones are hashed.
pub(crate) const MAX_KEY_VALUE: usize = 64;

/// Namespace tags, the first byte of every key.
mod tag {
    pub(super) const HASHED: u8 = b'#';
    pub(super) const OBFUSCATED: u8 = b'o';
    pub(super) const IPV4: u8 = b'4';
    pub(super) const IPV6: u8 = b'6';
    pub(super) const GLOBAL: u8 = b'g';
    pub(super) const USER: u8 = b'u';
    pub(super) const HEADER: u8 = b'h';
    pub(super) const FUNCTION: u8 = b'f';
    pub(super) const INLINE: u8 = b'i';
}

/// Why a request's client key could not be found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum KeyError {
    /// The request carries no usable peer address, so no client can be told apart.
    NoClientAddress,
    /// The trusted proxy's forwarding headers name different clients.
    Contradiction(Contradiction),
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
                    None => ip_key(req, http),
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
            None => ip_key(req, http),
        }
    }
}

/// The client's address as a key: the peer, or the address a trusted proxy vouched for;
/// IPv4-mapped IPv6 counted as IPv4, IPv6 cut to its prefix, ports ignored.
fn ip_key(req: &HttpRequest, http: &HttpSettings) -> Result<ClientKey, KeyError> {
    match client(req, http)? {
        Client::Address(ip) => Ok(ip_key_of(ip, http.ipv6_prefix)),
        Client::Obfuscated(id) => Ok(ClientKey::tagged(tag::OBFUSCATED, id.as_bytes())),
    }
}

/// Who `req` comes from, as the limiter counts it: its peer, or the client a trusted proxy
/// vouched for.
pub(crate) fn client(req: &HttpRequest, http: &HttpSettings) -> Result<Client, KeyError> {
    let peer = req.peer_addr().ok_or(KeyError::NoClientAddress)?.ip();
    let trusted = &http.trusted_proxies;
    if trusted.is_empty() {
        super::mistakes::forwarded_by_an_untrusted_private_peer(peer, || {
            let headers = req.headers();
            headers.contains_key(&X_FORWARDED_FOR) || headers.contains_key(header::FORWARDED)
        });
        return Ok(Client::Address(unmap(peer)));
    }
    if !trusted.contains(peer) {
        return Ok(Client::Address(unmap(peer)));
    }
    if let Some(name) = one_address_header(http.forwarding_headers) {
        let named = one_address(req, name);
        super::mistakes::trusted_proxy_said(named.is_some(), false);
        return Ok(Client::Address(named.unwrap_or(unmap(peer))));
    }
    let forwarded = Values::of(req, &header::FORWARDED);
    let x_forwarded_for = Values::of(req, &X_FORWARDED_FOR);
    let (read, other) = match http.forwarding_headers {
        ForwardingHeaders::Both => (
            !forwarded.as_slice().is_empty() || !x_forwarded_for.as_slice().is_empty(),
            false,
        ),
        ForwardingHeaders::Forwarded => (
            !forwarded.as_slice().is_empty(),
            !x_forwarded_for.as_slice().is_empty(),
        ),
        ForwardingHeaders::XForwardedFor => (
            !x_forwarded_for.as_slice().is_empty(),
            !forwarded.as_slice().is_empty(),
        ),
        // Read above.
        ForwardingHeaders::CfConnectingIp
        | ForwardingHeaders::TrueClientIp
        | ForwardingHeaders::XRealIp => (true, false),
    };
    super::mistakes::trusted_proxy_said(read, other);
    let headers = http.forwarding_headers;
    let client = client_of(
        peer,
        forwarded.as_slice(),
        x_forwarded_for.as_slice(),
        trusted,
        headers,
    )
    .map_err(KeyError::Contradiction)?;
    // The header not believed, passed through: if it names another client, say so once.
    if other && !super::mistakes::passed_through_reported() {
        let ignored = match headers {
            ForwardingHeaders::XForwardedFor => ForwardingHeaders::Forwarded,
            _ => ForwardingHeaders::XForwardedFor,
        };
        let fwd = forwarded.as_slice();
        let xff = x_forwarded_for.as_slice();
        if let Ok(said) = client_of(peer, fwd, xff, trusted, ignored) {
            if said != client && said != Client::Address(unmap(peer)) {
                super::mistakes::passed_through_header(headers, &client, &said);
            }
        }
    }
    Ok(client)
}

/// The one-address header `headers` names, if it is one.
fn one_address_header(headers: ForwardingHeaders) -> Option<&'static HeaderName> {
    static CF_CONNECTING_IP: HeaderName = HeaderName::from_static("cf-connecting-ip");
    static TRUE_CLIENT_IP: HeaderName = HeaderName::from_static("true-client-ip");
    static X_REAL_IP: HeaderName = HeaderName::from_static("x-real-ip");
    match headers {
        ForwardingHeaders::CfConnectingIp => Some(&CF_CONNECTING_IP),
        ForwardingHeaders::TrueClientIp => Some(&TRUE_CLIENT_IP),
        ForwardingHeaders::XRealIp => Some(&X_REAL_IP),
        _ => None,
    }
}

/// The address a one-address header of `req` names: `None` when it is absent, repeated (a
/// proxy that replaces it sends one) or not an address.
fn one_address(req: &HttpRequest, name: &HeaderName) -> Option<IpAddr> {
    let mut values = req.headers().get_all(name);
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    let text = value.to_str().ok()?.trim();
    // `[2001:db8::1]` as some proxies write an IPv6 address.
    let text = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    text.parse::<IpAddr>().ok().map(unmap)
}

static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");

/// A header's values; the usual single one without allocating.
enum Values<'a> {
    One([&'a [u8]; 1]),
    Many(Vec<&'a [u8]>),
}

impl<'a> Values<'a> {
    fn of(req: &'a HttpRequest, name: &HeaderName) -> Values<'a> {
        let mut all = req.headers().get_all(name);
        match (all.next(), all.next()) {
            (None, _) => Values::Many(Vec::new()),
            (Some(one), None) => Values::One([one.as_bytes()]),
            (Some(first), Some(second)) => {
                let mut many = vec![first.as_bytes(), second.as_bytes()];
                many.extend(all.map(|v| v.as_bytes()));
                Values::Many(many)
            }
        }
    }

    fn as_slice(&self) -> &[&'a [u8]] {
        match self {
            Values::One(one) => one,
            Values::Many(many) => many,
        }
    }
}

pub(crate) fn ip_key_of(ip: IpAddr, ipv6_prefix: u8) -> ClientKey {
    let mut bytes = [0; 18];
    match client_ip(ip, ipv6_prefix) {
        IpAddr::V4(v4) => {
            bytes[0] = tag::IPV4;
            bytes[1..5].copy_from_slice(&v4.octets());
            ClientKey::Stack { bytes, len: 5 }
        }
        IpAddr::V6(v6) => {
            bytes[0] = tag::IPV6;
            bytes[1] = ipv6_prefix;
            bytes[2..18].copy_from_slice(&v6.octets());
            ClientKey::Stack { bytes, len: 18 }
        }
    }
}

/// The address a client is counted as: mapped IPv4 unwrapped, IPv6 cut to its prefix.
pub fn client_ip(ip: IpAddr, ipv6_prefix: u8) -> IpAddr {
    match unmap(ip) {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6);
            let prefix = u32::from(ipv6_prefix.min(128));
            let mask = u128::MAX.checked_shl(128 - prefix).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(bits & mask))
        }
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_is_grouped_by_prefix_and_mapped_ipv4_is_ipv4() {
        let a: IpAddr = "2001:db8:1:2ff:1::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:200::9".parse().unwrap();
        assert_eq!(client_ip(a, 56), client_ip(b, 56));
        assert_ne!(client_ip(a, 64), client_ip(b, 64));
        assert_eq!(
            client_ip(a, 56),
            "2001:db8:1:200::".parse::<IpAddr>().unwrap()
        );
        assert_eq!(client_ip(a, 128), a);
        assert_eq!(client_ip(a, 0), "::".parse::<IpAddr>().unwrap());
        let mapped: IpAddr = "::ffff:203.0.113.7".parse().unwrap();
        assert_eq!(
            client_ip(mapped, 56),
            "203.0.113.7".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            ip_key_of(mapped, 56).as_bytes(),
            ip_key_of("203.0.113.7".parse().unwrap(), 56).as_bytes()
        );
    }
}
