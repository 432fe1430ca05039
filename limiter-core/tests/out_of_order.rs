//! Clock readings that reach the store out of order: two workers read the clock, and the
//! later reader takes the shard's lock first. A reading older than a key's state must never
//! drop, reset or rewind it, and no algorithm may admit more than its bound.
//!
//! The bounds, with `τ` the instant a check reaches the store (the order of arrival) and
//! every reading at most `d` older than its `τ`: a check is counted at an instant between
//! its reading and its `τ`, so
//! - the sliding window admits at most `N` in any interval of length `T − d` of `τ`;
//! - the fixed window opens a new window only once `T` has passed since the reading that
//!   opened the last one;
//! - the counter admits at most `2N` in any interval of length `T − d`;
//! - the token bucket admits at most `B + (b − a + d) / I` among checks arriving in
//!   `[a, b]` (its state only moves forward; the `d` is the first reading's lag, and a full
//!   bucket is forgotten only a window after it is full, so no reading within the lag finds
//!   it gone and starts a fresh one ahead of it).
//!
//! The default clock makes `d` one kernel tick (1–4 ms) at least: a reading is the time of
//! the last tick. `the_coarse_clock_bound_is_exact` shows that bound reached.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use std::sync::Barrier;
use std::time::Duration;

use limiter_core::{Algorithm, Clock, Decision, Limit, MemoryStore, Policy, PreciseClock, Store};
use proptest::prelude::*;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn check(store: &MemoryStore, limit: &Limit, key: &[u8], reading_ms: u64) -> Decision {
    store
        .check(limit, key, ms(reading_ms))
        .now_or_never()
        .expect("the memory store decides at once")
        .expect("the memory store never fails")
}

fn policy(algorithm: Algorithm, max: u32, window_ms: u64) -> Policy {
    Policy::for_algorithm(algorithm, max, ms(window_ms)).unwrap()
}

// ---- the reproductions ---------------------------------------------------------------

/// Five at 100.004 s, one read at 100.000 s (but served after them), five at 100.004 s:
/// the late reading used to look 49 days newer than the state, which was wiped.
#[test]
fn a_late_reading_never_resets_a_key() {
    for algorithm in Algorithm::ALL {
        let store = MemoryStore::new();
        let limit = Limit::new("login", policy(algorithm, 5, 60_000));
        let mut admitted = 0;
        for reading in [[100_004; 5].as_slice(), &[100_000], &[100_004; 5]].concat() {
            admitted += usize::from(check(&store, &limit, b"k", reading).allowed());
        }
        assert_eq!(admitted, 5, "{algorithm}");
    }
}

/// Across an aligned window edge: five at 600.001 s, one read at 599.999 s, five at
/// 600.002 s. The counter used to count the late one in the previous window and forget the
/// current one.
#[test]
fn a_late_reading_across_a_window_edge_moves_no_count_backwards() {
    for algorithm in Algorithm::ALL {
        let store = MemoryStore::new();
        let limit = Limit::new("edge", policy(algorithm, 5, 60_000));
        let readings = [[600_001; 5].as_slice(), &[599_999], &[600_002; 5]].concat();
        let admitted = readings
            .iter()
            .filter(|&&r| check(&store, &limit, b"k", r).allowed())
            .count();
        assert_eq!(admitted, 5, "{algorithm}");
    }
}

/// A late reading must not make a table look idle for longer than it is: a table idle for
/// a whole window is cleared at once, so that clock would drop live state.
#[test]
fn a_late_reading_never_makes_live_state_look_idle() {
    for algorithm in Algorithm::ALL {
        // One shard, so that every key below shares one table.
        let store = MemoryStore::with_max_keys(100);
        let limit = Limit::new("idle", policy(algorithm, 2, 1_000));
        // The table is made long ago and swept at 50 s.
        check(&store, &limit, b"first", 40_000);
        check(&store, &limit, b"warm", 50_000);
        assert!(check(&store, &limit, b"k", 50_500).allowed());
        assert!(check(&store, &limit, b"k", 50_500).allowed());
        // Another client's check, read 600 ms earlier, served now.
        check(&store, &limit, b"late", 49_900);
        // At 51 s a sweep is due; `k`'s requests are 500 ms old and still count (the bucket
        // has refilled one token by then, and only one).
        let admitted = (0..2)
            .filter(|_| check(&store, &limit, b"k", 51_000).allowed())
            .count();
        let expected = usize::from(algorithm == Algorithm::TokenBucket);
        assert_eq!(admitted, expected, "{algorithm}");
    }
}

// ---- random schedules ----------------------------------------------------------------

#[path = "common/lagging.rs"]
mod lagging;

use lagging::{any_policy, run, schedule, start, within_bound};

fn through<'a>(store: &'a MemoryStore, limit: &Limit) -> impl FnMut(u8, u64) -> Decision + 'a {
    let limit = limit.clone();
    move |key, reading| check(store, &limit, &[key], reading)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn sliding_window_holds_its_bound_whatever_the_order(
        policy in any_policy(Algorithm::SlidingWindow), start in start(), schedule in schedule(50)
    ) {
        let store = MemoryStore::new();
        let runs = run(through(&store, &Limit::new("s", policy)), start, &schedule);
        within_bound(&policy, &runs)?;
    }

    #[test]
    fn fixed_window_holds_its_bound_whatever_the_order(
        policy in any_policy(Algorithm::FixedWindow), start in start(), schedule in schedule(50)
    ) {
        let store = MemoryStore::new();
        let runs = run(through(&store, &Limit::new("f", policy)), start, &schedule);
        within_bound(&policy, &runs)?;
    }

    #[test]
    fn sliding_window_counter_holds_its_bound_whatever_the_order(
        policy in any_policy(Algorithm::SlidingWindowCounter), start in start(), schedule in schedule(50)
    ) {
        let store = MemoryStore::new();
        let runs = run(through(&store, &Limit::new("c", policy)), start, &schedule);
        within_bound(&policy, &runs)?;
    }

    #[test]
    fn token_bucket_holds_its_bound_whatever_the_order(
        policy in any_policy(Algorithm::TokenBucket), start in start(), schedule in schedule(50)
    ) {
        let store = MemoryStore::new();
        let runs = run(through(&store, &Limit::new("b", policy)), start, &schedule);
        within_bound(&policy, &runs)?;
    }
}

/// With readings rounded down to a 4 ms tick (the coarse default clock), `N = 1` per second
/// admits two requests 996 ms apart in real time, and never closer: the window is exact to
/// within one tick, as the documentation says.
#[test]
fn the_coarse_clock_bound_is_exact() {
    const TICK: u64 = 4;
    let coarse = |true_ms: f64| (true_ms as u64) / TICK * TICK;
    for algorithm in [Algorithm::SlidingWindow, Algorithm::FixedWindow] {
        let store = MemoryStore::new();
        let limit = Limit::new("tick", policy(algorithm, 1, 1_000));
        // Admitted at 3.9 ms real time (read as 0), then tried every 0.5 ms.
        assert!(check(&store, &limit, b"k", coarse(3.9)).allowed());
        let mut at = 4.0;
        while !check(&store, &limit, b"k", coarse(at)).allowed() {
            at += 0.5;
        }
        assert_eq!(at - 3.9, 996.1, "{algorithm}: {at}");
    }
}

// ---- the real clock, many threads ----------------------------------------------------

/// Eight threads on this machine's two cores read the real clock, yield (so that others
/// read and check in between), then check: readings reach the store in every order. The
/// sliding window never counts `N + 1` requests whose instants all fall within one window.
#[test]
fn threads_that_yield_between_reading_and_checking_never_exceed_the_limit() {
    const THREADS: usize = 8;
    const MAX: u32 = 5;
    const WINDOW: u64 = 50;
    let clock = PreciseClock;
    for algorithm in [Algorithm::SlidingWindow, Algorithm::SlidingWindowCounter] {
        let store = MemoryStore::new();
        let limit = Limit::new("stress", policy(algorithm, MAX, WINDOW));
        let start = Barrier::new(THREADS);
        let deadline = clock.now() + Duration::from_millis(600);
        // (reading, after), in ms, of every admitted check.
        let mut admitted: Vec<(u64, u64)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|_| {
                    s.spawn(|| {
                        start.wait();
                        let mut mine = Vec::new();
                        while clock.now() < deadline {
                            let reading = clock.now();
                            std::thread::yield_now();
                            let d = store
                                .check(&limit, b"hot", reading)
                                .now_or_never()
                                .unwrap()
                                .unwrap();
                            let after = clock.now();
                            if d.allowed() {
                                mine.push((reading.as_millis() as u64, after.as_micros() as u64));
                            }
                        }
                        mine
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        admitted.sort_unstable();
        // A request is counted at an instant between its reading and the moment it returned
        // (in µs, rounded up to ms below). N + 1 of them whose whole span — earliest
        // reading to latest return — is shorter than the bound were surely counted within
        // one window: that is a violation.
        let (group, bound) = match algorithm {
            Algorithm::SlidingWindow => (MAX as usize + 1, WINDOW),
            _ => (2 * MAX as usize + 1, WINDOW),
        };
        for chunk in admitted.windows(group) {
            let first_reading = chunk[0].0;
            let last_return = chunk
                .iter()
                .map(|&(_, after)| after.div_ceil(1_000))
                .max()
                .unwrap();
            assert!(
                last_return - first_reading >= bound,
                "{algorithm}: {group} admitted between {first_reading} ms and {last_return} ms"
            );
        }
        assert!(
            admitted.len() >= 2 * MAX as usize,
            "{algorithm}: the run was too short"
        );
    }
}

/// Readings at the far ends of time decide without a panic: a custom clock or a test may
/// pass anything.
#[test]
fn extreme_readings_never_panic() {
    for algorithm in Algorithm::ALL {
        let store = MemoryStore::new();
        let limit = Limit::new("extreme", policy(algorithm, 2, 1_000));
        for reading in [
            Duration::ZERO,
            Duration::MAX,
            Duration::from_secs(u64::MAX / 2),
        ] {
            for _ in 0..3 {
                store
                    .check(&limit, b"k", reading)
                    .now_or_never()
                    .unwrap()
                    .unwrap();
            }
            store.sweep(reading);
        }
    }
}
