//! A client's key: bytes in a namespace of their own per kind.
//!
//! Namespaces keep kinds apart: a user named `203.0.113.7` never shares the budget of the
//! address 203.0.113.7, and an API key never shares a user's. Every front end makes the same
//! bytes for the same client, so that they count one budget on a shared store.

use std::net::{IpAddr, Ipv6Addr};

use crate::proxy::unmap;

/// A client's key, as the store is given it: short ones (addresses, `global`) on the stack.
#[derive(Clone, Debug)]
pub struct ClientKey(Repr);

#[derive(Clone, Debug)]
enum Repr {
    Stack { bytes: [u8; 18], len: u8 },
    Owned(Vec<u8>),
}

impl ClientKey {
    /// The key of a value a handler checks itself (`limiter::check`).
    pub fn checked(value: &[u8]) -> ClientKey {
        ClientKey::tagged(tag::INLINE, value)
    }

    /// A store key as it is.
    pub fn raw(key: &[u8]) -> ClientKey {
        ClientKey(Repr::Owned(key.to_vec()))
    }

    /// The key of `value` under a kind of key, as a request would make it.
    pub fn of(kind: Kind, value: &[u8]) -> ClientKey {
        match kind {
            Kind::Global => {
                let mut bytes = [0; 18];
                bytes[0] = tag::GLOBAL;
                ClientKey(Repr::Stack { bytes, len: 1 })
            }
            Kind::User => ClientKey::tagged(tag::USER, value),
            Kind::Header => ClientKey::tagged(tag::HEADER, value),
            Kind::Function => ClientKey::tagged(tag::FUNCTION, value),
        }
    }

    /// The key in words, for a log line: `203.0.113.7`, `2001:db8::/56`, `user:ann`.
    pub fn describe(&self) -> String {
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
    pub fn shown(&self, reveal: bool) -> String {
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

    /// The key's bytes, as the store is given them.
    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Stack { bytes, len } => &bytes[..usize::from(*len)],
            Repr::Owned(bytes) => bytes,
        }
    }

    /// A key of kind `tag`. Values longer than [`MAX_KEY_VALUE`] bytes are replaced by their
    /// SHA-1 digest, in a namespace of their own: keys stay bounded whatever a client sends,
    /// and a long value can only share a budget with another long value of the same digest
    /// (a second preimage, out of reach).
    pub(crate) fn tagged(tag: u8, value: &[u8]) -> ClientKey {
        if value.len() > MAX_KEY_VALUE {
            let digest = sha1_smol::Sha1::from(value).digest().bytes();
            let mut bytes = Vec::with_capacity(2 + digest.len());
            bytes.extend_from_slice(&[tag::HASHED, tag]);
            bytes.extend_from_slice(&digest);
            return ClientKey(Repr::Owned(bytes));
        }
        let mut bytes = Vec::with_capacity(value.len() + 1);
        bytes.push(tag);
        bytes.extend_from_slice(value);
        ClientKey(Repr::Owned(bytes))
    }
}

/// The kinds of key whose value comes from somewhere other than the client's address.
#[derive(Clone, Copy)]
pub enum Kind {
    /// One budget for everyone (`key = "global"`).
    Global,
    /// A signed-in user's id.
    User,
    /// A header's value (`key = "header:NAME"`).
    Header,
    /// What a key function computed.
    Function,
}

/// The longest key value kept as it is; longer ones are hashed.
pub const MAX_KEY_VALUE: usize = 64;

/// Namespace tags, the first byte of every key.
pub(crate) mod tag {
    pub(crate) const HASHED: u8 = b'#';
    pub(crate) const OBFUSCATED: u8 = b'o';
    pub(crate) const IPV4: u8 = b'4';
    pub(crate) const IPV6: u8 = b'6';
    pub(crate) const GLOBAL: u8 = b'g';
    pub(crate) const USER: u8 = b'u';
    pub(crate) const HEADER: u8 = b'h';
    pub(crate) const FUNCTION: u8 = b'f';
    pub(crate) const INLINE: u8 = b'i';
}

/// The key of the client at `ip`: IPv4-mapped IPv6 as IPv4, IPv6 cut to `ipv6_prefix` bits.
pub fn ip_key_of(ip: IpAddr, ipv6_prefix: u8) -> ClientKey {
    // The byte written is the prefix used: every front end names one client alike.
    let ipv6_prefix = ipv6_prefix.min(128);
    let mut bytes = [0; 18];
    match client_ip(ip, ipv6_prefix) {
        IpAddr::V4(v4) => {
            bytes[0] = tag::IPV4;
            bytes[1..5].copy_from_slice(&v4.octets());
            ClientKey(Repr::Stack { bytes, len: 5 })
        }
        IpAddr::V6(v6) => {
            bytes[0] = tag::IPV6;
            bytes[1] = ipv6_prefix;
            bytes[2..18].copy_from_slice(&v6.octets());
            ClientKey(Repr::Stack { bytes, len: 18 })
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
