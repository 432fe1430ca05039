//! Why a [`Policy`](super::Policy) could not be built, said as a sentence that names the
//! fix.

use std::fmt;
use std::time::Duration;

use super::{Algorithm, Policy};
use crate::Penalty;

/// Why a [`Policy`] could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyError {
    /// `max` was 0: a limit that admits nothing is a closed route, not a rate limit.
    ZeroMax,
    /// `max` exceeds what the algorithm can count exactly.
    MaxTooLarge {
        /// The value given.
        max: u32,
        /// The largest value the algorithm accepts.
        limit: u32,
        /// The algorithm.
        algorithm: Algorithm,
    },
    /// The window is shorter than one millisecond, the clock's resolution.
    WindowTooShort(Duration),
    /// The window is longer than [`Policy::MAX_WINDOW`].
    WindowTooLong(Duration),
    /// The window is not a whole number of milliseconds.
    WindowNotWholeMillis(Duration),
    /// `burst` was 0.
    ZeroBurst,
    /// `burst` was given for an algorithm other than `token_bucket`.
    BurstWithoutTokenBucket(Algorithm),
    /// Refilling an empty bucket of `burst` tokens at `max` per window would take more than
    /// [`Policy::MAX_REFILL`].
    BurstTooLarge {
        /// The burst given.
        burst: u32,
    },
    /// A [`Penalty`]'s block (or escalation window) is shorter than one millisecond.
    BlockTooShort(Duration),
    /// A [`Penalty`]'s block (or escalation window) is longer than [`Penalty::MAX_BLOCK`].
    BlockTooLong(Duration),
    /// An escalation counts from 1 to [`Penalty::MAX_STRIKES`] past blocks.
    StrikesOutOfRange(u32),
    /// A calendar quota is a fixed window aligned to the calendar: it takes no other
    /// algorithm.
    CalendarWithAlgorithm(Algorithm),
    /// An offset from UTC beyond ±14 hours (in minutes).
    OffsetOutOfRange(i32),
    /// `delay` was given for an algorithm other than `token_bucket`: only a bucket says
    /// exactly when a refused request would be admitted and can hold its place.
    DelayWithoutTokenBucket(Algorithm),
    /// A delay longer than [`Policy::MAX_DELAY`], or not a whole number of milliseconds.
    DelayOutOfRange(Duration),
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyError::ZeroMax => f.write_str("the maximum must be at least 1"),
            PolicyError::MaxTooLarge {
                max,
                limit,
                algorithm,
            } => write!(
                f,
                "{algorithm} counts at most {limit} requests per window of this length, got \
                 {max}; use a shorter window or another algorithm"
            ),
            PolicyError::WindowTooShort(w) => {
                write!(f, "the window must be at least 1ms, got {w:?}")
            }
            PolicyError::WindowTooLong(w) => write!(
                f,
                "the window must be at most {} days, got {w:?}",
                Policy::MAX_WINDOW.as_secs() / 86_400
            ),
            PolicyError::WindowNotWholeMillis(w) => {
                write!(
                    f,
                    "the window must be a whole number of milliseconds, got {w:?}"
                )
            }
            PolicyError::ZeroBurst => f.write_str("the burst must be at least 1"),
            PolicyError::BurstTooLarge { burst } => write!(
                f,
                "a burst of {burst} takes more than {} days to refill at this rate",
                Policy::MAX_REFILL.as_secs() / 86_400
            ),
            PolicyError::BurstWithoutTokenBucket(a) => write!(
                f,
                "burst only applies to token_bucket, but the algorithm is {a}"
            ),
            PolicyError::BlockTooShort(b) => write!(f, "a block must last at least 1ms, got {b:?}"),
            PolicyError::BlockTooLong(b) => write!(
                f,
                "a block (and an escalation's window) lasts at most {} days, got {b:?}",
                Penalty::MAX_BLOCK.as_secs() / 86_400
            ),
            PolicyError::StrikesOutOfRange(n) => write!(
                f,
                "an escalation counts 1 to {} past blocks, got {n}",
                Penalty::MAX_STRIKES
            ),
            PolicyError::CalendarWithAlgorithm(a) => write!(
                f,
                "a calendar quota counts as a window aligned to the calendar, not by {a}"
            ),
            PolicyError::OffsetOutOfRange(m) => {
                write!(f, "an offset from UTC is within ±14 hours, got {m} minutes")
            }
            PolicyError::DelayWithoutTokenBucket(a) => write!(
                f,
                "delay only applies to token_bucket (which says exactly when a refused request \
                 would be admitted), but the algorithm is {a}"
            ),
            PolicyError::DelayOutOfRange(d) => write!(
                f,
                "a delay is a whole number of milliseconds up to {} s, got {d:?}",
                Policy::MAX_DELAY.as_secs()
            ),
        }
    }
}

impl PolicyError {
    /// The error in words without its numbers, usable where formatting is not: in a `const`
    /// (the attribute builds its policies at compile time, so these are compile errors).
    pub const fn message(&self) -> &'static str {
        match self {
            PolicyError::ZeroMax => "rate_limit: the maximum must be at least 1",
            PolicyError::MaxTooLarge { algorithm, .. } => match algorithm {
                Algorithm::SlidingWindow => {
                    "rate_limit: sliding_window counts at most 65535 requests per window; \
                     use sliding_window_counter or token_bucket"
                }
                Algorithm::SlidingWindowCounter => {
                    "rate_limit: sliding_window_counter counts at most 16777215 requests per \
                     window, and max × window (in ms) must stay below 2^52; use a shorter \
                     window, fixed_window or token_bucket"
                }
                Algorithm::FixedWindow | Algorithm::TokenBucket => {
                    "rate_limit: the maximum must fit in a u32"
                }
            },
            PolicyError::WindowTooShort(_) => "rate_limit: the window must be at least 1ms",
            PolicyError::WindowTooLong(_) => "rate_limit: the window must be at most 7 days",
            PolicyError::WindowNotWholeMillis(_) => {
                "rate_limit: the window must be a whole number of milliseconds"
            }
            PolicyError::ZeroBurst => "rate_limit: the burst must be at least 1",
            PolicyError::BurstWithoutTokenBucket(_) => {
                "rate_limit: burst only applies to token_bucket"
            }
            PolicyError::BurstTooLarge { .. } => {
                "rate_limit: this burst takes more than 49 days to refill at this rate; lower it"
            }
            PolicyError::BlockTooShort(_) => "rate_limit: a block must last at least 1ms",
            PolicyError::BlockTooLong(_) => {
                "rate_limit: a block (and an escalation's window) lasts at most 30 days"
            }
            PolicyError::StrikesOutOfRange(_) => {
                "rate_limit: an escalation counts 1 to 16 past blocks"
            }
            PolicyError::CalendarWithAlgorithm(_) => {
                "rate_limit: a calendar quota (per = \"day\", \"week\", \"month\") takes no algorithm"
            }
            PolicyError::OffsetOutOfRange(_) => {
                "rate_limit: an offset from UTC is within ±14 hours"
            }
            PolicyError::DelayWithoutTokenBucket(_) => {
                "rate_limit: delay only applies to algorithm = \"token_bucket\""
            }
            PolicyError::DelayOutOfRange(_) => "rate_limit: a delay is at most 60s",
        }
    }
}

impl std::error::Error for PolicyError {}
