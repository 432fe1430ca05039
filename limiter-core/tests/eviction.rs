//! Memory stays bounded: expired state is reclaimed as traffic flows, and a full store makes
//! room for newcomers by forgetting the state closest to expiring — never by counting
//! newcomers together.

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
fn a_full_store_still_gives_every_newcomer_its_own_exact_budget() {
    const N: u32 = 3;
    for algorithm in Algorithm::ALL {
        let clock = ManualClock::starting_at(Duration::from_secs(1_000));
        let store = MemoryStore::with_max_keys(1_000);
        let limiter = Limiter::builder()
            .store(store.clone())
            .clock(clock.clone())
            .build();
        let limit = Limit::new("full", Policy::for_algorithm(algorithm, N, MINUTE).unwrap());
        // A flood of 5,000 one-off clients (rotating keys) over one second.
        for client in 0..5_000u32 {
            if client % 5 == 0 {
                clock.advance(Duration::from_millis(1));
            }
            assert!(check(&limiter, &limit, &client.to_be_bytes()));
        }
        assert!(store.len() <= 1_000, "{algorithm}: {}", store.len());
        assert!(
            store.evictions() >= 4_000,
            "{algorithm}: {}",
            store.evictions()
        );
        // Twenty honest newcomers: each gets exactly N, as if the store were empty. (Before,
        // they shared one overflow budget: 3 in all.) Their requests are interleaved, so a
        // newcomer evicted by the next would show as a fresh budget — except for the
        // counter, whose state tells the flood's keys from a newcomer's only by window (the
        // same one here): its newcomers come one after the other.
        clock.advance(Duration::from_secs(1));
        let mut admitted = [0u32; 20];
        let mut attempt = |newcomer: usize| {
            let key = format!("newcomer {newcomer}");
            if check(&limiter, &limit, key.as_bytes()) {
                admitted[newcomer] += 1;
            }
        };
        if algorithm == Algorithm::SlidingWindowCounter {
            for newcomer in 0..20 {
                (0..N + 3).for_each(|_| attempt(newcomer));
            }
        } else {
            for _round in 0..N + 3 {
                (0..20).for_each(&mut attempt);
            }
        }
        assert_eq!(admitted, [N; 20], "{algorithm}");
    }
}

#[test]
fn eviction_takes_the_state_closest_to_expiring() {
    const N: u32 = 2;
    for algorithm in Algorithm::ALL {
        let clock = ManualClock::starting_at(Duration::from_secs(1_000));
        let store = MemoryStore::with_max_keys(1_000);
        let limiter = Limiter::builder()
            .store(store.clone())
            .clock(clock.clone())
            .build();
        let limit = Limit::new("old", Policy::for_algorithm(algorithm, N, MINUTE).unwrap());
        let spend = |client: u32| {
            for _ in 0..N {
                assert!(check(&limiter, &limit, &client.to_be_bytes()));
            }
        };
        // 1,200 clients spent their budget long ago (more than the store holds, so every
        // shard is full), then 100 recently.
        for client in 0..1_200 {
            spend(client);
        }
        clock.advance(Duration::from_secs(40));
        for client in 5_000..5_100 {
            spend(client);
        }
        // Fifty newcomers push out fifty states: old ones, which expire first, so every
        // recent client is still held at its spent budget.
        let before = store.evictions();
        for newcomer in 10_000..10_050u32 {
            assert!(check(&limiter, &limit, &newcomer.to_be_bytes()));
        }
        assert_eq!(
            store.evictions() - before,
            50,
            "{algorithm}: the store was full"
        );
        for client in 5_000..5_100u32 {
            assert!(
                !check(&limiter, &limit, &client.to_be_bytes()),
                "{algorithm}: recent client {client} was evicted"
            );
        }
    }
}
