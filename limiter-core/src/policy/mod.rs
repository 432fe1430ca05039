//! What a limit allows: how many requests, over which window, counted by which algorithm.

use std::fmt;
use std::num::NonZeroU32;
use std::time::Duration;

pub(crate) mod calendar;
pub(crate) mod penalty;
use crate::Penalty;
use calendar::{Calendar, Period};

mod error;
pub use error::PolicyError;

/// How requests are counted. The exact rules, the memory each one costs and the error each one
/// makes: the facade's `limiter::guide::algorithms`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Algorithm {
    /// An exact log of the admitted instants: no boundary to exploit. The default.
    #[default]
    SlidingWindow,
    /// A window opened by a key's first request; allows a burst of `2 × max` across its edge.
    FixedWindow,
    /// Aligned windows and a weighted estimate: constant memory, approximate.
    SlidingWindowCounter,
    /// A bucket of `burst` tokens refilled continuously at `max` per window (GCRA).
    TokenBucket,
}

impl Algorithm {
    /// Every algorithm, in the order the documentation lists them.
    pub const ALL: [Algorithm; 4] = [
        Algorithm::SlidingWindow,
        Algorithm::FixedWindow,
        Algorithm::SlidingWindowCounter,
        Algorithm::TokenBucket,
    ];

    /// The name used in `#[rate_limit(algorithm = "...")]`.
    pub const fn name(self) -> &'static str {
        match self {
            Algorithm::SlidingWindow => "sliding_window",
            Algorithm::FixedWindow => "fixed_window",
            Algorithm::SlidingWindowCounter => "sliding_window_counter",
            Algorithm::TokenBucket => "token_bucket",
        }
    }

    /// The algorithm with that attribute name, if there is one.
    ///
    /// ```
    /// use limiter::Algorithm;
    /// assert_eq!(Algorithm::from_name("token_bucket"), Some(Algorithm::TokenBucket));
    /// assert_eq!(Algorithm::from_name("leaky"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Algorithm> {
        Algorithm::ALL.into_iter().find(|a| a.name() == name)
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A limit: at most `max` requests per `window`, counted by `algorithm`.
///
/// Built with checked constructors, so a `Policy` always holds values every store computes
/// exactly (see [`Policy::MAX_WINDOW`], [`Policy::max_limit_for`] and
/// [`Policy::MAX_REFILL`]): a policy that exists is never refused by a store at run time.
///
/// ```
/// use std::time::Duration;
/// use limiter::{Algorithm, Policy};
///
/// let login = Policy::new(5, Duration::from_secs(60))?;
/// assert_eq!(login.max().get(), 5);
/// assert_eq!(login.algorithm(), Algorithm::SlidingWindow);
///
/// let api = Policy::new(100, Duration::from_secs(1))?
///     .with_algorithm(Algorithm::TokenBucket)?
///     .with_burst(20)?;
/// assert_eq!(api.burst().get(), 20);
/// # Ok::<(), limiter::PolicyError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    max: NonZeroU32,
    window_ms: u64,
    algorithm: Algorithm,
    /// Whether the algorithm was named (`for_algorithm`, `with_algorithm`) rather than taken
    /// by default (`new`): a policy set by configuration over a declared limit keeps the
    /// declared algorithm unless it names one. Not part of the policy's identity.
    algorithm_named: bool,
    burst: Option<NonZeroU32>,
    /// What a client it rejects suffers besides the rejection: see [`Penalty`].
    penalty: Option<Penalty>,
    /// For a calendar quota (`per = "month"`), the periods it resets at; `window_ms` is then
    /// the longest period's length.
    calendar: Option<Calendar>,
    /// How long a request the bucket would refuse may wait for its token instead (`delay`,
    /// token bucket only), in ms; 0 for none.
    delay_ms: u64,
}

/// What a policy counts by: every field but whether its algorithm was named, and its burst
/// as it counts (a bucket's burst given as its max is the same bucket).
type Identity = (
    NonZeroU32,
    u64,
    Algorithm,
    NonZeroU32,
    Option<Penalty>,
    Option<Calendar>,
    u64,
);

impl Policy {
    fn identity(&self) -> Identity {
        (
            self.max,
            self.window_ms,
            self.algorithm,
            self.burst(),
            self.penalty,
            self.calendar,
            self.delay_ms,
        )
    }
}

// Two policies that count the same way are the same policy, however the algorithm was chosen.
impl PartialEq for Policy {
    fn eq(&self, other: &Policy) -> bool {
        self.identity() == other.identity()
    }
}

impl Eq for Policy {}

impl std::hash::Hash for Policy {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.identity().hash(state);
    }
}

/// `5 per 1m, sliding_window` (`…, burst 20` for a bucket with a burst, `…, block 15m` and
/// `…, 3 in 1h -> 1d` with a penalty): the window in the attribute's units.
///
/// ```
/// use std::time::Duration;
/// use limiter::Policy;
/// let policy = Policy::new(100, Duration::from_secs(5400))?;
/// assert_eq!(policy.to_string(), "100 per 1h30m, sliding_window");
/// # Ok::<(), limiter::PolicyError>(())
/// ```
impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.calendar {
            Some(calendar) => write!(f, "{} per {calendar}", self.max)?,
            None => write!(
                f,
                "{} per {}, {}",
                self.max,
                Span(self.window_ms),
                self.algorithm
            )?,
        }
        if let Some(burst) = self.burst {
            write!(f, ", burst {burst}")?;
        }
        if self.delay_ms > 0 {
            write!(f, ", delay {}", Span(self.delay_ms))?;
        }
        if let Some(penalty) = self.penalty {
            write!(f, ", {penalty}")?;
        }
        Ok(())
    }
}

/// Milliseconds in the attribute's units, largest first: `1h30m`, `500ms`.
pub(crate) struct Span(pub(crate) u64);

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut left = self.0;
        for (unit, ms) in [
            ("d", 86_400_000),
            ("h", 3_600_000),
            ("m", 60_000),
            ("s", 1_000),
        ] {
            if left >= ms {
                write!(f, "{}{unit}", left / ms)?;
                left %= ms;
            }
        }
        if left > 0 || self.0 == 0 {
            write!(f, "{left}ms")?;
        }
        Ok(())
    }
}

impl Policy {
    /// The longest window: 7 days. Stores keep instants as 32-bit millisecond stamps, which
    /// stay unambiguous for a few windows of that length; a longer "rate" is a quota.
    pub const MAX_WINDOW: Duration = Duration::from_secs(7 * 86_400);

    /// The longest time a token bucket may take to refill completely: 49 days (seven of the
    /// longest windows), which keeps its arithmetic in nanoseconds below 2⁵² — exact in
    /// every store, Redis's Lua doubles included.
    pub const MAX_REFILL: Duration = Duration::from_secs(49 * 86_400);

    /// The largest product `max × window in ms` of the sliding window counter: its weighted
    /// estimate stays exact in every store, Redis's Lua doubles included.
    pub(crate) const MAX_COUNTER_PRODUCT: u64 = (1 << 52) - 1;

    /// At most `max` requests per `window`, counted by the default sliding window — or,
    /// when configuration sets it over a declared limit
    /// ([`LimiterBuilder::policy`](crate::LimiterBuilder::policy),
    /// [`Limiter::set_policy`](crate::Limiter::set_policy)), by that limit's algorithm:
    /// only [`for_algorithm`](Self::for_algorithm) names one.
    pub const fn new(max: u32, window: Duration) -> Result<Policy, PolicyError> {
        match Policy::for_algorithm(Algorithm::SlidingWindow, max, window) {
            Ok(policy) => Ok(Policy {
                algorithm_named: false,
                ..policy
            }),
            Err(error) => Err(error),
        }
    }

    /// At most `max` requests per `window`, counted by `algorithm`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::{Algorithm, Policy};
    /// let global = Policy::for_algorithm(Algorithm::FixedWindow, 1_000_000, Duration::from_secs(3600))?;
    /// assert_eq!(global.window(), Duration::from_secs(3600));
    /// // Usable in a `const`: a mistake there is a compile error.
    /// const LOGIN: Policy = match Policy::new(5, Duration::from_secs(60)) {
    ///     Ok(policy) => policy,
    ///     Err(error) => panic!("{}", error.message()),
    /// };
    /// # Ok::<(), limiter::PolicyError>(())
    /// ```
    pub const fn for_algorithm(
        algorithm: Algorithm,
        max: u32,
        window: Duration,
    ) -> Result<Policy, PolicyError> {
        let Some(max) = NonZeroU32::new(max) else {
            return Err(PolicyError::ZeroMax);
        };
        let nanos = window.as_nanos();
        if nanos < 1_000_000 {
            return Err(PolicyError::WindowTooShort(window));
        }
        if nanos > Policy::MAX_WINDOW.as_nanos() {
            return Err(PolicyError::WindowTooLong(window));
        }
        if !nanos.is_multiple_of(1_000_000) {
            return Err(PolicyError::WindowNotWholeMillis(window));
        }
        let policy = Policy {
            max,
            window_ms: (nanos / 1_000_000) as u64,
            algorithm,
            algorithm_named: true,
            burst: None,
            penalty: None,
            calendar: None,
            delay_ms: 0,
        };
        policy.validate()
    }

    /// At most `max` requests per calendar `period`, in UTC (see
    /// [`with_utc_offset`](Self::with_utc_offset)), resetting at its boundary: a quota,
    /// counted as a fixed window aligned to the calendar — `per = "month"`.
    ///
    /// ```
    /// use limiter::{Period, Policy};
    /// let api = Policy::per_calendar(10_000, Period::Month)?;
    /// assert_eq!(api.to_string(), "10000 per month");
    /// assert_eq!(api.with_utc_offset(120)?.to_string(), "10000 per month, utc+02:00");
    /// # Ok::<(), limiter::PolicyError>(())
    /// ```
    pub const fn per_calendar(max: u32, period: Period) -> Result<Policy, PolicyError> {
        let Some(max) = NonZeroU32::new(max) else {
            return Err(PolicyError::ZeroMax);
        };
        Ok(Policy {
            max,
            window_ms: period.longest_ms(),
            algorithm: Algorithm::FixedWindow,
            algorithm_named: true,
            burst: None,
            penalty: None,
            calendar: Some(Calendar::utc(period)),
            delay_ms: 0,
        })
    }

    /// The same quota with its periods beginning at `minutes` east of UTC (negative: west;
    /// within ±14 hours): a day that ends at local midnight.
    pub const fn with_utc_offset(self, minutes: i32) -> Result<Policy, PolicyError> {
        let Some(calendar) = self.calendar else {
            return Ok(self);
        };
        if minutes > Calendar::MAX_OFFSET_MIN as i32 || minutes < -(Calendar::MAX_OFFSET_MIN as i32)
        {
            return Err(PolicyError::OffsetOutOfRange(minutes));
        }
        match Calendar::at_offset(calendar.period(), minutes as i16) {
            Some(calendar) => Ok(Policy {
                calendar: Some(calendar),
                ..self
            }),
            None => Err(PolicyError::OffsetOutOfRange(minutes)),
        }
    }

    /// For a calendar quota, the periods it resets at.
    pub const fn calendar(&self) -> Option<Calendar> {
        self.calendar
    }

    /// The same limit counted by `algorithm`.
    ///
    /// Refused when `max` is beyond what that algorithm counts exactly, or when a burst was
    /// set and the algorithm is not `token_bucket`.
    pub const fn with_algorithm(self, algorithm: Algorithm) -> Result<Policy, PolicyError> {
        Policy {
            algorithm,
            algorithm_named: true,
            ..self
        }
        .validate()
    }

    /// Whether the algorithm was named rather than taken by default ([`Policy::new`]).
    pub const fn names_algorithm(&self) -> bool {
        self.algorithm_named
    }

    const fn validate(self) -> Result<Policy, PolicyError> {
        if self.calendar.is_some() && !matches!(self.algorithm, Algorithm::FixedWindow) {
            return Err(PolicyError::CalendarWithAlgorithm(self.algorithm));
        }
        if self.delay_ms > 0 && !matches!(self.algorithm, Algorithm::TokenBucket) {
            return Err(PolicyError::DelayWithoutTokenBucket(self.algorithm));
        }
        let limit = Policy::max_limit_for(self.algorithm, self.window_ms);
        if self.max.get() > limit {
            return Err(PolicyError::MaxTooLarge {
                max: self.max.get(),
                limit,
                algorithm: self.algorithm,
            });
        }
        if self.burst.is_some() && !matches!(self.algorithm, Algorithm::TokenBucket) {
            return Err(PolicyError::BurstWithoutTokenBucket(self.algorithm));
        }
        let refill = self.burst().get() as u128 * self.emission_interval_ns() as u128;
        if refill > Policy::MAX_REFILL.as_nanos() {
            return Err(PolicyError::BurstTooLarge {
                burst: self.burst().get(),
            });
        }
        Ok(self)
    }

    /// The bucket capacity for `token_bucket` (default: `max`).
    pub const fn with_burst(self, burst: u32) -> Result<Policy, PolicyError> {
        let Some(burst) = NonZeroU32::new(burst) else {
            return Err(PolicyError::ZeroBurst);
        };
        Policy {
            burst: Some(burst),
            ..self
        }
        .validate()
    }

    /// The same limit, whose rejected clients suffer `penalty` (a block, escalated for
    /// repeat offenders): see [`Penalty`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::{Penalty, Policy};
    /// let login = Policy::new(5, Duration::from_secs(60))?
    ///     .with_penalty(Penalty::block(Duration::from_secs(900))?);
    /// assert_eq!(login.to_string(), "5 per 1m, sliding_window, block 15m");
    /// # Ok::<(), limiter::PolicyError>(())
    /// ```
    pub const fn with_penalty(self, penalty: Penalty) -> Policy {
        Policy {
            penalty: Some(penalty),
            ..self
        }
    }

    /// The same limit without a penalty.
    pub const fn without_penalty(self) -> Policy {
        Policy {
            penalty: None,
            ..self
        }
    }

    /// What this policy, set by configuration or chosen per request, becomes over the
    /// `declared` one: it keeps the declared algorithm unless it names one, and the
    /// declared penalty unless it has one — a deployment that tunes `max` or `per` must not
    /// silently turn a `fixed_window` route into a sliding window, or lift its blocks.
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::{Algorithm, Penalty, Policy};
    /// let minute = Duration::from_secs(60);
    /// let declared = Policy::for_algorithm(Algorithm::FixedWindow, 5, minute)?
    ///     .with_penalty(Penalty::block(15 * minute)?);
    /// let tuned = Policy::new(10, minute)?.over(&declared)?;
    /// assert_eq!(tuned.to_string(), "10 per 1m, fixed_window, block 15m");
    /// # Ok::<(), limiter::PolicyError>(())
    /// ```
    pub fn over(&self, declared: &Policy) -> Result<Policy, PolicyError> {
        let policy = match self.names_algorithm() {
            true => *self,
            false => self.with_algorithm(declared.algorithm())?,
        };
        let policy = match (policy.penalty, declared.penalty) {
            (None, Some(penalty)) => policy.with_penalty(penalty),
            _ => policy,
        };
        Ok(match (policy.delay_ms, declared.delay_ms) {
            (0, delay) if delay > 0 => Policy {
                delay_ms: delay,
                ..policy
            }
            .validate()
            .unwrap_or(policy),
            _ => policy,
        })
    }

    /// Whether `other` has this policy's delay and penalty: what a policy changes of a
    /// decision beyond how it counts.
    #[inline]
    pub(crate) fn same_extras(&self, other: &Policy) -> bool {
        self.delay_ms == other.delay_ms && self.penalty == other.penalty
    }

    /// This policy, counting as it does, with `other`'s delay and penalty.
    pub(crate) fn with_extras_of(self, other: &Policy) -> Policy {
        Policy {
            delay_ms: other.delay_ms,
            penalty: other.penalty,
            ..self
        }
    }

    /// The longest `delay`: a minute (a request that waits longer is better refused).
    pub const MAX_DELAY: Duration = Duration::from_secs(60);

    /// The same bucket, whose refused requests wait for their token instead when it comes
    /// within `delay` (nginx's `burst` with `delay`): such a request takes its token now,
    /// ahead, and runs at the instant it would have been admitted. Token bucket only.
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::{Algorithm, Policy};
    /// let smooth = Policy::for_algorithm(Algorithm::TokenBucket, 10, Duration::from_secs(1))?
    ///     .with_delay(Duration::from_secs(2))?;
    /// assert_eq!(smooth.to_string(), "10 per 1s, token_bucket, delay 2s");
    /// # Ok::<(), limiter::PolicyError>(())
    /// ```
    pub const fn with_delay(self, delay: Duration) -> Result<Policy, PolicyError> {
        let nanos = delay.as_nanos();
        if nanos > Policy::MAX_DELAY.as_nanos() || !nanos.is_multiple_of(1_000_000) {
            return Err(PolicyError::DelayOutOfRange(delay));
        }
        Policy {
            delay_ms: (nanos / 1_000_000) as u64,
            ..self
        }
        .validate()
    }

    /// How long a refused request may wait for its token instead, if it may.
    pub const fn delay(&self) -> Option<Duration> {
        match self.delay_ms {
            0 => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }

    /// The penalty of a client it rejects, if any.
    pub const fn penalty(&self) -> Option<Penalty> {
        self.penalty
    }

    /// The largest `max` that `algorithm` counts exactly with any window: the sliding log
    /// indexes its ring with 16 bits, the counter packs both windows' counts into 24 bits
    /// each. See [`max_limit_for`](Self::max_limit_for) for the bound with a given window.
    pub const fn max_limit(algorithm: Algorithm) -> u32 {
        match algorithm {
            Algorithm::SlidingWindow => u16::MAX as u32,
            Algorithm::SlidingWindowCounter => (1 << 24) - 1,
            Algorithm::FixedWindow | Algorithm::TokenBucket => u32::MAX,
        }
    }

    /// The largest `max` that `algorithm` counts exactly with a window of `window_ms`: also,
    /// for the counter, `max × window_ms` at most 2⁵² − 1 (its estimate stays exact in every
    /// store, Redis's Lua doubles included).
    ///
    /// ```
    /// use limiter::{Algorithm, Policy};
    /// let week = 7 * 86_400_000;
    /// assert_eq!(Policy::max_limit_for(Algorithm::SlidingWindowCounter, 60_000), 16_777_215);
    /// assert_eq!(Policy::max_limit_for(Algorithm::SlidingWindowCounter, week), 7_446_427);
    /// ```
    pub const fn max_limit_for(algorithm: Algorithm, window_ms: u64) -> u32 {
        let limit = Policy::max_limit(algorithm);
        match algorithm {
            Algorithm::SlidingWindowCounter if window_ms > 0 => {
                let by_product = Policy::MAX_COUNTER_PRODUCT / window_ms;
                if by_product < limit as u64 {
                    by_product as u32
                } else {
                    limit
                }
            }
            _ => limit,
        }
    }

    /// The policy `#[rate_limit]` declares, built in a `const` that panics (a compile error)
    /// with [`PolicyError::message`] when it is refused. `burst` 0 means none. Not a public
    /// API.
    #[doc(hidden)]
    pub const fn __try_from_attribute(
        max: u32,
        window_ms: u64,
        algorithm: Algorithm,
        burst: u32,
    ) -> Result<Policy, PolicyError> {
        let window = Duration::from_millis(window_ms);
        match Policy::for_algorithm(algorithm, max, window) {
            Ok(policy) if burst == 0 => Ok(policy),
            Ok(policy) => policy.with_burst(burst),
            Err(error) => Err(error),
        }
    }

    /// Requests admitted per window.
    pub const fn max(&self) -> NonZeroU32 {
        self.max
    }

    /// The window.
    pub const fn window(&self) -> Duration {
        Duration::from_millis(self.window_ms)
    }

    /// The window in milliseconds.
    pub const fn window_ms(&self) -> u64 {
        self.window_ms
    }

    /// The counting algorithm.
    pub const fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// The token bucket's time per token, `window / max` in nanoseconds, rounded up so that
    /// rounding can never admit more than `max` per window. For the glue, the benchmarks and
    /// the reference models: not a public API.
    #[doc(hidden)]
    pub const fn emission_interval_ns(&self) -> u64 {
        (self.window_ms * 1_000_000).div_ceil(self.max.get() as u64)
    }

    /// The token bucket's capacity: the configured burst, else `max`.
    pub const fn burst(&self) -> NonZeroU32 {
        match self.burst {
            Some(burst) => burst,
            None => self.max,
        }
    }

    /// The most units one request may cost and still be admitted (when nothing else is
    /// counted): `max`, or a token bucket's burst. A costlier request is never admitted.
    ///
    /// ```
    /// use std::time::Duration;
    /// use limiter::{Algorithm, Policy};
    /// let hour = Duration::from_secs(3600);
    /// assert_eq!(Policy::new(100, hour)?.capacity(), 100);
    /// let bucket = Policy::for_algorithm(Algorithm::TokenBucket, 100, hour)?.with_burst(10)?;
    /// assert_eq!(bucket.capacity(), 10);
    /// # Ok::<(), limiter::PolicyError>(())
    /// ```
    pub const fn capacity(&self) -> u32 {
        match self.algorithm {
            Algorithm::TokenBucket => self.burst().get(),
            _ => self.max.get(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_zero_and_absurd_values() {
        let minute = Duration::from_secs(60);
        assert_eq!(Policy::new(0, minute), Err(PolicyError::ZeroMax));
        assert!(matches!(
            Policy::new(1, Duration::ZERO),
            Err(PolicyError::WindowTooShort(_))
        ));
        assert!(matches!(
            Policy::new(1, Duration::from_micros(1500)),
            Err(PolicyError::WindowNotWholeMillis(_))
        ));
        assert!(matches!(
            Policy::new(1, Duration::from_secs(8 * 86_400)),
            Err(PolicyError::WindowTooLong(_))
        ));
        assert!(matches!(
            Policy::new(70_000, minute),
            Err(PolicyError::MaxTooLarge { limit: 65_535, .. })
        ));
        assert!(Policy::for_algorithm(Algorithm::TokenBucket, 70_000, minute).is_ok());
        assert!(matches!(
            Policy::for_algorithm(Algorithm::SlidingWindowCounter, 1 << 24, minute),
            Err(PolicyError::MaxTooLarge { .. })
        ));
        assert_eq!(
            Policy::new(1, minute).unwrap().with_burst(3),
            Err(PolicyError::BurstWithoutTokenBucket(
                Algorithm::SlidingWindow
            ))
        );
        let bucket = Policy::for_algorithm(Algorithm::TokenBucket, 1, minute).unwrap();
        assert!(matches!(
            bucket
                .with_burst(2)
                .unwrap()
                .with_algorithm(Algorithm::FixedWindow),
            Err(PolicyError::BurstWithoutTokenBucket(_))
        ));
        assert_eq!(bucket.with_burst(0), Err(PolicyError::ZeroBurst));
        assert_eq!(bucket.with_burst(3).unwrap().burst().get(), 3);
        assert_eq!(bucket.burst().get(), 1);
    }

    #[test]
    fn every_policy_stays_exact_in_every_store() {
        let week = Duration::from_secs(7 * 86_400);
        let counter = |max| Policy::for_algorithm(Algorithm::SlidingWindowCounter, max, week);
        assert!(counter(7_446_427).is_ok());
        assert!(matches!(
            counter(7_446_428),
            Err(PolicyError::MaxTooLarge {
                limit: 7_446_427,
                ..
            })
        ));
        // The bucket computes no `max × window`: any u32 maximum is fine...
        let hour = Duration::from_secs(3600);
        assert!(Policy::for_algorithm(Algorithm::TokenBucket, 4_000_000_000, hour).is_ok());
        // ...but its refill time is bounded: 7 tokens of a week each is 49 days exactly.
        let weekly = Policy::for_algorithm(Algorithm::TokenBucket, 1, week).unwrap();
        assert!(weekly.with_burst(7).is_ok());
        assert_eq!(
            weekly.with_burst(8),
            Err(PolicyError::BurstTooLarge { burst: 8 })
        );
    }

    #[test]
    fn policies_build_in_a_const() {
        const BUCKET: Result<Policy, PolicyError> =
            Policy::__try_from_attribute(10, 60_000, Algorithm::TokenBucket, 20);
        assert_eq!(BUCKET.map(|p| p.burst().get()), Ok(20));
        const LOG: Result<Policy, PolicyError> =
            Policy::__try_from_attribute(5, 1_000, Algorithm::SlidingWindow, 0);
        assert_eq!(LOG.map(|p| p.burst().get()), Ok(5));
        const WRONG: Result<Policy, PolicyError> =
            Policy::__try_from_attribute(5, 1_000, Algorithm::SlidingWindow, 2);
        assert_eq!(
            WRONG,
            Err(PolicyError::BurstWithoutTokenBucket(
                Algorithm::SlidingWindow
            ))
        );
    }

    #[test]
    fn errors_read_as_sentences() {
        let err = Policy::new(1, Duration::from_secs(30 * 86_400)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the window must be at most 7 days, got 2592000s"
        );
    }
}
