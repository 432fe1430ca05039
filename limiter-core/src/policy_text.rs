//! A policy written as text — `"10 per 1m"`, `"100 per 1s, token_bucket, burst 20"` — the
//! form a policy prints in, for configuration files and for overrides stored in Redis.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::algorithm::calendar::Period;
use crate::{Algorithm, Penalty, Policy};

/// A text that is not a policy, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidPolicy(String);

impl fmt::Display for InvalidPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidPolicy {}

impl FromStr for Policy {
    type Err = InvalidPolicy;

    /// `MAX per WINDOW`, then optionally `, ALGORITHM`, `, burst B`, `, block D` and
    /// `, N in W -> D` (a [`Penalty`](crate::Penalty) and its escalation) — what a policy's
    /// `Display` writes. The window is number+unit parts, largest first (`500ms`, `30s`,
    /// `1m`, `1h30m`, `1d`). Without an algorithm it is [`Policy::new`]'s: over a declared
    /// limit it keeps the declared one.
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::{Algorithm, Policy};
    /// let policy: Policy = "100 per 1s, token_bucket, burst 20".parse()?;
    /// assert_eq!(policy.algorithm(), Algorithm::TokenBucket);
    /// assert_eq!(policy.burst().get(), 20);
    /// assert_eq!("5 per 1h30m".parse::<Policy>()?.window(), Duration::from_secs(5_400));
    /// assert_eq!(policy.to_string().parse::<Policy>()?, policy);
    /// assert!("5 a minute".parse::<Policy>().is_err());
    /// # Ok::<(), limiter::InvalidPolicy>(())
    /// ```
    fn from_str(text: &str) -> Result<Policy, InvalidPolicy> {
        let bad = |why: String| InvalidPolicy(format!("\"{text}\" is not a policy: {why}"));
        let mut parts = text.split(',').map(str::trim);
        let head = parts.next().unwrap_or_default();
        let Some((max, window)) = head.split_once(" per ") else {
            return Err(bad("write `MAX per WINDOW`, e.g. \"10 per 1m\"".into()));
        };
        let max: u32 = max
            .trim()
            .parse()
            .map_err(|_| bad(format!("the maximum \"{}\" is not a number", max.trim())))?;
        // A calendar period (`month`), or a rolling window (`1h30m`).
        let period = Period::from_name(window.trim());
        let window = match period {
            Some(_) => Duration::ZERO,
            None => window_of(window.trim()).map_err(&bad)?,
        };
        let (mut algorithm, mut burst, mut block, mut escalation) = (None, None, None, None);
        let (mut delay, mut offset) = (None, None);
        // What a calendar quota does not take: an algorithm, a burst, a delay.
        let mut not_for_quotas = Vec::new();
        for part in parts {
            if let (Some(_), Some(o)) = (period, part.strip_prefix("utc")) {
                let minutes = offset_of(o)
                    .ok_or_else(|| bad(format!("\"{part}\" is not an offset: write utc+02:00")))?;
                offset = Some(minutes);
                continue;
            }
            if !part.starts_with("block ") && !part.contains(" in ") {
                not_for_quotas.push(part);
            }
            if let Some(d) = part.strip_prefix("delay ") {
                delay = Some(window_of(d.trim()).map_err(&bad)?);
            } else if let Some(b) = part.strip_prefix("block ") {
                block = Some(window_of(b.trim()).map_err(&bad)?);
            } else if let Some((after, rest)) = part.split_once(" in ") {
                let Some((within, long)) = rest.split_once("->") else {
                    return Err(bad(format!("\"{part}\" is not `N in WINDOW -> BLOCK`")));
                };
                let after: u32 = after
                    .trim()
                    .parse()
                    .map_err(|_| bad(format!("\"{}\" is not a number of blocks", after.trim())))?;
                let within = window_of(within.trim()).map_err(&bad)?;
                escalation = Some((after, within, window_of(long.trim()).map_err(&bad)?));
            } else if let Some(b) = part.strip_prefix("burst ") {
                let b: u32 = b
                    .trim()
                    .parse()
                    .map_err(|_| bad(format!("the burst \"{}\" is not a number", b.trim())))?;
                burst = Some(b);
            } else if let Some(named) = Algorithm::from_name(part) {
                algorithm = Some(named);
            } else {
                return Err(bad(format!(
                    "\"{part}\" is neither an algorithm (sliding_window, fixed_window, \
                     sliding_window_counter, token_bucket) nor `burst N`, `delay D`, `block D` \
                     or `N in W -> D`"
                )));
            }
        }
        let policy = match (period, algorithm) {
            (Some(_), _) if !not_for_quotas.is_empty() => {
                return Err(bad(format!(
                    "a calendar quota takes an offset (utc+02:00) and a penalty, not \"{}\"",
                    not_for_quotas.join(", ")
                )))
            }
            (Some(period), _) => Policy::per_calendar(max, period)
                .and_then(|quota| quota.with_utc_offset(offset.unwrap_or(0))),
            (None, Some(algorithm)) => Policy::for_algorithm(algorithm, max, window),
            (None, None) => Policy::new(max, window),
        }
        .map_err(|e| bad(e.to_string()))?;
        let policy = match burst {
            Some(b) => policy.with_burst(b).map_err(|e| bad(e.to_string()))?,
            None => policy,
        };
        let policy = match delay {
            Some(d) => policy.with_delay(d).map_err(|e| bad(e.to_string()))?,
            None => policy,
        };
        let penalty = match (block, escalation) {
            (Some(block), escalation) => {
                let penalty = Penalty::block(block).map_err(|e| bad(e.to_string()))?;
                match escalation {
                    Some((after, within, long)) => penalty
                        .escalating(after, within, long)
                        .map_err(|e| bad(e.to_string()))?,
                    None => penalty,
                }
            }
            (None, Some(_)) => {
                return Err(bad(
                    "an escalation needs a block to escalate: add `block D`".into(),
                ))
            }
            (None, None) => return Ok(policy),
        };
        Ok(policy.with_penalty(penalty))
    }
}

/// `+02:00`, `-05:30`: minutes east of UTC.
fn offset_of(text: &str) -> Option<i32> {
    let (sign, rest) = match text.as_bytes().first()? {
        b'+' => (1, &text[1..]),
        b'-' => (-1, &text[1..]),
        _ => return None,
    };
    let (hours, minutes) = rest.split_once(':')?;
    // One or two digits each, as `Display` writes them: no sign of their own, and nothing
    // that overflows (the range is checked where the offset is set).
    let small = |digits: &str| {
        (matches!(digits.len(), 1..=2) && digits.bytes().all(|b| b.is_ascii_digit()))
            .then(|| digits.bytes().fold(0, |n, b| n * 10 + i32::from(b - b'0')))
    };
    let (hours, minutes) = (small(hours)?, small(minutes)?);
    (minutes < 60).then_some(sign * (hours * 60 + minutes))
}

/// `1h30m`, `500ms`: number+unit parts, largest first.
fn window_of(text: &str) -> Result<Duration, String> {
    const UNITS: [(&str, u64); 5] = [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("ms", 1),
        ("m", 60_000),
        ("s", 1_000),
    ];
    let mut rest = text;
    let (mut ms, mut last) = (0u64, u64::MAX);
    if rest.is_empty() {
        return Err("the window is missing".into());
    }
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let number: u64 = rest[..digits]
            .parse()
            .map_err(|_| format!("the window \"{text}\" is not number+unit parts, e.g. 1m"))?;
        rest = &rest[digits..];
        let Some(&(unit, size)) = UNITS.iter().find(|(unit, _)| rest.starts_with(unit)) else {
            return Err(format!(
                "the window \"{text}\" needs a unit: ms, s, m, h or d"
            ));
        };
        if size >= last {
            return Err(format!(
                "the window \"{text}\" must give its units largest first"
            ));
        }
        rest = &rest[unit.len()..];
        ms = number
            .checked_mul(size)
            .and_then(|part| ms.checked_add(part))
            .ok_or_else(|| format!("the window \"{text}\" is too long"))?;
        last = size;
    }
    Ok(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_policy_prints_reads_back() {
        for text in [
            "10 per 1m, sliding_window",
            "3 per 1h30m, fixed_window",
            "7 per 1d2h3m4s5ms, sliding_window_counter",
            "100 per 1s, token_bucket, burst 20",
            "5 per 1m, sliding_window, block 15m",
            "5 per 1m, fixed_window, block 15m, 3 in 1h -> 1d",
            "10000 per month",
            "100 per day, utc+02:00",
            "7 per week, utc-05:30, block 1h",
            "10 per 1s, token_bucket, burst 5, delay 2s",
        ] {
            let policy: Policy = text.parse().unwrap();
            assert_eq!(policy.to_string(), text);
        }
        let kept: Policy = "10 per 1m".parse().unwrap();
        assert!(!kept.names_algorithm());
        for (text, says) in [
            ("10/1m", "MAX per WINDOW"),
            ("ten per 1m", "not a number"),
            ("10 per 1 minute", "needs a unit"),
            ("10 per 1m30h", "largest first"),
            ("10 per 5", "needs a unit"),
            ("10 per 1m, leaky", "neither an algorithm"),
            ("0 per 1m", "at least 1"),
            ("10 per 1m, burst 5", "token_bucket"),
            ("10 per 1m, 3 in 1h -> 1d", "needs a block"),
            ("10 per 1m, block 15m, 3 in 1h", "N in WINDOW -> BLOCK"),
            ("10 per 1m, block 0s", "at least 1ms"),
            ("10 per month, utc+15:00", "14 hours"),
            ("10 per month, sliding_window", "takes an offset"),
            ("10 per 1s, delay 2s", "token_bucket"),
            ("10 per day, utc+99999999:00", "not an offset"),
            ("10 per day, utc+1073741826:00", "not an offset"),
            ("10 per day, utc+02:-30", "not an offset"),
            ("10 per day, utc+-2:00", "not an offset"),
        ] {
            let error = text.parse::<Policy>().unwrap_err().to_string();
            assert!(error.contains(says), "{text}: {error}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(
            if std::env::var_os("LIMITER_THOROUGH").is_some() { 20_000 } else { 2_000 }
        ))]

        /// Any text: never a panic, and a policy read prints as text that reads back to it.
        #[test]
        fn any_text_is_a_policy_that_reads_back_or_an_error(
            text in proptest::prop_oneof![
                "[ -~]{0,80}",
                "[0-9]{1,12} per (day|week|month), utc[+-][-+0-9]{0,12}:[-+0-9]{0,12}",
                "[0-9]{1,12} per [0-9]{1,20}(ms|s|m|h|d)(, (token_bucket|fixed_window))?(, burst [0-9]{1,12})?(, delay [0-9]{1,12}(ms|s))?(, block [0-9]{1,20}(ms|s|m|h|d))?",
            ]
        ) {
            if let Ok(policy) = text.parse::<Policy>() {
                proptest::prop_assert_eq!(policy.to_string().parse::<Policy>().ok(), Some(policy));
            }
        }
    }
}
