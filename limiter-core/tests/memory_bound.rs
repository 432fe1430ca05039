//! The store's bound in bytes holds whatever clients do: sliding-window logs count, and a
//! full store still gives newcomers their exact budget. Read from a counting allocator (this
//! file holds a single test so that nothing else allocates meanwhile).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use std::time::Duration;

use limiter_core::{Limit, Limiter, ManualClock, MemoryStore, Policy};

#[path = "common/counting_allocator.rs"]
mod counting_allocator;

use counting_allocator::{live_bytes, Counting};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn long_logs_stay_within_the_byte_bound_and_newcomers_still_count_exactly() {
    const N: u32 = 200; // an 800-byte ring per client with two requests or more
    const MAX_BYTES: usize = 1 << 20;
    let clock = ManualClock::starting_at(Duration::from_secs(1_000));
    let store = MemoryStore::with_max_bytes(MAX_BYTES);
    let limiter = Limiter::builder()
        .store(store.clone())
        .clock(clock.clone())
        .build();
    let limit = Limit::new("logs", Policy::new(N, Duration::from_secs(60)).unwrap());
    let check = |key: &[u8]| {
        limiter
            .check(&limit, key)
            .now_or_never()
            .unwrap()
            .unwrap()
            .allowed()
    };
    check(b"warm-up");
    let baseline = live_bytes();
    // 5,000 clients with two requests each would hold 4 MB of logs unbounded.
    for client in 0..5_000u32 {
        if client % 10 == 0 {
            clock.advance(Duration::from_millis(1));
        }
        assert!(check(&client.to_be_bytes()));
        assert!(check(&client.to_be_bytes()));
    }
    let held = live_bytes() - baseline;
    println!(
        "{held} bytes live for 5,000 clients, {} accounted, bound {MAX_BYTES}, {} evictions",
        store.bytes(),
        store.evictions()
    );
    assert!(store.bytes() <= MAX_BYTES, "{}", store.bytes());
    assert!(held as usize <= MAX_BYTES + 16 * 1024, "{held} bytes live");
    assert!(store.evictions() > 3_000, "{}", store.evictions());
    // Twenty newcomers, interleaved: each gets exactly N, logs and all.
    clock.advance(Duration::from_secs(1));
    let mut admitted = [0u32; 20];
    for _round in 0..N + 3 {
        for (newcomer, count) in admitted.iter_mut().enumerate() {
            if check(format!("newcomer {newcomer}").as_bytes()) {
                *count += 1;
            }
        }
    }
    assert_eq!(admitted, [N; 20]);
    assert!(store.bytes() <= MAX_BYTES, "{}", store.bytes());
}
