//! The key logic's cases: each front end must read the peer and the headers so that the
//! same request is the same client.

use std::net::IpAddr;

use crate::TrustedProxies;
use crate::{client, ip_key, Client, ClientSettings, ForwardingHeaders, KeyError, RequestHead};

/// One case: its name, the peer, the header fields, the settings, the client expected.
type Case<'a> = (
    &'a str,
    Option<IpAddr>,
    Vec<(&'a str, &'a [u8])>,
    ClientSettings,
    Result<Client, KeyError>,
);

/// Runs every case through `make`, which builds a request of the front end's type from a
/// peer address (none: a request without one) and header fields (name, value) in order;
/// panics, naming the case, at the first answer that is not the one expected.
pub fn run_all<R: RequestHead>(make: impl Fn(Option<IpAddr>, &[(&str, &[u8])]) -> R) {
    let ip = |text: &str| text.parse::<IpAddr>().expect("an address");
    let behind = |headers: ForwardingHeaders| ClientSettings {
        trusted_proxies: TrustedProxies::parse(["10.0.0.0/8", "fd00::/8"]).expect("networks"),
        forwarding_headers: headers,
        ..ClientSettings::default()
    };
    let direct = ClientSettings::default();
    let addr = |text: &str| Ok(Client::Address(ip(text)));
    let proxy = Some(ip("10.0.0.1"));
    let cases: Vec<Case<'_>> = vec![
        (
            "no peer",
            None,
            vec![],
            direct.clone(),
            Err(KeyError::NoClientAddress),
        ),
        (
            "the peer, trusting none",
            Some(ip("203.0.113.9")),
            vec![("x-forwarded-for", b"6.6.6.6")],
            direct.clone(),
            addr("203.0.113.9"),
        ),
        (
            "a mapped peer is IPv4",
            Some(ip("::ffff:203.0.113.9")),
            vec![],
            direct.clone(),
            addr("203.0.113.9"),
        ),
        (
            "an untrusted peer's header is ignored",
            Some(ip("198.51.100.1")),
            vec![("x-forwarded-for", b"6.6.6.6")],
            behind(ForwardingHeaders::XForwardedFor),
            addr("198.51.100.1"),
        ),
        (
            "rightmost untrusted",
            proxy,
            vec![("x-forwarded-for", b"6.6.6.6, 203.0.113.9, 10.1.1.1")],
            behind(ForwardingHeaders::XForwardedFor),
            addr("203.0.113.9"),
        ),
        (
            "repeated fields read as one list",
            proxy,
            vec![
                ("x-forwarded-for", b"6.6.6.6"),
                ("x-forwarded-for", b"203.0.113.9"),
            ],
            behind(ForwardingHeaders::XForwardedFor),
            addr("203.0.113.9"),
        ),
        (
            "header names in any case",
            proxy,
            vec![("X-Forwarded-For", b"203.0.113.9")],
            behind(ForwardingHeaders::XForwardedFor),
            addr("203.0.113.9"),
        ),
        (
            "Forwarded when believed",
            proxy,
            vec![
                ("forwarded", b"for=\"[2001:db8::1]:80\""),
                ("x-forwarded-for", b"6.6.6.6"),
            ],
            behind(ForwardingHeaders::Forwarded),
            addr("2001:db8::1"),
        ),
        (
            "Forwarded ignored by default",
            proxy,
            vec![
                ("forwarded", b"for=6.6.6.6"),
                ("x-forwarded-for", b"203.0.113.9"),
            ],
            behind(ForwardingHeaders::XForwardedFor),
            addr("203.0.113.9"),
        ),
        (
            "both, agreeing",
            proxy,
            vec![
                ("forwarded", b"for=203.0.113.9"),
                ("x-forwarded-for", b"203.0.113.9"),
            ],
            behind(ForwardingHeaders::Both),
            addr("203.0.113.9"),
        ),
        (
            "a trusted proxy saying nothing is the client",
            proxy,
            vec![],
            behind(ForwardingHeaders::XForwardedFor),
            addr("10.0.0.1"),
        ),
        (
            "obfuscated",
            proxy,
            vec![("forwarded", b"for=_hidden")],
            behind(ForwardingHeaders::Forwarded),
            Ok(Client::Obfuscated("_hidden".into())),
        ),
        (
            "one-address header",
            proxy,
            vec![("cf-connecting-ip", b" 203.0.113.9 ")],
            behind(ForwardingHeaders::CfConnectingIp),
            addr("203.0.113.9"),
        ),
        (
            "one-address header, bracketed IPv6",
            proxy,
            vec![("true-client-ip", b"[2001:db8::1]")],
            behind(ForwardingHeaders::TrueClientIp),
            addr("2001:db8::1"),
        ),
        (
            "one-address header, repeated: the peer",
            proxy,
            vec![("x-real-ip", b"203.0.113.9"), ("x-real-ip", b"6.6.6.6")],
            behind(ForwardingHeaders::XRealIp),
            addr("10.0.0.1"),
        ),
        (
            "one-address header, not an address: the peer",
            proxy,
            vec![("x-real-ip", b"203.0.113.9, 6.6.6.6")],
            behind(ForwardingHeaders::XRealIp),
            addr("10.0.0.1"),
        ),
        (
            "one-address header, not ASCII: the peer",
            proxy,
            vec![("x-real-ip", "203.0.113.9\u{a0}".as_bytes())],
            behind(ForwardingHeaders::XRealIp),
            addr("10.0.0.1"),
        ),
        (
            "one-address header, absent: the peer",
            proxy,
            vec![("x-forwarded-for", b"6.6.6.6")],
            behind(ForwardingHeaders::XRealIp),
            addr("10.0.0.1"),
        ),
    ];
    for (case, peer, headers, settings, expected) in cases {
        let req = make(peer, &headers);
        assert_eq!(client(&req, &settings), expected, "{case}");
    }
    // Contradicting headers name both clients.
    let settings = behind(ForwardingHeaders::Both);
    let req = make(
        proxy,
        &[
            ("forwarded", b"for=6.6.6.6"),
            ("x-forwarded-for", b"203.0.113.9"),
        ],
    );
    assert!(
        matches!(client(&req, &settings), Err(KeyError::Contradiction(_))),
        "both, contradicting"
    );
    // Keys: IPv6 by prefix, mapped IPv4 as IPv4, an obfuscated node in a namespace of its own.
    let key = |peer: &str, settings: &ClientSettings| {
        ip_key(&make(Some(ip(peer)), &[]), settings).map(|k| k.as_bytes().to_vec())
    };
    // Literal bytes: the keys on a shared store must never change.
    let mut by_56 = vec![b'6', 56, 0x20, 0x01, 0x0d, 0xb8, 0, 1, 2, 0];
    by_56.extend_from_slice(&[0; 8]);
    assert_eq!(
        key("2001:db8:1:2ff::1", &direct),
        Ok(by_56),
        "IPv6 by its /56"
    );
    let v4 = vec![b'4', 203, 0, 113, 9];
    // A prefix past 128 is 128, in the key's bytes too.
    let whole = ClientSettings {
        ipv6_prefix: 200,
        ..ClientSettings::default()
    };
    let mut by_128 = vec![b'6', 128, 0x20, 0x01, 0x0d, 0xb8, 0, 1, 2, 0xff];
    by_128.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 1]);
    assert_eq!(
        key("2001:db8:1:2ff::1", &whole),
        Ok(by_128),
        "IPv6 by its /128"
    );
    assert_eq!(key("::ffff:203.0.113.9", &direct), Ok(v4), "mapped IPv4");
    let hidden = make(proxy, &[("forwarded", b"for=_hidden")]);
    let hidden = ip_key(&hidden, &behind(ForwardingHeaders::Forwarded)).expect("a key");
    assert_eq!(hidden.as_bytes(), b"o_hidden", "obfuscated");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Field, FieldMap, Header};

    /// The simplest request: what a front end's own type must read like.
    struct Plain {
        peer: Option<IpAddr>,
        headers: Vec<(String, Vec<u8>)>,
    }

    impl RequestHead for Plain {
        fn peer_ip(&self) -> Option<IpAddr> {
            self.peer
        }

        fn header_values(&self, header: Header) -> impl Iterator<Item = &[u8]> {
            self.headers
                .iter()
                .filter(move |(name, _)| name.eq_ignore_ascii_case(header.name()))
                .map(|(_, value)| value.as_slice())
        }
    }

    /// The simplest header map.
    #[derive(Default)]
    struct PlainMap(Vec<(Field, Vec<u8>)>);

    impl FieldMap for PlainMap {
        type Value = Vec<u8>;

        fn insert(&mut self, field: Field, value: Vec<u8>) {
            self.0.retain(|(f, _)| *f != field);
            self.0.push((field, value));
        }

        fn get(&self, field: Field) -> Option<&Vec<u8>> {
            self.0.iter().find(|(f, _)| *f == field).map(|(_, v)| v)
        }

        fn value(bytes: bytes::Bytes) -> Option<Vec<u8>> {
            Some(bytes.to_vec())
        }

        fn value_static(text: &'static str) -> Vec<u8> {
            text.as_bytes().to_vec()
        }

        fn bytes_of(value: &Vec<u8>) -> &[u8] {
            value
        }
    }

    #[test]
    fn the_answers_on_a_plain_map() {
        crate::conformance::run_answers(PlainMap::default);
    }

    #[test]
    fn the_key_logic_on_plain_requests() {
        run_all(|peer, headers| Plain {
            peer,
            headers: headers
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_vec()))
                .collect(),
        });
    }
}
