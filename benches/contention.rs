//! More threads than cores on the in-memory store: 8 threads on this machine's 2 cores, on
//! one hot key and on 100,000 keys, for every algorithm. Prints checks per second and the
//! slowest checks (99.9th percentile and worst), which is where a lock that lets a
//! preempted holder starve shows.
//!
//! ```sh
//! cargo bench --manifest-path benches/Cargo.toml --bench contention            # one run
//! benches/contention.sh BASELINE_DIR         # this tree against another, alternating
//! ```

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use limiter::{Algorithm, Limit, Limiter, Policy};

const THREADS: usize = 8;
const CHECKS_PER_THREAD: usize = 250_000;
const KEYS: u32 = 100_000;

struct Run {
    per_second: f64,
    p999: Duration,
    worst: Duration,
}

fn run(algorithm: Algorithm, keys: u32) -> Run {
    let limiter = Limiter::builder().build();
    // Limits that the run mostly does not reach, so the allowed path dominates; the log
    // gets 5 per second per key (its allowed path is a push, then rejections).
    let max = match algorithm {
        Algorithm::SlidingWindow => 5,
        other => Policy::max_limit(other),
    };
    let policy = Policy::for_algorithm(algorithm, max, Duration::from_secs(1)).unwrap();
    let limit = Limit::new("contention", policy);
    let barrier = Barrier::new(THREADS);
    let started = Instant::now();
    let mut latencies: Vec<Duration> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (limiter, limit, barrier) = (&limiter, &limit, &barrier);
                s.spawn(move || {
                    let mut own = Vec::with_capacity(CHECKS_PER_THREAD);
                    let mut key = (t as u32).wrapping_mul(7919) % keys;
                    barrier.wait();
                    for _ in 0..CHECKS_PER_THREAD {
                        let bytes = key.to_be_bytes();
                        let before = Instant::now();
                        let decision = limiter.check(limit, &bytes).now_or_never();
                        own.push(before.elapsed());
                        black_box(decision);
                        key += 1;
                        if key == keys {
                            key = 0;
                        }
                    }
                    own
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let elapsed = started.elapsed();
    latencies.sort_unstable();
    let total = latencies.len();
    Run {
        per_second: total as f64 / elapsed.as_secs_f64(),
        p999: latencies[total * 999 / 1000],
        worst: latencies[total - 1],
    }
}

fn main() {
    // `cargo bench` passes `--bench`; anything else is a filter on the workload name.
    let filter: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with("--"));
    println!(
        "{:<34}{:>14}{:>12}{:>12}",
        "workload (8 threads)", "checks/s", "p99.9", "worst"
    );
    for (label, keys) in [("one key", 1), ("100k keys", KEYS)] {
        for algorithm in Algorithm::ALL {
            let name = format!("{label}, {}", algorithm.name());
            if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
                continue;
            }
            let r = run(algorithm, keys);
            println!(
                "{name:<34}{:>14.0}{:>12?}{:>12?}",
                r.per_second, r.p999, r.worst
            );
        }
    }
}
