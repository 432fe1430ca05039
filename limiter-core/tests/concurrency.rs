//! Many threads on one key: the store admits exactly N, for every algorithm.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::Duration;

use limiter_core::{Algorithm, Charge, Limit, Limiter, ManualClock, Policy};

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

/// Costly requests from many threads: exactly as many as fit whole, never a unit more.
#[test]
fn threads_with_costs_admit_exactly_what_fits() {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 500;
    const MAX: u32 = 1_000;
    for algorithm in Algorithm::ALL {
        let clock = ManualClock::starting_at(Duration::from_secs(3));
        let limiter = Limiter::builder().clock(clock).build();
        let limit = Limit::new(
            "costly",
            Policy::for_algorithm(algorithm, MAX, Duration::from_secs(60)).unwrap(),
        );
        let units = AtomicUsize::new(0);
        let start = Barrier::new(THREADS);
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    start.wait();
                    for _ in 0..PER_THREAD {
                        let charge = [Charge::new(&limit, b"one key").cost(3)];
                        let d = limiter.check_all(&charge).now_or_never().unwrap().unwrap();
                        if d[0].allowed() {
                            units.fetch_add(3, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(units.into_inner(), 999, "{algorithm}");
    }
}

/// Checks and refunds interleaved on many threads (`count = "failures"`, half of them
/// successes): no update is lost, so what is left is exactly the maximum less what was
/// admitted and not taken back.
#[test]
fn threads_checking_and_refunding_lose_no_update() {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 1_000;
    // Above the 4,000 kept, so that every lost update would show.
    const MAX: u32 = 5_000;
    for algorithm in Algorithm::ALL {
        let clock = ManualClock::starting_at(Duration::from_secs(3));
        let limiter = Limiter::builder().clock(clock).build();
        let limit = Limit::new(
            "refunded",
            Policy::for_algorithm(algorithm, MAX, Duration::from_secs(60)).unwrap(),
        );
        let kept = AtomicUsize::new(0);
        let start = Barrier::new(THREADS);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (limiter, limit, kept, start) = (&limiter, &limit, &kept, &start);
                s.spawn(move || {
                    start.wait();
                    for i in 0..PER_THREAD {
                        let charge = [Charge::new(limit, b"one key")];
                        let d = limiter.check_all(&charge).now_or_never().unwrap().unwrap();
                        if !d[0].allowed() {
                            continue;
                        }
                        if (t + i) % 2 == 0 {
                            limiter
                                .refund(&charge, d.receipt())
                                .now_or_never()
                                .unwrap()
                                .unwrap();
                        } else {
                            kept.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        let kept = kept.into_inner();
        assert_eq!(kept, THREADS * PER_THREAD / 2, "{algorithm}");
        let status = limiter
            .check_all(&[Charge::new(&limit, b"one key")])
            .now_or_never()
            .unwrap()
            .unwrap()[0];
        // The final check took one more unit when there was room for it.
        let left = (MAX as usize).saturating_sub(kept);
        let expected = if left == 0 { 0 } else { left - 1 };
        assert_eq!(
            status.remaining() as usize,
            expected,
            "{algorithm}: kept {kept}"
        );
    }
}
