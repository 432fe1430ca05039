//! Which client a request comes from when it passed through proxies you run.
//!
//! `Forwarded` (RFC 7239) and `X-Forwarded-For` are believed only when the peer is a trusted
//! proxy, and only as far as they were written by trusted proxies: reading from the right,
//! entries naming trusted proxies are skipped, and the first entry that is not one is the
//! client — the address the outermost trusted proxy saw. Everything left of it was written
//! by the client and is ignored, so a client cannot pick its own key.
//!
//! Headers are read from the right and only as far as needed, so nothing a client writes
//! further left — however long, however malformed — changes who it is counted as. When
//! both headers are read, a definite answer from one wins over a header that says nothing
//! usable (absent, `unknown`, or unreadable where it matters: a client may forge the header
//! your proxy does not write); two headers that name **different** clients are a
//! contradiction the request cannot be counted through ([`Contradiction`]). A header whose
//! trusted part cannot be read (which only a misconfigured proxy writes), or more than
//! [`MAX_HOPS`] trusted entries, count the request against the peer: the proxy it came
//! through.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;

use ipnet::IpNet;

/// How many entries of a forwarding header are read, from the right, at most.
pub const MAX_HOPS: usize = 32;

/// The networks whose forwarding headers are believed.
///
/// ```
/// use limiter::TrustedProxies;
/// let trusted = TrustedProxies::parse(["10.0.0.0/8", "192.0.2.7"])?;
/// assert!(trusted.contains("10.1.2.3".parse()?));
/// assert!(trusted.contains("::ffff:192.0.2.7".parse()?)); // IPv4-mapped counts as IPv4
/// assert!(!trusted.contains("203.0.113.9".parse()?));
/// assert!(TrustedProxies::parse(["10.0.0.0/33"]).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies {
    nets: Vec<IpNet>,
}

impl TrustedProxies {
    /// Trusts nobody: forwarding headers are never read.
    pub fn none() -> TrustedProxies {
        TrustedProxies::default()
    }

    /// Trusts these addresses and networks (`"10.0.0.0/8"`, `"::1"`, an [`IpNet`] or an
    /// [`IpAddr`]), or says which entry is not one.
    ///
    /// Addresses are compared as clients are counted: IPv4-mapped IPv6 as IPv4. So a network
    /// written in the mapped form (`"::ffff:10.0.0.0/104"`) trusts those IPv4 addresses, and
    /// an IPv6 network spanning the mapped range (`"::/0"`) trusts all of IPv4 too.
    pub fn parse<I>(list: I) -> Result<TrustedProxies, InvalidNetwork>
    where
        I: IntoIterator,
        I::Item: ProxyNet,
    {
        let mut nets = Vec::new();
        for item in list {
            let net = item.to_net()?;
            nets.push(net);
            if let Some(v4) = mapped_part(net) {
                nets.push(v4);
            }
        }
        Ok(TrustedProxies { nets })
    }

    /// Whether `ip` belongs to a trusted proxy.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = unmap(ip);
        self.nets.iter().any(|net| net.contains(&ip))
    }

    /// Whether no proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.nets.is_empty()
    }
}

/// Something that names a trusted network: a CIDR or address string, an [`IpNet`], an
/// [`IpAddr`].
pub trait ProxyNet {
    /// The network, or the reason it is not one.
    fn to_net(self) -> Result<IpNet, InvalidNetwork>;
}

impl ProxyNet for &str {
    fn to_net(self) -> Result<IpNet, InvalidNetwork> {
        let text = self.trim();
        if let Ok(net) = IpNet::from_str(text) {
            return Ok(net.trunc());
        }
        IpAddr::from_str(text)
            .map(|ip| IpNet::from(unmap(ip)))
            .map_err(|_| InvalidNetwork {
                entry: self.to_string(),
            })
    }
}

impl ProxyNet for String {
    fn to_net(self) -> Result<IpNet, InvalidNetwork> {
        self.as_str().to_net()
    }
}

impl ProxyNet for &String {
    fn to_net(self) -> Result<IpNet, InvalidNetwork> {
        self.as_str().to_net()
    }
}

impl ProxyNet for IpNet {
    fn to_net(self) -> Result<IpNet, InvalidNetwork> {
        Ok(self.trunc())
    }
}

impl ProxyNet for IpAddr {
    fn to_net(self) -> Result<IpNet, InvalidNetwork> {
        Ok(IpNet::from(unmap(self)))
    }
}

/// An entry of a list of addresses (trusted proxies, exempt clients) that is neither an
/// address nor a CIDR.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidNetwork {
    entry: String,
}

impl InvalidNetwork {
    /// The entry, as written.
    pub fn entry(&self) -> &str {
        &self.entry
    }
}

impl fmt::Display for InvalidNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not an address or a CIDR (such as \"10.0.0.0/8\" or \"fd00::/8\")",
            self.entry
        )
    }
}

impl std::error::Error for InvalidNetwork {}

/// Which forwarding header the trusted proxies write: the one believed.
///
/// A proxy passes on what it did not write: a client's own `Forwarded` (added by the
/// client's office proxy, say) reaches you beside the `X-Forwarded-For` your nginx wrote.
/// So one header is believed, the one your proxy writes, and the other is ignored — it
/// never turns a request into an error; when it names another client, that is reported
/// once as a `warn` event naming this setting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ForwardingHeaders {
    /// `X-Forwarded-For`: what nginx, HAProxy, Envoy and the cloud balancers write (the
    /// default).
    #[default]
    XForwardedFor,
    /// `Forwarded` (RFC 7239).
    Forwarded,
    /// Both, for a deployment whose proxies write both: when both name a client they must
    /// name the same one, and a request whose two headers contradict each other is refused
    /// (400: it cannot be counted through them). Strict: a client's own `Forwarded` passed
    /// through by a proxy that writes only `X-Forwarded-For` gets that client a 400.
    Both,
    /// `CF-Connecting-IP`: Cloudflare's one address of the client (it replaces any the
    /// client sent). A one-address header: nothing to walk; a request from a trusted peer
    /// whose header is absent, repeated or not an address is counted by the peer.
    CfConnectingIp,
    /// `True-Client-IP`: Akamai's (and Cloudflare Enterprise's) one address of the client.
    TrueClientIp,
    /// `X-Real-IP`: nginx's `proxy_set_header X-Real-IP $remote_addr`, one address.
    XRealIp,
}

/// The IPv4 networks an IPv6 network covers through the mapped range `::ffff:0:0/96`.
fn mapped_part(net: IpNet) -> Option<IpNet> {
    let IpNet::V6(v6) = net else {
        return None;
    };
    const MAPPED: u128 = 0xffff << 32;
    let bits = u128::from(v6.network());
    let prefix = v6.prefix_len();
    if prefix >= 96 {
        // Inside the mapped range, or not in it at all.
        (bits >> 32 == MAPPED >> 32).then(|| {
            let v4 = std::net::Ipv4Addr::from(bits as u32);
            IpNet::V4(ipnet::Ipv4Net::new(v4, prefix - 96).unwrap_or_default())
        })
    } else {
        // Spans the whole mapped range, or none of it.
        let mask = u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0);
        (MAPPED & mask == bits).then(|| IpNet::V4(ipnet::Ipv4Net::default()))
    }
}

/// Who a request is counted as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Client {
    /// An address: the peer's, or one a trusted proxy vouched for.
    Address(IpAddr),
    /// An obfuscated identifier (`for=_hidden`) a trusted proxy gave the client.
    Obfuscated(String),
}

/// A trusted proxy's `Forwarded` and `X-Forwarded-For` name different clients. One of them
/// was written by the client (your proxy writes only the other): the request cannot be
/// counted through them. Name the header your proxy writes with
/// `LimiterBuilder::forwarding_headers` (in the facade, `limiter`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Contradiction {
    /// What `Forwarded` says.
    pub forwarded: Client,
    /// What `X-Forwarded-For` says.
    pub x_forwarded_for: Client,
}

impl fmt::Display for Contradiction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Forwarded names {:?} and X-Forwarded-For names {:?}",
            self.forwarded, self.x_forwarded_for
        )
    }
}

impl std::error::Error for Contradiction {}

/// What one forwarding header says.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Said {
    Nothing,
    Client(Client),
    /// The hop would not say who it is (`unknown`, or no `for`): the proxy that reported it
    /// is all that is known.
    Unknown(IpAddr),
    Unreadable,
}

/// One `for` node of a header, as written.
enum Node<'a> {
    Ip(IpAddr),
    Obfuscated(&'a str),
    Unknown,
}

/// The client of a request from `peer`, given the values of its `Forwarded` and
/// `X-Forwarded-For` header fields (each in the order received).
///
/// ```
/// use limiter::{client_of, Client, ForwardingHeaders, TrustedProxies};
/// let trusted = TrustedProxies::parse(["10.0.0.0/8"])?;
/// let peer = "10.0.0.1".parse()?;
/// // The client forged the left-most entry; the proxy appended what it saw.
/// let xff: [&[u8]; 1] = [b"6.6.6.6, 203.0.113.9"];
/// let client = client_of(peer, &[], &xff, &trusted, ForwardingHeaders::Both)?;
/// assert_eq!(client, Client::Address("203.0.113.9".parse()?));
/// // A forged Forwarded that contradicts it cannot pick another key.
/// let forged: [&[u8]; 1] = [b"for=6.6.6.6"];
/// assert!(client_of(peer, &forged, &xff, &trusted, ForwardingHeaders::Both).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn client_of(
    peer: IpAddr,
    forwarded: &[&[u8]],
    x_forwarded_for: &[&[u8]],
    trusted: &TrustedProxies,
    headers: ForwardingHeaders,
) -> Result<Client, Contradiction> {
    let peer = unmap(peer);
    if !trusted.contains(peer) {
        return Ok(Client::Address(peer));
    }
    let from_forwarded = || walk(peer, forwarded, trusted, forwarded_nodes);
    let from_xff = || walk(peer, x_forwarded_for, trusted, xff_nodes);
    let said = match headers {
        // One-address headers are read by `crate::client`: none of these.
        ForwardingHeaders::CfConnectingIp
        | ForwardingHeaders::TrueClientIp
        | ForwardingHeaders::XRealIp => Said::Nothing,
        ForwardingHeaders::Forwarded => from_forwarded(),
        ForwardingHeaders::XForwardedFor => from_xff(),
        ForwardingHeaders::Both => match (from_forwarded(), from_xff()) {
            (Said::Client(a), Said::Client(b)) if a == b => Said::Client(a),
            (Said::Client(a), Said::Client(b)) => {
                return Err(Contradiction {
                    forwarded: a,
                    x_forwarded_for: b,
                })
            }
            // A definite answer wins over a header that says nothing usable.
            (Said::Client(c), _) | (_, Said::Client(c)) => Said::Client(c),
            (Said::Unknown(a), _) | (_, Said::Unknown(a)) => Said::Unknown(a),
            (Said::Unreadable, _) | (_, Said::Unreadable) => Said::Unreadable,
            (Said::Nothing, Said::Nothing) => Said::Nothing,
        },
    };
    Ok(match said {
        Said::Client(client) => client,
        Said::Unknown(hop) => Client::Address(hop),
        Said::Nothing | Said::Unreadable => Client::Address(peer),
    })
}

/// Walks a header's nodes from the right; see the module documentation. `nodes` gives a
/// value's entries right to left, lazily: what lies left of the client is never looked at.
fn walk<'a, I>(
    peer: IpAddr,
    values: &[&'a [u8]],
    trusted: &TrustedProxies,
    nodes: fn(&'a [u8]) -> I,
) -> Said
where
    I: Iterator<Item = Option<Node<'a>>>,
{
    if values.is_empty() {
        return Said::Nothing;
    }
    let mut last_trusted = peer;
    let mut seen = 0;
    for value in values.iter().rev() {
        for entry in nodes(value) {
            seen += 1;
            if seen > MAX_HOPS {
                return Said::Unreadable;
            }
            match entry {
                None => return Said::Unreadable,
                Some(Node::Ip(ip)) if trusted.contains(ip) => last_trusted = unmap(ip),
                Some(Node::Ip(ip)) => return Said::Client(Client::Address(unmap(ip))),
                Some(Node::Obfuscated(id)) => {
                    return Said::Client(Client::Obfuscated(id.to_string()))
                }
                Some(Node::Unknown) => return Said::Unknown(last_trusted),
            }
        }
    }
    if seen == 0 {
        return Said::Nothing;
    }
    // Every entry is one of our proxies: the request started at the left-most one.
    Said::Client(Client::Address(last_trusted))
}

/// The entries of one `X-Forwarded-For` value, right to left: addresses, optionally with a
/// port. `None` for an entry that is not one.
fn xff_nodes(value: &[u8]) -> impl Iterator<Item = Option<Node<'_>>> {
    value.rsplit(|&b| b == b',').map(|entry| {
        if let Some(ip) = crate::dotted_quad::plain_ipv4(entry) {
            return Some(Node::Ip(IpAddr::V4(ip)));
        }
        let entry = std::str::from_utf8(entry).ok()?.trim();
        if entry.eq_ignore_ascii_case("unknown") {
            Some(Node::Unknown)
        } else {
            parse_address(entry).map(Node::Ip)
        }
    })
}

/// The `for` nodes of one `Forwarded` value (RFC 7239 §4), right to left: elements separated
/// by commas, pairs by semicolons, values tokens or quoted strings. An element is `None`
/// when its node is malformed.
fn forwarded_nodes(value: &[u8]) -> impl Iterator<Item = Option<Node<'_>>> {
    ElementsFromTheRight {
        value,
        end: value.len(),
        done: false,
    }
    .map(|element| {
        let element = std::str::from_utf8(element).ok()?;
        let mut node = Some(Node::Unknown); // an element without `for` names no one
        for pair in split_outside_quotes(element, ';')? {
            let Some((name, value)) = pair.split_once('=') else {
                if pair.trim().is_empty() {
                    continue;
                }
                return None;
            };
            if name.trim().eq_ignore_ascii_case("for") {
                node = unquote(value.trim()).and_then(parse_forwarded_node);
            }
        }
        node
    })
}

/// A `Forwarded` value's elements, from the right: split on commas outside quoted strings.
/// Quotes are matched from the right too, so a malformed element further left (an open
/// quote a client wrote) cannot swallow the elements the proxies appended after it.
struct ElementsFromTheRight<'a> {
    value: &'a [u8],
    end: usize,
    done: bool,
}

impl<'a> Iterator for ElementsFromTheRight<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.done {
            return None;
        }
        let mut quoted = false;
        let mut i = self.end;
        while i > 0 {
            i -= 1;
            match self.value[i] {
                b'"' if !escaped(&self.value[..i]) => quoted = !quoted,
                b',' if !quoted => {
                    let element = &self.value[i + 1..self.end];
                    self.end = i;
                    return Some(element);
                }
                _ => {}
            }
        }
        self.done = true;
        Some(&self.value[..self.end])
    }
}

/// Whether the byte after `preceding` is escaped: preceded by an odd run of backslashes.
fn escaped(preceding: &[u8]) -> bool {
    preceding.iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
}

/// Splits on `separator` outside double quotes; `None` for an unterminated quote.
fn split_outside_quotes(text: &str, separator: char) -> Option<Vec<&str>> {
    let mut parts = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c == separator && !quoted => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if quoted {
        return None;
    }
    parts.push(&text[start..]);
    Some(parts)
}

/// A token, or a quoted string without escapes (no node needs one).
fn unquote(value: &str) -> Option<&str> {
    match value.strip_prefix('"') {
        Some(rest) => rest.strip_suffix('"').filter(|inner| !inner.contains('\\')),
        None => Some(value),
    }
}

/// `for=` node (RFC 7239 §6): `unknown`, `_obfuscated`, `1.2.3.4[:port]`,
/// `[2001:db8::1][:port]`.
fn parse_forwarded_node(node: &str) -> Option<Node<'_>> {
    if node.eq_ignore_ascii_case("unknown") {
        return Some(Node::Unknown);
    }
    if node.starts_with('_') {
        let valid = node.len() <= 64
            && node
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-');
        return valid.then_some(Node::Obfuscated(node));
    }
    parse_address(node).map(Node::Ip)
}

/// An address with an optional port: `1.2.3.4`, `1.2.3.4:80`, `2001:db8::1`,
/// `[2001:db8::1]`, `[2001:db8::1]:80`; an obfuscated port (`:_x`) is accepted too.
fn parse_address(text: &str) -> Option<IpAddr> {
    if let Ok(ip) = IpAddr::from_str(text) {
        return Some(ip);
    }
    if let Ok(addr) = SocketAddr::from_str(text) {
        return Some(addr.ip());
    }
    if let Some(rest) = text.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let port_ok = after.is_empty()
            || after
                .strip_prefix(':')
                .is_some_and(|p| !p.is_empty() && p.len() <= 16);
        return port_ok
            .then(|| inside.parse::<std::net::Ipv6Addr>().ok().map(IpAddr::V6))
            .flatten();
    }
    let (host, port) = text.rsplit_once(':')?;
    let port_ok = port.starts_with('_') && port.len() <= 16;
    port_ok
        .then(|| host.parse::<std::net::Ipv4Addr>().ok().map(IpAddr::V4))
        .flatten()
}

/// IPv4-mapped IPv6 is the IPv4 address it carries.
pub(crate) fn unmap(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn trusted() -> TrustedProxies {
        TrustedProxies::parse(["10.0.0.0/8", "fd00::/8"]).unwrap()
    }

    fn via_forwarded(value: &str) -> Client {
        client_of(
            ip("10.0.0.1"),
            &[value.as_bytes()],
            &[],
            &trusted(),
            ForwardingHeaders::Both,
        )
        .unwrap()
    }

    #[test]
    fn reads_rfc_7239_nodes() {
        let addr = |s| Client::Address(ip(s));
        assert_eq!(
            via_forwarded("for=192.0.2.60;proto=http;by=203.0.113.43"),
            addr("192.0.2.60")
        );
        assert_eq!(
            via_forwarded("For=\"[2001:db8:cafe::17]:4711\""),
            addr("2001:db8:cafe::17")
        );
        assert_eq!(via_forwarded("for=\"[2001:db8::1]\""), addr("2001:db8::1"));
        assert_eq!(
            via_forwarded("for=192.0.2.43, for=198.51.100.17"),
            addr("198.51.100.17")
        );
        assert_eq!(
            via_forwarded("for=198.51.100.17, for=10.0.0.9"),
            addr("198.51.100.17")
        );
        assert_eq!(
            via_forwarded("for=\"192.0.2.43:_port\""),
            addr("192.0.2.43")
        );
        assert_eq!(
            via_forwarded("for=_hidden"),
            Client::Obfuscated("_hidden".into())
        );
        // `unknown` next to us: the proxy that reported it is what we can count.
        assert_eq!(via_forwarded("for=unknown, for=10.0.0.5"), addr("10.0.0.5"));
        assert_eq!(via_forwarded("proto=https"), addr("10.0.0.1"));
    }

    #[test]
    fn unreadable_headers_count_against_the_peer() {
        let peer = Client::Address(ip("10.0.0.1"));
        assert_eq!(via_forwarded("for=\"192.0.2.1"), peer); // unterminated quote
        assert_eq!(via_forwarded("for=not-an-address"), peer);
        // ...unless the part that matters is readable: a client's open quote on the left
        // cannot swallow what the proxy appended.
        assert_eq!(
            via_forwarded("for=\"6.6.6.6, for=192.0.2.1"),
            Client::Address(ip("192.0.2.1"))
        );
        // Unquoted brackets break the grammar, but a trusted proxy wrote them: read leniently.
        assert_eq!(
            via_forwarded("for=[2001:db8::1]:80"),
            Client::Address(ip("2001:db8::1"))
        );
        let many = vec!["for=10.0.0.2"; MAX_HOPS + 1].join(", ");
        assert_eq!(via_forwarded(&many), peer);
    }

    #[test]
    fn an_untrusted_peer_is_the_client_whatever_it_sends() {
        let client = client_of(
            ip("203.0.113.7"),
            &[b"for=1.1.1.1"],
            &[b"2.2.2.2"],
            &trusted(),
            ForwardingHeaders::Both,
        );
        assert_eq!(client, Ok(Client::Address(ip("203.0.113.7"))));
    }

    #[test]
    fn contradictory_headers_are_refused_and_silent_ones_give_way() {
        let both = |fwd: &str, xff: &str, which| {
            client_of(
                ip("10.0.0.1"),
                &[fwd.as_bytes()],
                &[xff.as_bytes()],
                &trusted(),
                which,
            )
        };
        let client = Ok(Client::Address(ip("198.51.100.1")));
        assert_eq!(
            both("for=198.51.100.1", "198.51.100.1", ForwardingHeaders::Both),
            client
        );
        assert_eq!(
            both("for=6.6.6.6", "198.51.100.1", ForwardingHeaders::Both),
            Err(Contradiction {
                forwarded: Client::Address(ip("6.6.6.6")),
                x_forwarded_for: Client::Address(ip("198.51.100.1")),
            })
        );
        assert_eq!(
            both(
                "for=6.6.6.6",
                "198.51.100.1",
                ForwardingHeaders::XForwardedFor
            ),
            client
        );
        // A Forwarded that names nobody, or cannot be read, leaves the answer to the other.
        for silent in [
            "proto=https",
            "for=unknown",
            "for=\"open",
            "for=[::1",
            "garbage",
        ] {
            assert_eq!(
                both(silent, "198.51.100.1", ForwardingHeaders::Both),
                client,
                "{silent}"
            );
        }
        assert_eq!(
            both(
                "for=198.51.100.1",
                "not an address",
                ForwardingHeaders::Both
            ),
            client
        );
    }

    #[test]
    fn long_or_non_utf8_left_parts_are_never_read() {
        let xff = format!("{}, 198.51.100.1, 10.0.0.2", "6.6.6.6, ".repeat(1_000));
        let mut bytes = vec![0xff, 0xfe, b','];
        bytes.extend_from_slice(b" 198.51.100.1");
        for value in [xff.as_bytes(), &bytes] {
            let client = client_of(
                ip("10.0.0.1"),
                &[],
                &[value],
                &trusted(),
                ForwardingHeaders::Both,
            );
            assert_eq!(client, Ok(Client::Address(ip("198.51.100.1"))));
        }
    }

    #[test]
    fn mapped_networks_trust_what_they_map() {
        let mapped = TrustedProxies::parse(["::ffff:10.0.0.0/104"]).unwrap();
        assert!(mapped.contains(ip("10.1.2.3")));
        assert!(mapped.contains(ip("::ffff:10.1.2.3")));
        assert!(!mapped.contains(ip("11.1.2.3")));
        let all = TrustedProxies::parse(["::/0"]).unwrap();
        assert!(all.contains(ip("192.0.2.1")));
        let unrelated = TrustedProxies::parse(["2001:db8::/32"]).unwrap();
        assert!(!unrelated.contains(ip("192.0.2.1")));
    }

    #[test]
    fn bad_proxy_entries_are_named() {
        let err = TrustedProxies::parse(["10.0.0.0/8", "10.0.0.0/40"]).unwrap_err();
        assert_eq!(err.entry(), "10.0.0.0/40");
        assert!(err.to_string().contains("`10.0.0.0/40`"));
    }
}
