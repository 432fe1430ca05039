//! Where a budget lives in Redis: its key name, and on a cluster the hash slot of that name.

use crate::Limit;

/// The Redis key holding `key`'s state under `limit`: `PREFIX:{CLIENT}LIMIT`, bounded in
/// length whatever a client sends. `CLIENT` is the key's bytes in unpadded base64url (RFC
/// 4648 §5), or their SHA-1's when 20 bytes or longer or none (an empty hash tag is none:
/// Redis Cluster would hash the whole name, and a state and its penalty record would part);
/// `LIMIT` is the limit's stable id (of
/// its scope and policy), 8 bytes big-endian in the same alphabet. The braces are a Redis
/// Cluster hash tag: a client's states live on one node.
///
/// Short, because at a million clients the names are a third of Redis's memory: an IPv4
/// client's is 28 bytes with the default prefix, the most that fits Redis's 32-byte
/// allocation with its header (37 in hex). The scope's name is not in it either. The layout
/// is also the state format's version: limiter 0.1.0 names its keys
/// `PREFIX:SCOPE:LIMIT:{CLIENT}`, ending in the brace, so that instances of both versions
/// during a rolling deploy never read each other's states (each counts its own budget until
/// the 0.1.0 ones are gone).
pub(super) fn key_name(prefix: &str, limit: &Limit, key: &[u8]) -> String {
    key_name_of(prefix, limit.id(), key)
}

/// A prefix as names use it: its braces as parentheses, so that the client's `{…}` is the
/// name's first, its hash tag.
pub(super) fn prefix_of(prefix: String) -> String {
    if prefix.contains(['{', '}']) {
        prefix.replace('{', "(").replace('}', ")")
    } else {
        prefix
    }
}

/// [`key_name`] of a limit known by its id.
pub(super) fn key_name_of(prefix: &str, limit_id: u64, key: &[u8]) -> String {
    let mut name = String::with_capacity(prefix.len() + 44);
    name.push_str(prefix);
    name.push_str(":{");
    if (1..20).contains(&key.len()) {
        push_base64(&mut name, key);
    } else {
        push_base64(&mut name, &sha1_smol::Sha1::from(key).digest().bytes());
    }
    name.push('}');
    push_base64(&mut name, &limit_id.to_be_bytes());
    name
}

/// Appends `bytes` in unpadded base64url (never a brace, which would end the hash tag), by
/// a table and whole 3-byte groups: every check names its key (`write!`'s formatting cost
/// 1,700 instructions a name, a tenth of a new client's check on the instance).
fn push_base64(name: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut digit = |bits: u32, shift: u32| {
        name.push(char::from(DIGITS[(bits >> shift & 63) as usize]));
    };
    let mut groups = bytes.chunks_exact(3);
    for group in &mut groups {
        let bits = u32::from(group[0]) << 16 | u32::from(group[1]) << 8 | u32::from(group[2]);
        for shift in [18, 12, 6, 0] {
            digit(bits, shift);
        }
    }
    // A last group of n bytes is n + 1 digits, the last one's low bits zero.
    match *groups.remainder() {
        [a] => {
            let bits = u32::from(a) << 16;
            digit(bits, 18);
            digit(bits, 12);
        }
        [a, b] => {
            let bits = u32::from(a) << 16 | u32::from(b) << 8;
            digit(bits, 18);
            digit(bits, 12);
            digit(bits, 6);
        }
        _ => {}
    }
}

/// The Redis Cluster hash slot of a key name: CRC16 of its hash tag, modulo 16,384.
pub(super) fn hash_slot(name: &str) -> u16 {
    let tag = name
        .split_once('{')
        .and_then(|(_, rest)| rest.split_once('}'))
        .map(|(tag, _)| tag)
        .filter(|tag| !tag.is_empty())
        .unwrap_or(name);
    crc16::State::<crc16::XMODEM>::calculate(tag.as_bytes()) % 16_384
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Base64url by its definition: every 6 bits of the bytes, most significant first,
    /// padded with zero bits to a whole digit.
    fn by_bits(bytes: &[u8]) -> String {
        const DIGITS: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let bits: Vec<bool> = bytes
            .iter()
            .flat_map(|b| (0..8).rev().map(move |i| b >> i & 1 == 1))
            .collect();
        bits.chunks(6)
            .map(|six| {
                let n = (0..6).fold(0, |n, i| n << 1 | usize::from(six.get(i) == Some(&true)));
                DIGITS.as_bytes()[n] as char
            })
            .collect()
    }

    #[test]
    fn a_prefix_with_a_hash_tag_still_spreads_clients_over_slots() {
        let prefix = prefix_of("{app}:rl".to_string());
        assert_eq!(prefix, "(app):rl");
        let slots: std::collections::HashSet<u16> = (0u32..64)
            .map(|client| hash_slot(&key_name_of(&prefix, 7, &client.to_be_bytes())))
            .collect();
        assert!(slots.len() > 32, "64 clients in {} slots", slots.len());
        assert_eq!(prefix_of("limiter".to_string()), "limiter");
    }

    #[test]
    fn names_are_base64url_for_every_length() {
        for len in [0, 1, 2, 3, 4, 5, 18, 19, 20, 21, 64, 300] {
            let key: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            let client = match (1..20).contains(&len) {
                true => by_bits(&key),
                false => by_bits(&sha1_smol::Sha1::from(&key).digest().bytes()),
            };
            for limit_id in [0, 1, 0xbf4a_a7cc_945c_59d8, u64::MAX] {
                assert_eq!(
                    key_name_of("limiter", limit_id, &key),
                    format!("limiter:{{{client}}}{}", by_bits(&limit_id.to_be_bytes())),
                    "a key of {len} bytes"
                );
            }
        }
    }

    /// The RFC's test vectors (unpadded), and an IPv4 client's name within 28 bytes.
    #[test]
    fn base64url_is_the_rfcs() {
        for (bytes, text) in [
            (&b""[..], ""),
            (b"f", "Zg"),
            (b"fo", "Zm8"),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg"),
            (b"fooba", "Zm9vYmE"),
            (b"foobar", "Zm9vYmFy"),
            (b"\xfb\xff", "-_8"),
        ] {
            let mut name = String::new();
            push_base64(&mut name, bytes);
            assert_eq!(name, text);
        }
        assert_eq!(
            key_name_of("limiter", u64::MAX, b"4\xcb\x00\x71\x07").len(),
            28
        );
    }
}
