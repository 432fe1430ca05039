//! Where a budget lives in Redis: its key name, and on a cluster the hash slot of that name.

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
        push_hex(&mut name, key);
    } else {
        push_hex(&mut name, &sha1_smol::Sha1::from(key).digest().bytes());
    }
    name.push_str("}:");
    push_hex(&mut name, &limit_id.to_be_bytes());
    name
}

/// Appends `bytes` in lowercase hex, two digits a byte: by a table, as every check names
/// its key (`write!`'s formatting machinery cost 1,700 instructions a name, a tenth of a
/// new client's check on the instance).
fn push_hex(name: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for &byte in bytes {
        name.push(char::from(DIGITS[usize::from(byte >> 4)]));
        name.push(char::from(DIGITS[usize::from(byte & 0xf)]));
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

    /// The names as `write!` formatted them before the table: a name is a state's address,
    /// and a changed one would lose every budget on the next deploy.
    fn formatted(prefix: &str, limit_id: u64, key: &[u8]) -> String {
        let client = match key.len() < 20 {
            true => key.iter().map(|byte| format!("{byte:02x}")).collect(),
            false => sha1_smol::Sha1::from(key).digest().to_string(),
        };
        format!("{prefix}:{{{client}}}:{limit_id:016x}")
    }

    #[test]
    fn names_are_the_formatted_ones_for_every_length() {
        for len in [0, 1, 5, 18, 19, 20, 21, 64, 300] {
            let key: Vec<u8> = (0..len).map(|i| (i * 37 + 11) as u8).collect();
            for limit_id in [0, 1, 0xbf4a_a7cc_945c_59d8, u64::MAX] {
                assert_eq!(
                    key_name_of("limiter", limit_id, &key),
                    formatted("limiter", limit_id, &key),
                    "a key of {len} bytes"
                );
            }
        }
    }
}
