//! Who a request comes from, read through [`RequestHead`]: the peer, or the client a trusted
//! proxy vouched for.

use std::net::IpAddr;

use crate::client_key::{ip_key_of, tag, ClientKey};
use crate::mistakes;
use crate::proxy::{client_of, unmap, Client, Contradiction, ForwardingHeaders, TrustedProxies};

/// What the key logic reads of a request, implemented by each front end for (a view of) its
/// request type: the actix glue for actix-web's `HttpRequest`.
///
/// ```
/// use std::net::IpAddr;
/// use limiter_http::{client, Client, ClientSettings, Header, RequestHead, TrustedProxies};
///
/// struct Seen {
///     peer: IpAddr,
///     xff: &'static [u8],
/// }
///
/// impl RequestHead for Seen {
///     fn peer_ip(&self) -> Option<IpAddr> {
///         Some(self.peer)
///     }
///     fn header_values(&self, header: Header) -> impl Iterator<Item = &[u8]> {
///         (header == Header::XForwardedFor).then_some(self.xff).into_iter()
///     }
/// }
///
/// let settings = ClientSettings {
///     trusted_proxies: TrustedProxies::parse(["10.0.0.0/8"])?,
///     ..ClientSettings::default()
/// };
/// let req = Seen { peer: "10.0.0.1".parse()?, xff: b"6.6.6.6, 203.0.113.9" };
/// assert_eq!(client(&req, &settings)?, Client::Address("203.0.113.9".parse()?));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait RequestHead {
    /// The address of the connection's peer; `None` when it has none (a Unix socket, a test
    /// request made without one).
    fn peer_ip(&self) -> Option<IpAddr>;

    /// The values of one of the headers the key logic reads, in the order received.
    fn header_values(&self, header: Header) -> impl Iterator<Item = &[u8]>;
}

/// The headers the key logic reads: a front end maps each to its own header name type
/// (lower-case names in [`Header::name`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    /// `Forwarded` (RFC 7239).
    Forwarded,
    /// `X-Forwarded-For`.
    XForwardedFor,
    /// `CF-Connecting-IP`.
    CfConnectingIp,
    /// `True-Client-IP`.
    TrueClientIp,
    /// `X-Real-IP`.
    XRealIp,
}

impl Header {
    /// The header's name, lower case.
    pub const fn name(self) -> &'static str {
        match self {
            Header::Forwarded => "forwarded",
            Header::XForwardedFor => "x-forwarded-for",
            Header::CfConnectingIp => "cf-connecting-ip",
            Header::TrueClientIp => "true-client-ip",
            Header::XRealIp => "x-real-ip",
        }
    }
}

/// How a limiter tells clients apart by address: what its builder's `ipv6_prefix`,
/// `trusted_proxies` and `forwarding_headers` set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientSettings {
    /// How many leading bits of an IPv6 address are one client (56 by default: a home's or
    /// a small office's delegated prefix).
    pub ipv6_prefix: u8,
    /// The proxies whose forwarding headers are believed (none by default).
    pub trusted_proxies: TrustedProxies,
    /// Which forwarding header those proxies write.
    pub forwarding_headers: ForwardingHeaders,
}

impl Default for ClientSettings {
    fn default() -> ClientSettings {
        ClientSettings {
            ipv6_prefix: 56,
            trusted_proxies: TrustedProxies::none(),
            forwarding_headers: ForwardingHeaders::XForwardedFor,
        }
    }
}

/// Why a request's client could not be told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyError {
    /// The request carries no usable peer address, so no client can be told apart.
    NoClientAddress,
    /// The trusted proxy's forwarding headers name different clients.
    Contradiction(Contradiction),
}

impl std::fmt::Display for KeyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyError::NoClientAddress => f.write_str("the request has no peer address"),
            KeyError::Contradiction(contradiction) => contradiction.fmt(f),
        }
    }
}

impl std::error::Error for KeyError {}

/// The client's address as a key: the peer, or the address a trusted proxy vouched for;
/// IPv4-mapped IPv6 counted as IPv4, IPv6 cut to its prefix, ports ignored.
pub fn ip_key(req: &impl RequestHead, settings: &ClientSettings) -> Result<ClientKey, KeyError> {
    match client(req, settings)? {
        Client::Address(ip) => Ok(ip_key_of(ip, settings.ipv6_prefix)),
        Client::Obfuscated(id) => Ok(ClientKey::tagged(tag::OBFUSCATED, id.as_bytes())),
    }
}

/// Who `req` comes from, as the limiter counts it: its peer, or the client a trusted proxy
/// vouched for. The setups that cannot be what their author meant (forwarding headers from
/// an untrusted private peer, a trusted proxy that says nothing, a header passed through)
/// are reported once each, as `warn` events naming the fix.
pub fn client(req: &impl RequestHead, settings: &ClientSettings) -> Result<Client, KeyError> {
    let peer = req.peer_ip().ok_or(KeyError::NoClientAddress)?;
    let trusted = &settings.trusted_proxies;
    if trusted.is_empty() {
        mistakes::forwarded_by_an_untrusted_private_peer(peer, || {
            req.header_values(Header::XForwardedFor).next().is_some()
                || req.header_values(Header::Forwarded).next().is_some()
        });
        return Ok(Client::Address(unmap(peer)));
    }
    if !trusted.contains(peer) {
        return Ok(Client::Address(unmap(peer)));
    }
    let headers = settings.forwarding_headers;
    if let Some(header) = one_address_header(headers) {
        let named = one_address(req, header);
        mistakes::trusted_proxy_said(named.is_some(), false);
        return Ok(Client::Address(named.unwrap_or(unmap(peer))));
    }
    let forwarded = Values::of(req, Header::Forwarded);
    let x_forwarded_for = Values::of(req, Header::XForwardedFor);
    let (fwd, xff) = (forwarded.as_slice(), x_forwarded_for.as_slice());
    let (read, other) = match headers {
        ForwardingHeaders::Both => (!fwd.is_empty() || !xff.is_empty(), false),
        ForwardingHeaders::Forwarded => (!fwd.is_empty(), !xff.is_empty()),
        ForwardingHeaders::XForwardedFor => (!xff.is_empty(), !fwd.is_empty()),
        // Read above.
        ForwardingHeaders::CfConnectingIp
        | ForwardingHeaders::TrueClientIp
        | ForwardingHeaders::XRealIp => (true, false),
    };
    mistakes::trusted_proxy_said(read, other);
    let client = client_of(peer, fwd, xff, trusted, headers).map_err(KeyError::Contradiction)?;
    // The header not believed, passed through: if it names another client, say so once.
    if other && !mistakes::passed_through_reported() {
        let ignored = match headers {
            ForwardingHeaders::XForwardedFor => ForwardingHeaders::Forwarded,
            _ => ForwardingHeaders::XForwardedFor,
        };
        if let Ok(said) = client_of(peer, fwd, xff, trusted, ignored) {
            if said != client && said != Client::Address(unmap(peer)) {
                mistakes::passed_through_header(headers, &client, &said);
            }
        }
    }
    Ok(client)
}

/// The one-address header `headers` names, if it is one.
fn one_address_header(headers: ForwardingHeaders) -> Option<Header> {
    match headers {
        ForwardingHeaders::CfConnectingIp => Some(Header::CfConnectingIp),
        ForwardingHeaders::TrueClientIp => Some(Header::TrueClientIp),
        ForwardingHeaders::XRealIp => Some(Header::XRealIp),
        _ => None,
    }
}

/// The address a one-address header of `req` names: `None` when it is absent, repeated (a
/// proxy that replaces it sends one) or not an address.
fn one_address(req: &impl RequestHead, header: Header) -> Option<IpAddr> {
    let mut values = req.header_values(header);
    let value = values.next()?;
    if values.next().is_some() {
        return None;
    }
    // As `HeaderValue::to_str`: visible ASCII only.
    let text = std::str::from_utf8(value)
        .ok()
        .filter(|text| {
            text.bytes()
                .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
        })?
        .trim();
    // `[2001:db8::1]` as some proxies write an IPv6 address.
    let text = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .unwrap_or(text);
    text.parse::<IpAddr>().ok().map(unmap)
}

/// A header's values; the usual single one without allocating.
enum Values<'a> {
    One([&'a [u8]; 1]),
    Many(Vec<&'a [u8]>),
}

impl<'a> Values<'a> {
    fn of(req: &'a impl RequestHead, header: Header) -> Values<'a> {
        let mut all = req.header_values(header);
        match (all.next(), all.next()) {
            (None, _) => Values::Many(Vec::new()),
            (Some(one), None) => Values::One([one]),
            (Some(first), Some(second)) => {
                let mut many = vec![first, second];
                many.extend(all);
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
