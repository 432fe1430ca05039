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
