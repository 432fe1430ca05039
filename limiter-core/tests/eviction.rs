//! Memory stays bounded: expired state is reclaimed as traffic flows, and a full store never
//! hands anyone a fresh budget.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use std::time::Duration;

use limiter_core::{Algorithm, Limit, Limiter, ManualClock, MemoryStore, Policy};

const MINUTE: Duration = Duration::from_secs(60);

/// How long a key's state keeps counting after its last request: one window, and two for
/// the counter, whose estimate weighs the previous window.
fn lifetime(algorithm: Algorithm) -> Duration {
    match algorithm {
        Algorithm::SlidingWindowCounter => 2 * MINUTE,
        _ => MINUTE,
    }
}

fn check(limiter: &Limiter, limit: &Limit, key: &[u8]) -> bool {
    limiter
        .check(limit, key)
        .now_or_never()
        .unwrap()
        .unwrap()
        .allowed()
}

#[test]
fn one_off_keys_are_reclaimed_after_a_window_without_any_call() {
    for algorithm in Algorithm::ALL {
        let clock = ManualClock::starting_at(Duration::from_secs(1_000));
        let store = MemoryStore::new();
        let limiter = Limiter::builder()
            .store(store.clone())
            .clock(clock.clone())
            .build();
        let limit = Limit::new(
            "flood",
            Policy::for_algorithm(algorithm, 5, MINUTE).unwrap(),
        );
        // 100,000 rotating addresses, one request each, over one second.
        for i in 0..100_000u32 {
            if i % 100 == 0 {
                clock.advance(Duration::from_millis(1));
            }
            assert!(check(&limiter, &limit, &i.to_be_bytes()));
        }
        assert_eq!(store.len(), 100_000, "{algorithm}");
        // One window later (two for the counter), ordinary traffic from one client keeps
        // flowing; housekeeping rides on it, one shard per tick.
        clock.advance(lifetime(algorithm));
        for _ in 0..200 {
            clock.advance(Duration::from_millis(10));
            check(&limiter, &limit, b"regular client");
        }
        assert!(store.len() <= 1, "{algorithm}: {} keys left", store.len());
    }
}

#[test]
fn a_full_store_keeps_every_held_client_exact_and_counts_newcomers_as_one() {
    for algorithm in Algorithm::ALL {
        let clock = ManualClock::starting_at(Duration::from_secs(1_000));
        let store = MemoryStore::with_max_keys(100);
        let limiter = Limiter::builder()
            .store(store.clone())
            .clock(clock.clone())
            .build();
        let limit = Limit::new("full", Policy::for_algorithm(algorithm, 3, MINUTE).unwrap());
        // 100 clients use up their budgets and fill the store.
        for client in 0..100u32 {
            for _ in 0..3 {
                assert!(check(&limiter, &limit, &client.to_be_bytes()));
            }
        }
        assert_eq!(store.len(), 100);
        // Newcomers cannot evict them: every held client stays rejected.
        for newcomer in 1_000..2_000u32 {
            check(&limiter, &limit, &newcomer.to_be_bytes());
        }
        assert_eq!(store.len(), 100, "{algorithm}: the bound holds");
        for client in 0..100u32 {
            assert!(
                !check(&limiter, &limit, &client.to_be_bytes()),
                "{algorithm}"
            );
        }
        // Newcomers share one budget of 3 while the store is full: it is spent already.
        assert!(!check(&limiter, &limit, b"another newcomer"), "{algorithm}");
        // Once the held state expires, sweeping makes room and newcomers count alone again.
        clock.advance(lifetime(algorithm));
        assert!(check(&limiter, &limit, b"late newcomer"), "{algorithm}");
        assert!(check(&limiter, &limit, b"late newcomer"), "{algorithm}");
        assert!(store.len() <= 2, "{algorithm}: {}", store.len());
    }
}
