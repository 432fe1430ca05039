//! The bytes of a saved memory store (its layout is in `saved.rs`): a policy's codes, the
//! integers written little-endian, the checksum, and a reader that refuses a file cut short.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::millis;
use super::saved::{RestoreError, FIRST_VERSION};
use crate::algorithm::calendar::{Calendar, Period};
use crate::{Algorithm, Policy};

/// An algorithm's code in the file: its place in [`Algorithm::ALL`], which the file's
/// version pins (not the enum's layout).
pub(super) fn code_of(algorithm: Algorithm) -> u8 {
    Algorithm::ALL
        .iter()
        .position(|&a| a == algorithm)
        .unwrap_or_default() as u8
}

/// A calendar quota's policy is written as its fixed window's, with its calendar in the
/// burst's place (which a fixed window has none of): this bit, the period (1 day, 2 week,
/// 3 month) in bits 16–17 and the offset from UTC + 840 minutes below.
const CALENDAR: u32 = 1 << 31;

pub(super) fn calendar_code(calendar: &Calendar) -> u32 {
    let period = match calendar.period() {
        Period::Day => 1,
        Period::Week => 2,
        Period::Month => 3,
    };
    CALENDAR | (period << 16) | (i32::from(calendar.offset_minutes()) + 840) as u32
}

pub(super) fn calendar_policy(max: u32, code: u32) -> Option<Policy> {
    let period = match (code >> 16) & 3 {
        1 => Period::Day,
        2 => Period::Week,
        3 => Period::Month,
        _ => return None,
    };
    let offset = i32::try_from(code & 0xffff).ok()? - 840;
    Policy::per_calendar(max, period)
        .and_then(|policy| policy.with_utc_offset(offset))
        .ok()
}

pub(super) fn put(out: &mut Vec<u8>, value: u64) {
    out.extend_from_slice(&value.to_le_bytes());
}

pub(super) fn wall_ms(wall: SystemTime) -> u64 {
    millis(wall.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO))
}

/// FNV-1a over the file: it tells damage, not an adversary (whoever writes the file can
/// write its hash).
pub(super) fn fnv(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &byte in bytes {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// Reads the file's numbers in order; running out is damage.
pub(super) struct Reader<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) at: usize,
}

impl Reader<'_> {
    pub(super) fn take<const N: usize>(&mut self) -> Result<[u8; N], RestoreError> {
        // The hash's 8 bytes at the end are not contents.
        let end = self.at + N;
        if end > self.bytes.len().saturating_sub(8) {
            return Err(RestoreError::Corrupt("it ends too soon"));
        }
        let mut taken = [0; N];
        taken.copy_from_slice(&self.bytes[self.at..end]);
        self.at = end;
        Ok(taken)
    }

    pub(super) fn u16(&mut self) -> Result<u16, RestoreError> {
        self.take().map(u16::from_le_bytes)
    }

    pub(super) fn u32(&mut self) -> Result<u32, RestoreError> {
        self.take().map(u32::from_le_bytes)
    }

    pub(super) fn u64(&mut self) -> Result<u64, RestoreError> {
        self.take().map(u64::from_le_bytes)
    }

    /// A table's whole policy, as `version` writes it.
    pub(super) fn policy(&mut self, version: u32) -> Result<Policy, RestoreError> {
        let policy = self.counting()?;
        if version == FIRST_VERSION {
            return Ok(policy);
        }
        let no_build = |_| RestoreError::Corrupt("a policy no build makes");
        let too_many = |_| RestoreError::Corrupt("a policy no build makes");
        let policy = match self.u64()? {
            0 => policy,
            delay_ms => policy
                .with_delay(Duration::from_millis(delay_ms))
                .map_err(no_build)?,
        };
        let [block, after, within, long] = [self.u64()?, self.u64()?, self.u64()?, self.u64()?];
        Ok(match block {
            0 => policy,
            block => {
                let after = u32::try_from(after).map_err(too_many)?;
                policy.with_penalty(
                    crate::Penalty::__from_attribute(block, after, within, long)
                        .map_err(no_build)?,
                )
            }
        })
    }

    /// What a policy counts by: algorithm, max, window, burst (or calendar).
    pub(super) fn counting(&mut self) -> Result<Policy, RestoreError> {
        let [algorithm] = self.take::<1>()?;
        let (max, window_ms, burst) = (self.u32()?, self.u64()?, self.u32()?);
        let algorithm = *Algorithm::ALL
            .get(usize::from(algorithm))
            .ok_or(RestoreError::Corrupt("an unknown algorithm"))?;
        if burst & CALENDAR != 0 {
            return calendar_policy(max, burst)
                .ok_or(RestoreError::Corrupt("a policy no build makes"));
        }
        let policy = Policy::for_algorithm(algorithm, max, Duration::from_millis(window_ms))
            .map_err(|_| RestoreError::Corrupt("a policy no build makes"))?;
        match burst {
            0 => Ok(policy),
            burst => policy
                .with_burst(burst)
                .map_err(|_| RestoreError::Corrupt("a policy no build makes")),
        }
    }
}
