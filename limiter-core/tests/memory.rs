//! The memory a flood of one-off keys leaves behind, read from a counting allocator (this
//! file holds a single test so that nothing else allocates meanwhile).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use std::time::Duration;

use limiter_core::{Algorithm, Limit, Limiter, ManualClock, MemoryStore, Policy};

#[path = "common/counting_allocator.rs"]
mod counting_allocator;

use counting_allocator::{live_bytes, Counting};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

#[test]
fn a_flood_of_one_off_keys_leaves_next_to_nothing_behind() {
    let window = Duration::from_secs(60);
    for algorithm in Algorithm::ALL {
        let clock = ManualClock::starting_at(Duration::from_secs(1_000));
        let store = MemoryStore::new();
        let limiter = Limiter::builder()
            .store(store.clone())
            .clock(clock.clone())
            .build();
        let limit = Limit::new(
            "flood",
            Policy::for_algorithm(algorithm, 5, window).unwrap(),
        );
        let check = |key: &[u8]| {
            limiter.check(&limit, key).now_or_never().unwrap().unwrap();
        };
        check(b"warm-up");
        let baseline = live_bytes();
        for i in 0..100_000u32 {
            // Each address twice, so the sliding log's slab is in use too.
            check(&i.to_be_bytes());
            check(&i.to_be_bytes());
        }
        let flooded = live_bytes() - baseline;
        clock.advance(2 * window);
        for _ in 0..200 {
            clock.advance(Duration::from_millis(10));
            check(b"warm-up");
        }
        let left = live_bytes() - baseline;
        println!("{algorithm}: {flooded} bytes for 100,000 keys, {left} bytes after");
        assert!(flooded > 1_000_000, "{algorithm}: {flooded}");
        assert!(left < 100_000, "{algorithm}: {left} bytes left");
    }
}
