//! Where a budget lives in Redis: its key name, and on a cluster the hash slot of that name.

use std::fmt::Write as _;

use crate::Limit;

/// The Redis key holding `key`'s state under `limit`: `PREFIX:SCOPE:LIMIT:{CLIENT}`, bounded
/// in length whatever a client sends. `SCOPE` is the scope's printable ASCII (braces left
/// out) cut to 40 characters, `LIMIT` the limit's stable id in 16 hex digits, `CLIENT` the
/// key's bytes in hex, or their SHA-1 when 20 bytes or longer. The braces are a Redis
/// Cluster hash tag: a client's states live on one node.
pub(super) fn key_name(prefix: &str, limit: &Limit, key: &[u8]) -> String {
    let scope: String = limit
        .scope()
        .chars()
        .filter(|c| c.is_ascii_graphic() && !matches!(c, '{' | '}'))
        .take(40)
        .collect();
    let mut name = format!("{prefix}:{scope}:{:016x}:{{", limit.id());
    if key.len() < 20 {
        for byte in key {
            let _ = write!(name, "{byte:02x}");
        }
    } else {
        let _ = write!(name, "{}", sha1_smol::Sha1::from(key).digest());
    }
    name.push('}');
    name
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
