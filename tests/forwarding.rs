//! Forwarding headers under attack: random, huge and hostile values never panic, and the
//! client is always the peer or an address a trusted proxy vouched for.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use std::net::IpAddr;

use limiter::{client_of, Client, ForwardingHeaders, TrustedProxies};
use proptest::prelude::*;

fn trusted() -> TrustedProxies {
    TrustedProxies::parse(["10.0.0.0/8", "fd00::/8"]).unwrap()
}

fn header_value() -> impl Strategy<Value = String> {
    prop_oneof![
        // Plausible pieces, glued by commas, semicolons, quotes and spaces.
        prop::collection::vec(
            prop_oneof![
                Just("10.0.0.2".to_string()),
                Just("fd00::9".to_string()),
                Just("203.0.113.9".to_string()),
                Just("[2001:db8::1]:443".to_string()),
                Just("for=198.51.100.7".to_string()),
                Just("for=\"[2001:db8::7]\"".to_string()),
                Just("for=10.0.0.3".to_string()),
                Just("for=unknown".to_string()),
                Just("for=_hidden".to_string()),
                Just("proto=https".to_string()),
                Just("\"".to_string()),
                Just("unknown".to_string()),
                "[ -~]{0,12}",
            ],
            0..40,
        )
        .prop_map(|parts| parts.join(", ")),
        // Anything printable, long.
        "[ -~]{0,400}",
        // Many hops.
        (1usize..200).prop_map(|n| vec!["10.0.0.7"; n].join(",")),
    ]
}

/// The entries of a header, left to right, as addresses where they are plain addresses.
fn addresses_in(values: &[String]) -> Vec<IpAddr> {
    values
        .iter()
        .flat_map(|v| v.split([',', ';', '=', '"', '[', ']', ' ']))
        .filter_map(|piece| piece.parse().ok())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn the_client_is_the_peer_or_vouched_for(
        peer in prop_oneof![Just("10.0.0.1"), Just("203.0.113.50"), Just("::ffff:10.0.0.1")],
        forwarded in prop::collection::vec(header_value(), 0..3),
        xff in prop::collection::vec(header_value(), 0..3),
        which in prop_oneof![
            Just(ForwardingHeaders::Both),
            Just(ForwardingHeaders::Forwarded),
            Just(ForwardingHeaders::XForwardedFor),
        ],
    ) {
        let trusted = trusted();
        let peer: IpAddr = peer.parse().unwrap();
        let f: Vec<&[u8]> = forwarded.iter().map(|v| v.as_bytes()).collect();
        let x: Vec<&[u8]> = xff.iter().map(|v| v.as_bytes()).collect();
        let Ok(client) = client_of(peer, &f, &x, &trusted, which) else {
            // Two headers naming different clients: refused, which names no one.
            prop_assert_eq!(which, ForwardingHeaders::Both);
            prop_assert!(!forwarded.is_empty() && !xff.is_empty());
            return Ok(());
        };
        let peer = match peer {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(peer, IpAddr::V4),
            v4 => v4,
        };
        match client {
            Client::Address(ip) if ip == peer => {}
            Client::Address(ip) => {
                // Only a trusted peer's headers are read, and the address must be in them.
                prop_assert!(trusted.contains(peer), "untrusted peer gave {ip}");
                let mut seen = addresses_in(&forwarded);
                seen.extend(addresses_in(&xff));
                prop_assert!(seen.contains(&ip), "{ip} is not in the headers");
            }
            Client::Obfuscated(id) => {
                prop_assert!(trusted.contains(peer));
                prop_assert!(forwarded.iter().any(|v| v.contains(&id)));
            }
        }
    }

    #[test]
    fn a_forged_left_part_never_changes_the_client(
        // Anything printable, and long enough (over 2 KB) to pass any cap on header length.
        forged in prop_oneof!["[ -~]{0,200}", "[ -~]{1,40}".prop_map(|s| s.repeat(3_000 / s.len() + 1))],
        client in prop_oneof![Just("203.0.113.9"), Just("2001:db8::5"), Just("198.51.100.1")],
    ) {
        // The proxies appended what they saw; whatever the client wrote before is ignored.
        let trusted = trusted();
        let xff = format!("{forged}, {client}, 10.0.0.2");
        let fwd = format!("{forged}, for=\"{}\", for=10.0.0.2", if client.contains(':') { format!("[{client}]") } else { client.to_string() });
        let expected = Client::Address(client.parse().unwrap());
        let peer: IpAddr = "10.0.0.1".parse().unwrap();
        let by_xff = client_of(peer, &[], &[xff.as_bytes()], &trusted, ForwardingHeaders::XForwardedFor);
        prop_assert_eq!(by_xff, Ok(expected.clone()));
        // Even a forged part that breaks the Forwarded grammar (an open quote, a stray
        // backslash) is never read: the request is counted as the client the proxies saw.
        let by_fwd = client_of(peer, &[fwd.as_bytes()], &[], &trusted, ForwardingHeaders::Forwarded);
        prop_assert_eq!(by_fwd, Ok(expected.clone()));
        // Both headers, each with its forged part, still agree.
        let by_both = client_of(peer, &[fwd.as_bytes()], &[xff.as_bytes()], &trusted, ForwardingHeaders::Both);
        prop_assert_eq!(by_both, Ok(expected));
    }
}

/// A bad entry written in the code is the caller's mistake: the panic names the caller's
/// file and line, not the library's builder.
#[test]
fn a_bad_trusted_proxy_panics_at_the_callers_line() {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let previous = std::panic::take_hook();
    let record = std::sync::Arc::clone(&seen);
    std::panic::set_hook(Box::new(move |info| {
        let message = info.to_string();
        if message.contains("invalid trusted proxy") || message.contains("invalid exempt") {
            let place = info.location().map(|l| l.file().to_string());
            record.lock().unwrap().push(place);
        }
    }));
    let proxies =
        std::panic::catch_unwind(|| limiter::Limiter::builder().trusted_proxies(["127.0.0.2/33"]));
    let exempt = std::panic::catch_unwind(|| limiter::Limiter::builder().exempt(["10.0.0.0/99"]));
    std::panic::set_hook(previous);
    assert!(proxies.is_err() && exempt.is_err());
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    for place in seen {
        assert_eq!(place.as_deref(), Some("tests/forwarding.rs"));
    }
}
