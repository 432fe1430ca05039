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
        // The counter's estimate weighs the previous window; a bucket is kept a window
        // after it is full again (at most a window after its last request).
        Algorithm::SlidingWindowCounter | Algorithm::TokenBucket => 2 * MINUTE,
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
        // One window later (two for the counter and the bucket), ordinary traffic from one client keeps
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

/// Blocks `clients` clients on `login` (each spends its budget), floods the store with
/// `flood` keys the attacker chooses, spread over two other limits, then sends `newcomers`
/// honest newcomers to `login`. Returns how many of the blocked clients got a fresh budget.
fn blocked_clients_reset_by_a_flood(
    store: &MemoryStore,
    clients: u32,
    flood: u32,
    newcomers: u32,
) -> u32 {
    let clock = ManualClock::starting_at(Duration::from_secs(1_000));
    let limiter = Limiter::builder()
        .store(store.clone())
        .clock(clock.clone())
        .build();
    let login = Limit::new("login", Policy::new(5, Duration::from_secs(900)).unwrap());
    let search = Limit::new("search", Policy::new(30, MINUTE).unwrap());
    let export = Limit::new(
        "export",
        Policy::for_algorithm(Algorithm::FixedWindow, 10, MINUTE).unwrap(),
    );
    let blocked = |client: u32| format!("198.51.{}.{}", client / 256, client % 256);
    for client in 0..clients {
        for _ in 0..5 {
            assert!(check(&limiter, &login, blocked(client).as_bytes()));
        }
        assert!(!check(&limiter, &login, blocked(client).as_bytes()));
    }
    // The flood: a chosen key per request (random API keys, cookies) on two routes, within
    // seconds.
    for i in 0..flood {
        if i % 1_000 == 0 {
            clock.advance(Duration::from_millis(1));
        }
        let key = u64::from(i)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .to_le_bytes();
        if i % 2 == 0 {
            // A few searches per key: its log takes a ring.
            for _ in 0..3 {
                check(&limiter, &search, &key);
            }
        } else {
            check(&limiter, &export, &key);
        }
    }
    // Honest newcomers on the login page.
    for newcomer in 0..newcomers {
        let key = format!("203.0.{}.{}", newcomer / 256, newcomer % 256);
        assert!(check(&limiter, &login, key.as_bytes()));
    }
    (0..clients)
        .filter(|&client| check(&limiter, &login, blocked(client).as_bytes()))
        .count() as u32
}

/// A flood of keys the attacker chooses on other routes fills the store; honest newcomers on
/// the login route then make room. They must not make it from login's blocked clients, who
/// would get fresh budgets: a brute-forcer would flood the search route to reset their own
/// login block. Room comes from the limits that hold the most: the flooded ones. (Before,
/// 98 of 100 blocked clients were reset.) The byte bound still holds.
#[test]
fn a_flood_on_other_limits_never_resets_blocked_clients() {
    let store = MemoryStore::with_max_bytes(8 << 20);
    let reset = blocked_clients_reset_by_a_flood(&store, 100, 1_500_000, 20_000);
    println!(
        "8 MiB store, 1.5M chosen keys on two limits, 20,000 newcomers: {reset} of 100 blocked \
         clients reset; {} keys in {} bytes, {} evicted",
        store.len(),
        store.bytes(),
        store.evictions()
    );
    assert_eq!(reset, 0);
    assert!(store.bytes() <= 8 << 20, "{}", store.bytes());
    // Control: without the flood, nobody is reset either.
    let quiet = MemoryStore::with_max_bytes(8 << 20);
    assert_eq!(blocked_clients_reset_by_a_flood(&quiet, 100, 0, 20_000), 0);
}

/// The same at the default bounds (64 MiB, a million keys), where the key bound is the one
/// that binds: 200 blocked clients, 1.5M chosen keys. (Before, 199 of 200 were reset.)
#[test]
fn at_the_default_bounds_a_flood_never_resets_blocked_clients() {
    let store = MemoryStore::new();
    let reset = blocked_clients_reset_by_a_flood(&store, 200, 1_500_000, 20_000);
    println!(
        "default store, 1.5M chosen keys: {reset} of 200 blocked clients reset; {} keys, {} \
         bytes, {} evicted",
        store.len(),
        store.bytes(),
        store.evictions()
    );
    assert_eq!(reset, 0);
    assert!(store.len() <= MemoryStore::DEFAULT_MAX_KEYS);
    assert!(store.bytes() <= MemoryStore::DEFAULT_MAX_BYTES);
}

/// A flood on the login limit itself still makes room from login's own states (the
/// flooded limit is the largest): the bound holds, and newcomers keep exact budgets.
#[test]
fn a_flood_on_one_limit_makes_room_from_its_own_states() {
    let clock = ManualClock::starting_at(Duration::from_secs(1_000));
    let store = MemoryStore::with_max_bytes(1 << 20);
    let limiter = Limiter::builder()
        .store(store.clone())
        .clock(clock.clone())
        .build();
    let quiet = Limit::new("quiet", Policy::new(5, MINUTE).unwrap());
    let flooded = Limit::new("flooded", Policy::new(5, MINUTE).unwrap());
    for client in 0..50u32 {
        for _ in 0..5 {
            check(&limiter, &quiet, &client.to_be_bytes());
        }
    }
    for i in 0..300_000u32 {
        check(&limiter, &flooded, &i.to_le_bytes());
    }
    let still_blocked = (0..50u32)
        .filter(|client| !check(&limiter, &quiet, &client.to_be_bytes()))
        .count();
    assert_eq!(still_blocked, 50);
    assert!(store.bytes() <= 1 << 20, "{}", store.bytes());
}

/// A limit within its share is not halved for another's flood, even when its table holds
/// more room than the flooded one: 20,000 clients blocked on login (a table of 32,768 slots)
/// and a flood of chosen keys on another limit whose table (16,384 slots, as many keys as
/// login's would keep once halved) must grow. The flood makes room from its own states;
/// every login client stays blocked. (Judged by the room tables hold rather than the keys
/// they hold, login was halved and 13,856 clients reset.)
#[test]
fn a_limit_within_its_share_is_not_halved_for_a_flood() {
    let clock = ManualClock::starting_at(Duration::from_secs(1_000));
    let store = MemoryStore::with_max_bytes(1 << 20);
    let limiter = Limiter::builder()
        .store(store.clone())
        .clock(clock.clone())
        .build();
    let login = Limit::new("login", Policy::new(1, Duration::from_secs(900)).unwrap());
    let flooded = Limit::new("search", Policy::new(30, MINUTE).unwrap());
    for client in 0..20_000u32 {
        assert!(check(&limiter, &login, &client.to_be_bytes()));
    }
    for i in 0..200_000u32 {
        if i % 1_000 == 0 {
            clock.advance(Duration::from_millis(1));
        }
        check(&limiter, &flooded, &i.to_le_bytes());
    }
    let reset = (0..20_000u32)
        .filter(|client| check(&limiter, &login, &client.to_be_bytes()))
        .count();
    println!(
        "20,000 blocked login clients, 200,000 chosen keys on another limit: {reset} reset; {} \
         bytes",
        store.bytes()
    );
    assert_eq!(reset, 0);
    assert!(store.bytes() <= 1 << 20);
}
