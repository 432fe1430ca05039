//! Where "now" comes from: a fast monotonic system clock, a precise one, and a manual one
//! that tests move by hand instead of sleeping.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// A source of monotonic time: readings never go backwards.
///
/// A reading is Unix time — the time since 1970-01-01 UTC — as far as the clock knows it:
/// calendar quotas (`per = "month"`) read the date from it; everything else uses only
/// differences between readings of one clock. The system clocks fix their offset from the
/// wall clock at their first reading and are monotonic from there (setting the wall clock
/// moves nothing); a [`ManualClock`] reads what a test sets it to. Stores work in whole
/// milliseconds.
pub trait Clock: Send + Sync + 'static {
    /// The time since the Unix epoch, as this clock counts it.
    fn now(&self) -> Duration;
}

/// The wall clock's reading when a monotonic clock read `monotonic`: what to add to its
/// readings to make them Unix time. Fixed once per process and clock.
fn unix_offset(anchor: &OnceLock<Duration>, monotonic: Duration) -> Duration {
    *anchor.get_or_init(|| {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        wall.saturating_sub(monotonic)
    })
}

/// The default clock: the kernel's coarse monotonic clock on Linux (`CLOCK_MONOTONIC_COARSE`).
///
/// Reading it costs about 3 ns against about 23 ns for [`Instant::now`] (measured on the
/// project's 2-core EPYC machines), which is most of the cost of a whole check. The price is
/// resolution: it advances once per kernel tick, 1 to 4 ms depending on the kernel's `HZ`.
/// A window is then exact to within one tick: a request that arrives up to one tick after an
/// instant leaves the window may still see it counted, never the other way round, so a
/// limit is never exceeded. Use [`PreciseClock`] where millisecond-exact edges matter more
/// than 20 ns per request. On other systems it is [`PreciseClock`].
///
/// Like [`Instant`], it never goes backwards.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    #[inline]
    fn now(&self) -> Duration {
        static ANCHOR: OnceLock<Duration> = OnceLock::new();
        match coarse::now() {
            Some(monotonic) => monotonic + unix_offset(&ANCHOR, monotonic),
            None => PreciseClock.now(),
        }
    }
}

#[cfg(any(target_os = "linux", target_os = "android"))]
mod coarse {
    use std::time::Duration;

    /// `CLOCK_MONOTONIC_COARSE`, or `None` if the kernel refuses it (pre-2.6.32).
    #[inline]
    #[allow(unsafe_code)]
    pub(super) fn now() -> Option<Duration> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid, exclusively borrowed timespec for the duration of the call.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
        (rc == 0).then(|| Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
mod coarse {
    #[inline]
    pub(super) fn now() -> Option<std::time::Duration> {
        None
    }
}

/// A monotonic clock with [`Instant`]'s full resolution, reading Unix time as the wall clock
/// gave it at its first reading in the process.
#[derive(Clone, Copy, Debug, Default)]
pub struct PreciseClock;

impl Clock for PreciseClock {
    fn now(&self) -> Duration {
        static ORIGIN: OnceLock<Instant> = OnceLock::new();
        static ANCHOR: OnceLock<Duration> = OnceLock::new();
        let elapsed = ORIGIN.get_or_init(Instant::now).elapsed();
        elapsed + unix_offset(&ANCHOR, elapsed)
    }
}

/// A clock that moves only when told to: tests advance it instead of sleeping.
///
/// Clones are handles on the same time, so a test keeps one and gives another to the
/// limiter.
///
/// ```
/// use std::time::Duration;
/// use limiter::{Clock, ManualClock};
///
/// let clock = ManualClock::new();
/// let handle = clock.clone();
/// handle.advance(Duration::from_secs(59));
/// assert_eq!(clock.now(), Duration::from_secs(59));
/// ```
#[derive(Clone, Default)]
pub struct ManualClock {
    nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock reading zero.
    pub fn new() -> ManualClock {
        ManualClock::default()
    }

    /// A clock reading `start`.
    pub fn starting_at(start: Duration) -> ManualClock {
        let clock = ManualClock::new();
        clock.advance(start);
        clock
    }

    /// Moves time forward by `by` for every handle on this clock.
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_add(by, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::SeqCst))
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ManualClock").field(&self.now()).finish()
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> Duration {
        (**self).now()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_clocks_never_go_backwards() {
        for clock in [&SystemClock as &dyn Clock, &PreciseClock] {
            let mut last = clock.now();
            for _ in 0..100_000 {
                let now = clock.now();
                assert!(now >= last, "{now:?} < {last:?}");
                last = now;
            }
        }
    }

    #[test]
    fn system_clocks_read_unix_time() {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        for clock in [&SystemClock as &dyn Clock, &PreciseClock] {
            let apart = clock.now().abs_diff(wall);
            assert!(
                apart < Duration::from_secs(1),
                "{apart:?} from the wall clock"
            );
        }
    }

    #[test]
    fn manual_clock_handles_share_time() {
        let clock = ManualClock::starting_at(Duration::from_millis(5));
        let other = clock.clone();
        other.advance(Duration::from_millis(1));
        assert_eq!(clock.now(), Duration::from_millis(6));
        assert_eq!(format!("{clock:?}"), "ManualClock(6ms)");
    }
}
