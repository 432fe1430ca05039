//! The address most forwarding headers carry, read without the general parser: a plain
//! dotted quad (`203.0.113.7`), between optional spaces or tabs. Behind a trusted proxy every
//! request's `X-Forwarded-For` is read, and the general way there (UTF-8 check, trim,
//! `IpAddr::from_str`) cost a new client about 400 instructions of its 5,400.
//!
//! It only ever says yes to what `Ipv4Addr::from_str` reads as the same address, after the
//! same trim: anything else (leading zeros, a port, IPv6, other whitespace) is `None`, and the
//! caller reads it the general way.

use std::net::Ipv4Addr;

/// `entry` as a plain dotted quad between optional spaces and tabs, else `None`.
#[inline]
pub(crate) fn plain_ipv4(entry: &[u8]) -> Option<Ipv4Addr> {
    let entry = trim_ows(entry);
    let mut octets = [0u8; 4];
    let mut parts = entry.split(|&b| b == b'.');
    for octet in &mut octets {
        *octet = decimal_octet(parts.next()?)?;
    }
    match parts.next() {
        None => Some(Ipv4Addr::from(octets)),
        Some(_) => None,
    }
}

/// One octet: one to three digits, no leading zero, at most 255.
#[inline]
fn decimal_octet(digits: &[u8]) -> Option<u8> {
    if digits.is_empty() || digits.len() > 3 || (digits.len() > 1 && digits[0] == b'0') {
        return None;
    }
    let mut n: u16 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        n = n * 10 + u16::from(d - b'0');
    }
    u8::try_from(n).ok()
}

/// Without the spaces and tabs around it (HTTP's optional whitespace).
#[inline]
fn trim_ows(mut bytes: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = bytes {
        bytes = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = bytes {
        bytes = rest;
    }
    bytes
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;
    use std::str::FromStr;

    use proptest::prelude::*;

    use super::plain_ipv4;

    /// What the general way reads from `entry`: UTF-8, trimmed, `Ipv4Addr::from_str`.
    fn general(entry: &[u8]) -> Option<Ipv4Addr> {
        Ipv4Addr::from_str(std::str::from_utf8(entry).ok()?.trim()).ok()
    }

    #[test]
    fn plain_quads_and_what_is_left_to_the_general_way() {
        let read = [
            ("203.0.113.7", Some([203, 0, 113, 7])),
            (" 10.0.0.1\t", Some([10, 0, 0, 1])),
            ("0.0.0.0", Some([0, 0, 0, 0])),
            ("255.255.255.255", Some([255, 255, 255, 255])),
        ];
        for (entry, octets) in read {
            assert_eq!(
                plain_ipv4(entry.as_bytes()),
                octets.map(Ipv4Addr::from),
                "{entry}"
            );
        }
        let left = [
            "",
            "1.2.3",
            "1.2.3.4.5",
            "01.2.3.4",
            "256.1.1.1",
            "1.2.3.4:80",
            "1..2.3",
            "1.2.3.4.",
            "::1",
            "[::1]",
            "1.2.3.a",
            "1.2.3.4 5",
            "\u{a0}1.2.3.4",
            "1000.1.1.1",
        ];
        for entry in left {
            assert_eq!(plain_ipv4(entry.as_bytes()), None, "{entry:?}");
        }
    }

    proptest! {
        /// Where it reads an address, the general way reads the same one.
        #[test]
        fn never_reads_other_than_the_general_way(entry in "[ \t]{0,2}[0-9.:a-f\u{a0} ]{0,18}[ \t]{0,2}") {
            if let Some(ip) = plain_ipv4(entry.as_bytes()) {
                prop_assert_eq!(Some(ip), general(entry.as_bytes()));
            }
        }

        /// Every dotted quad, written as Rust writes it, is read here.
        #[test]
        fn reads_every_quad(octets in any::<[u8; 4]>(), before in "[ \t]{0,2}", after in "[ \t]{0,2}") {
            let ip = Ipv4Addr::from(octets);
            let entry = format!("{before}{ip}{after}");
            prop_assert_eq!(plain_ipv4(entry.as_bytes()), Some(ip));
        }
    }
}
