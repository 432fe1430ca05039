//! Where a budget lives in Redis: its key name, and on a cluster the hash slot of that name.

use std::fmt::Write as _;

use crate::Limit;

/// The Redis key holding `key`'s state under `limit`: `PREFIX:{CLIENT}:LIMIT`, bounded in
/// length whatever a client sends. `CLIENT` is the key's bytes in hex, or their SHA-1 when
/// 20 bytes or longer; `LIMIT` is the limit's stable id (of its scope and policy) in 16 hex
/// digits. The braces are a Redis Cluster hash tag: a client's states live on one node.
///
/// The scope's name is not in it: at a million clients its characters would be most of
/// Redis's memory. The layout is also the state format's version: 0.1's names were
/// `PREFIX:SCOPE:LIMIT:{CLIENT}`, ending in the brace, so that instances of both during a
/// rolling deploy never read each other's states (each counts its own budget until the old
/// ones are gone).
pub(super) fn key_name(prefix: &str, limit: &Limit, key: &[u8]) -> String {
    key_name_of(prefix, limit.id(), key)
}

/// [`key_name`] of a limit known by its id.
pub(super) fn key_name_of(prefix: &str, limit_id: u64, key: &[u8]) -> String {
    let mut name = String::with_capacity(prefix.len() + 60);
    name.push_str(prefix);
    name.push_str(":{");
    if key.len() < 20 {
        for byte in key {
            let _ = write!(name, "{byte:02x}");
        }
    } else {
        let _ = write!(name, "{}", sha1_smol::Sha1::from(key).digest());
    }
    let _ = write!(name, "}}:{limit_id:016x}");
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
