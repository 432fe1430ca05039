//! Schedules whose clock readings lag their arrival at the store by a few milliseconds,
//! and the bound each algorithm keeps on them (see `out_of_order.rs`). Shared with the Redis
//! tests, which replay them through the scripts.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;

use limiter_core::{Algorithm, Decision, Policy};
use proptest::prelude::*;

/// A check: which key, how far the arrival instant moves on, and how far behind it the
/// reading lags.
pub(crate) type Schedule = Vec<(u8, u64, u64)>;

pub(crate) fn schedule(window: u64) -> impl Strategy<Value = Schedule> {
    let step = prop_oneof![
        3 => Just(0u64),
        3 => 0..5u64,
        1 => Just(window - 1),
        1 => Just(window),
        2 => 0..2 * window,
    ];
    prop::collection::vec((0..2u8, step, 0..=LAG), 1..200)
}

/// The most a reading lags its arrival in these schedules: a few clock ticks.
pub(crate) const LAG: u64 = 6;

/// Arrival instant, key, reading and decision of every check of `schedule`; `check`
/// decides a key's request at a reading (in ms).
pub(crate) fn run(
    mut check: impl FnMut(u8, u64) -> Decision,
    start: u64,
    schedule: &Schedule,
) -> Vec<Run> {
    let mut arrival = start;
    schedule
        .iter()
        .map(|&(key, step, lag)| {
            arrival += step;
            let reading = arrival - lag;
            let decision = check(key, reading);
            Run {
                arrival,
                key,
                reading,
                decision,
            }
        })
        .collect()
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Run {
    pub(crate) arrival: u64,
    pub(crate) key: u8,
    pub(crate) reading: u64,
    pub(crate) decision: Decision,
}

fn admitted_by_key(runs: &[Run]) -> HashMap<u8, Vec<Run>> {
    let mut by_key: HashMap<u8, Vec<Run>> = HashMap::new();
    for run in runs.iter().filter(|r| r.decision.allowed()) {
        by_key.entry(run.key).or_default().push(*run);
    }
    by_key
}

/// The most admitted checks of one key arriving within any interval of length `length`.
fn densest(runs: &[Run], length: u64) -> usize {
    admitted_by_key(runs)
        .values()
        .flat_map(|admitted| {
            admitted.iter().map(move |a| {
                admitted
                    .iter()
                    .filter(|b| b.arrival >= a.arrival && b.arrival - a.arrival < length)
                    .count()
            })
        })
        .max()
        .unwrap_or(0)
}

pub(crate) fn any_policy(algorithm: Algorithm) -> impl Strategy<Value = Policy> {
    // Windows longer than the lag, so that a reading is never a whole window late.
    (1..=6u32, LAG + 2..=200u64, 1..=8u32).prop_map(move |(max, window, burst)| {
        let policy =
            Policy::for_algorithm(algorithm, max, std::time::Duration::from_millis(window))
                .unwrap();
        if algorithm == Algorithm::TokenBucket {
            policy.with_burst(burst).unwrap()
        } else {
            policy
        }
    })
}

pub(crate) fn start() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(10_000u64),
        (0..2_000u64).prop_map(|d| u64::from(u32::MAX) - d)
    ]
}

/// The bound of each algorithm under lagging readings (see the module documentation).
pub(crate) fn within_bound(policy: &Policy, runs: &[Run]) -> Result<(), TestCaseError> {
    let n = policy.max().get() as usize;
    let t = policy.window_ms();
    match policy.algorithm() {
        Algorithm::SlidingWindow => {
            let most = densest(runs, t - LAG);
            prop_assert!(most <= n, "{most} admitted within T − d");
        }
        Algorithm::SlidingWindowCounter => {
            let most = densest(runs, t - LAG);
            prop_assert!(most <= 2 * n, "{most} admitted within T − d");
        }
        Algorithm::FixedWindow => {
            // A window is opened by the admission that leaves N − 1; the next opening
            // arrives at least T after the opener's reading.
            for admitted in admitted_by_key(runs).values() {
                let openers: Vec<&Run> = admitted
                    .iter()
                    .filter(|r| r.decision.remaining() as usize == n - 1)
                    .collect();
                for pair in openers.windows(2) {
                    let (a, b) = (pair[0], pair[1]);
                    prop_assert!(
                        b.arrival - a.reading >= t,
                        "a window reopened {} ms after the last opened",
                        b.arrival - a.reading
                    );
                }
            }
        }
        Algorithm::TokenBucket => {
            let interval = policy.emission_interval_ns();
            let burst = policy.burst().get() as u64;
            for admitted in admitted_by_key(runs).values() {
                let arrivals: Vec<u64> = admitted.iter().map(|r| r.arrival).collect();
                for (i, a) in arrivals.iter().enumerate() {
                    for (j, b) in arrivals.iter().enumerate().skip(i) {
                        let count = (j - i + 1) as u64;
                        let allowed = burst + (b - a + LAG) * 1_000_000 / interval;
                        prop_assert!(count <= allowed, "{count} arriving in [{a}, {b}]");
                    }
                }
            }
        }
    }
    Ok(())
}
