//! Rolling a limit out gradually: a limit enforced on a [`Share`] of its clients rejects only
//! the clients the share takes in — the same ones on every request and every instance — and
//! lets the others' would-be rejections through as a dry run does. The share is declared
//! (`enforce = "10%"`), configured per scope and changed while serving.

use std::collections::HashMap;
use std::fmt;
use std::hash::Hasher;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arc_swap::ArcSwap;

use super::fnv::Fnv;

/// The share of a limit's clients it is enforced on: from [`Share::NONE`] (a dry run) to
/// [`Share::ALL`] (the default), in millionths.
///
/// Which clients a share takes in is a pure function of the scope and the client's key (a
/// fixed hash of the two): a client is consistently in or out, on every instance of a fleet, so
/// that one user never sees a limit flap; and raising a share only adds clients (the 10% of a
/// 10% rollout stay in at 20%). It is a rollout tool, not a boundary: while a share is below
/// all, the clients outside it are not limited.
///
/// ```
/// use limiter::Share;
///
/// let tenth: Share = "10%".parse()?;
/// assert_eq!(tenth, Share::percent(10.0)?);
/// assert_eq!(tenth.to_string(), "10%");
/// assert_eq!(tenth.per_million(), 100_000);
/// # Ok::<(), limiter::InvalidShare>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Share {
    per_million: u32,
}

const MILLION: u32 = 1_000_000;

impl Share {
    /// Every client: the limit is enforced.
    pub const ALL: Share = Share {
        per_million: MILLION,
    };

    /// No client: decided and counted, never enforced — a dry run.
    pub const NONE: Share = Share { per_million: 0 };

    /// `percent` of the clients, 0 to 100, to a millionth of them (`12.5` is 125,000 in a
    /// million).
    ///
    /// ```
    /// use limiter::Share;
    /// assert_eq!(Share::percent(12.5)?.per_million(), 125_000);
    /// assert!(Share::percent(101.0).is_err());
    /// # Ok::<(), limiter::InvalidShare>(())
    /// ```
    pub fn percent(percent: f64) -> Result<Share, InvalidShare> {
        if !(0.0..=100.0).contains(&percent) {
            return Err(InvalidShare(format!(
                "{percent}% is not a share of clients: give one from 0% to 100%"
            )));
        }
        // At most a million parts: the cast cannot overflow.
        Ok(Share {
            per_million: (percent * 10_000.0).round() as u32,
        })
    }

    /// `parts` millionths of the clients; a million or more is all of them.
    pub const fn per_million_of(parts: u32) -> Share {
        Share {
            per_million: if parts > MILLION { MILLION } else { parts },
        }
    }

    /// The share in millionths.
    pub const fn per_million(self) -> u32 {
        self.per_million
    }

    /// Whether every client is in.
    pub const fn is_all(self) -> bool {
        self.per_million == MILLION
    }

    /// Whether the share takes in the client whose store key is `key` under `scope`: the
    /// same answer on every call, every instance and every build (a fixed hash of the two),
    /// and independent from one scope to another.
    #[doc(hidden)]
    pub fn includes(self, scope: &str, key: &[u8]) -> bool {
        match self.per_million {
            0 => false,
            MILLION => true,
            share => {
                let position = ((mix(scope, key) >> 32) * u64::from(MILLION)) >> 32;
                position < u64::from(share)
            }
        }
    }
}

/// FNV-1a over the scope, a byte no scope holds (UTF-8 never has 0xFF), and the key, then
/// SplitMix64's finalizer so that the high bits spread. Fixed, unlike std's hashers, whose
/// output a new Rust release may change: the fleet and its next deploy must agree.
fn mix(scope: &str, key: &[u8]) -> u64 {
    let mut fnv = Fnv::default();
    fnv.write(scope.as_bytes());
    fnv.write(&[0xFF]);
    fnv.write(key);
    let mut hash = fnv.finish();
    hash ^= hash >> 30;
    hash = hash.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash ^= hash >> 27;
    hash = hash.wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

impl Default for Share {
    fn default() -> Share {
        Share::ALL
    }
}

impl fmt::Display for Share {
    /// As a percentage: `10%`, `12.5%`, `0.0001%`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, part) = (self.per_million / 10_000, self.per_million % 10_000);
        if part == 0 {
            return write!(f, "{whole}%");
        }
        let decimals = format!("{part:04}");
        write!(f, "{whole}.{}%", decimals.trim_end_matches('0'))
    }
}

impl FromStr for Share {
    type Err = InvalidShare;

    /// A percentage, `"10%"` or `"12.5%"`, to four decimals.
    fn from_str(text: &str) -> Result<Share, InvalidShare> {
        let Some(number) = text.trim().strip_suffix('%') else {
            return Err(InvalidShare(format!(
                "\"{text}\" is not a share: write it in percent, e.g. \"10%\""
            )));
        };
        let number = number.trim_end();
        let decimals = number.split_once('.').map_or(0, |(_, d)| d.len());
        let valid = !number.is_empty()
            && number.bytes().all(|b| b.is_ascii_digit() || b == b'.')
            && number.bytes().filter(|&b| b == b'.').count() <= 1;
        match number.parse::<f64>() {
            Ok(percent) if valid && decimals <= 4 => Share::percent(percent),
            Ok(_) if valid => Err(InvalidShare(format!(
                "\"{text}\" has more than four decimals: a share counts millionths of the \
                 clients, e.g. \"0.0001%\""
            ))),
            _ => Err(InvalidShare(format!(
                "\"{text}\" is not a share: write a number from 0 to 100 and %, e.g. \"10%\""
            ))),
        }
    }
}

/// A share that is not one: not a number of percent from 0 to 100, to four decimals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidShare(String);

impl fmt::Display for InvalidShare {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidShare {}

/// The shares configuration sets per scope, over the declared ones: read per request without
/// a lock (and not at all until one is set), replaced whole when one changes.
#[derive(Default)]
pub struct Enforcement {
    configured: AtomicBool,
    shares: ArcSwap<HashMap<Box<str>, Share>>,
}

impl Enforcement {
    /// The share configuration sets for `scope`, if any.
    #[inline]
    pub fn of(&self, scope: &str) -> Option<Share> {
        match self.configured.load(Ordering::Relaxed) {
            false => None,
            true => self.configured_of(scope),
        }
    }

    /// [`of`](Self::of) once a share is configured: out of line, so that the check every
    /// request makes is the load alone.
    #[inline(never)]
    fn configured_of(&self, scope: &str) -> Option<Share> {
        self.shares.load().get(scope).copied()
    }

    /// Sets `scope`'s share, from the next request on.
    pub fn set(&self, scope: &str, share: Share) {
        self.shares.rcu(|shares| {
            let mut shares = HashMap::clone(shares);
            shares.insert(scope.into(), share);
            Arc::new(shares)
        });
        self.configured.store(true, Ordering::Relaxed);
    }
}

impl Clone for Enforcement {
    fn clone(&self) -> Enforcement {
        Enforcement {
            configured: AtomicBool::new(self.configured.load(Ordering::Relaxed)),
            shares: ArcSwap::new(self.shares.load_full()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_read_and_print_as_percentages() {
        for (text, parts, printed) in [
            ("10%", 100_000, "10%"),
            ("12.5%", 125_000, "12.5%"),
            ("0%", 0, "0%"),
            ("100%", MILLION, "100%"),
            (" 0.0001 %", 1, "0.0001%"),
        ] {
            let share: Share = text.parse().unwrap();
            assert_eq!(share.per_million(), parts, "{text}");
            assert_eq!(share.to_string(), printed, "{text}");
        }
        for (text, says) in [
            ("10", "in percent"),
            ("101%", "from 0% to 100%"),
            ("-1%", "a number from 0 to 100"),
            ("1.23456%", "more than four decimals"),
            ("ten%", "a number from 0 to 100"),
            ("1e2%", "a number from 0 to 100"),
            ("%", "a number from 0 to 100"),
        ] {
            let error = text.parse::<Share>().unwrap_err().to_string();
            assert!(error.contains(says), "{text}: {error}");
        }
        assert!(Share::percent(f64::NAN).is_err());
        assert_eq!(Share::per_million_of(2 * MILLION), Share::ALL);
    }

    #[test]
    fn a_larger_share_keeps_every_client_of_a_smaller_one() {
        let (tenth, fifth) = (Share::percent(10.0).unwrap(), Share::percent(20.0).unwrap());
        for n in 0..10_000u32 {
            let key = n.to_be_bytes();
            if tenth.includes("api", &key) {
                assert!(fifth.includes("api", &key));
            }
        }
    }

    #[test]
    fn the_choice_is_fixed_and_differs_between_scopes() {
        // Pinned: a new build must choose the clients the fleet's older instances chose.
        // (Computed apart, in Python.)
        assert_eq!(mix("", b""), 0x4f2d_b50f_1240_40cd);
        assert_eq!(mix("login", b"198.51.100.4"), 0xdf03_92b9_955f_dcd4);
        let half = Share::percent(50.0).unwrap();
        let differ = (0..1_000u32)
            .filter(|n| {
                half.includes("a", &n.to_be_bytes()) != half.includes("b", &n.to_be_bytes())
            })
            .count();
        assert!((400..=600).contains(&differ), "{differ}");
    }
}
