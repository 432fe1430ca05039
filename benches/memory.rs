//! Bytes per key after 1,000,000 distinct IPv4 keys, ours and governor's keyed limiter, from
//! a counting allocator (bytes requested, as the store asks for them).
//!
//! `cargo bench --manifest-path benches/Cargo.toml --bench memory`

use std::net::{IpAddr, Ipv4Addr};
use std::num::NonZeroU32;
use std::time::Duration;

use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use limiter::{Algorithm, Limit, Limiter, ManualClock, Policy};

#[path = "../limiter-core/tests/common/counting_allocator.rs"]
mod counting_allocator;

use counting_allocator::{live_bytes, Counting};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const KEYS: u32 = 1_000_000;

fn ip(i: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(0x0A00_0000 + i))
}

/// Live bytes added by `fill`, divided by the number of keys.
fn bytes_per_key<T>(fill: impl FnOnce() -> T) -> f64 {
    let before = live_bytes();
    let kept = fill();
    let after = live_bytes();
    drop(kept);
    (after - before) as f64 / f64::from(KEYS)
}

fn ours(algorithm: Algorithm, requests_per_key: u32) -> f64 {
    bytes_per_key(|| {
        // Time stands still: every key keeps its state while we measure.
        let limiter = Limiter::builder().clock(ManualClock::new()).build();
        let policy = Policy::for_algorithm(algorithm, 5, Duration::from_secs(60)).expect("policy");
        let limit = Limit::new("memory", policy);
        for i in 0..KEYS {
            let key = match ip(i) {
                IpAddr::V4(v4) => v4.octets(),
                IpAddr::V6(_) => unreachable!(),
            };
            for _ in 0..requests_per_key {
                let _ = limiter.check(&limit, &key).now_or_never();
            }
        }
        (limiter, limit)
    })
}

fn governor() -> f64 {
    bytes_per_key(|| {
        let limiter: DefaultKeyedRateLimiter<IpAddr> =
            RateLimiter::keyed(Quota::per_minute(NonZeroU32::new(5).expect("5")));
        for i in 0..KEYS {
            let _ = limiter.check_key(&ip(i));
        }
        limiter
    })
}

fn main() {
    // `cargo bench` passes flags such as `--bench`; nothing here takes any.
    let governor = governor();
    println!("bytes per key after {KEYS} distinct IPv4 keys (max = 5 per minute)");
    println!("{:<42} {:>8.1}", "governor keyed (IpAddr)", governor);
    for algorithm in Algorithm::ALL {
        let b = ours(algorithm, 1);
        println!(
            "{:<42} {:>8.1}   ratio {:.2}",
            format!("{algorithm}, 1 request per key"),
            b,
            b / governor
        );
    }
    let full = ours(Algorithm::SlidingWindow, 5);
    println!(
        "{:<42} {:>8.1}   ratio {:.2}",
        "sliding_window, 5 requests per key",
        full,
        full / governor
    );
}
