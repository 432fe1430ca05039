//! Penalty records in memory: a flood of blocked clients stays within the records' own
//! budget and never evicts another limit's counts.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use std::time::Duration;

use limiter::{Limit, MemoryStore, Penalty, Policy};

#[test]
fn a_flood_of_blocked_clients_never_resets_another_limits_clients() {
    let minute = Duration::from_secs(60);
    let store = MemoryStore::with_bounds(1_000_000, 1 << 20);
    let login = Limit::new(
        "login",
        Policy::new(1, minute)
            .unwrap()
            .with_penalty(Penalty::block(15 * minute).unwrap()),
    );
    let api = Limit::new("api", Policy::new(1, minute).unwrap());
    let now = Duration::from_secs(1_000);
    // 200 clients of the API at their limit.
    for client in 0..200u32 {
        assert!(store.check_at(&api, &client.to_be_bytes(), now).allowed());
    }
    // 50,000 attackers each blocked on login.
    for attacker in 0..50_000u32 {
        let key = [b"attacker-".as_slice(), &attacker.to_be_bytes()].concat();
        store.check_at(&login, &key, now);
        assert!(store.check_at(&login, &key, now).blocked());
    }
    let still_blocked = (0..200u32)
        .filter(|c| !store.check_at(&api, &c.to_be_bytes(), now).allowed())
        .count();
    println!(
        "after 50,000 blocks: {still_blocked} of 200 API clients still at their limit; \
         tables {} B, penalty records {} B (budget {} B)",
        store.bytes(),
        store.side_bytes(),
        store.max_bytes() / 4
    );
    assert_eq!(still_blocked, 200, "no API client was given a fresh budget");
    assert!(
        store.side_bytes() <= store.max_bytes() / 4,
        "records within their budget"
    );
    assert!(store.bytes() <= store.max_bytes());
}

/// A client blocked 15 minutes on `login` stays blocked however many clients another limit
/// blocks meanwhile: room for `api`'s records comes from `api`, the limit holding the most.
fn a_block_holds_beside_a_flood_of_another_limits_blocks(store: &MemoryStore, flood: u32) {
    let minute = Duration::from_secs(60);
    let blocking = |scope: &'static str| {
        Limit::new(
            scope,
            Policy::new(1, minute)
                .unwrap()
                .with_penalty(Penalty::block(15 * minute).unwrap()),
        )
    };
    let (login, api) = (blocking("login"), blocking("api"));
    let start = Duration::from_secs(1_000);
    let victims: Vec<[u8; 8]> = (0..8u64).map(|v| (v + 1).to_be_bytes()).collect();
    for victim in &victims {
        assert!(store.check_at(&login, victim, start).allowed());
        assert!(store.check_at(&login, victim, start).blocked());
    }
    // Two minutes on: login's window is over, its block is not.
    let later = start + 2 * minute;
    for i in 0..flood {
        let key = u64::from(i)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .to_le_bytes();
        store.check_at(&api, &key, later);
        assert!(store.check_at(&api, &key, later).blocked());
    }
    let held: Vec<Option<Duration>> = victims
        .iter()
        .map(|victim| store.check_at(&login, victim, later).retry_after())
        .collect();
    println!(
        "after {flood} blocks on api: login's 8 blocked clients wait {held:?}; records {} B \
         (budget {} B), {} evicted",
        store.side_bytes(),
        store.max_bytes() / 4,
        store.evictions()
    );
    assert!(
        held.iter().all(|wait| *wait == Some(13 * minute)),
        "api's flood of blocks lifted login's: {held:?}"
    );
    assert!(store.side_bytes() <= store.max_bytes() / 4);
}

#[test]
fn a_flood_of_blocks_never_lifts_another_limits_block_in_one_shard() {
    a_block_holds_beside_a_flood_of_another_limits_blocks(
        &MemoryStore::with_bounds(200, 1 << 20),
        5_000,
    );
    a_block_holds_beside_a_flood_of_another_limits_blocks(
        &MemoryStore::with_max_bytes(1 << 20),
        20_000,
    );
}

#[test]
fn a_flood_of_blocks_never_lifts_another_limits_block_at_8_mib_and_the_default_size() {
    a_block_holds_beside_a_flood_of_another_limits_blocks(
        &MemoryStore::with_max_bytes(8 << 20),
        100_000,
    );
    a_block_holds_beside_a_flood_of_another_limits_blocks(&MemoryStore::new(), 200_000);
}
