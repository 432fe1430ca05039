//! Many threads on one key: the store admits exactly N, for every algorithm.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::Duration;

use limiter_core::{Algorithm, Limit, Limiter, ManualClock, Policy};

#[test]
fn threads_hammering_one_key_admit_exactly_n() {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 2_000;
    const MAX: u32 = 1_000;
    for algorithm in Algorithm::ALL {
        // Time stands still, so nothing refills: exactly MAX of 16,000 may pass.
        let clock = ManualClock::starting_at(Duration::from_secs(3));
        let limiter = Limiter::builder().clock(clock).build();
        let limit = Limit::new(
            "hot",
            Policy::for_algorithm(algorithm, MAX, Duration::from_secs(60)).unwrap(),
        );
        let admitted = AtomicUsize::new(0);
        let start = Barrier::new(THREADS);
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    start.wait();
                    for _ in 0..PER_THREAD {
                        let d = limiter
                            .check(&limit, b"one key")
                            .now_or_never()
                            .unwrap()
                            .unwrap();
                        if d.allowed() {
                            admitted.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(admitted.into_inner(), MAX as usize, "{algorithm}");
    }
}
