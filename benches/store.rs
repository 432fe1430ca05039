//! Checks per second through the in-memory store, side by side with governor's keyed
//! limiter on the same workloads. `benches/ratios.py` prints ours/governor from the results.
//!
//! Workloads: one hot key on 1 and 2 threads; 100,000 distinct IPv4 keys on 1 and 2 threads;
//! the rejecting path (a key already over its limit). Every check includes the clock read,
//! as in a server.

#![allow(missing_docs)] // criterion generates undocumented functions

use std::hint::black_box;
use std::net::{IpAddr, Ipv4Addr};
use std::num::NonZeroU32;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use limiter::{Algorithm, Limit, Limiter, Policy};

const DISTINCT: u32 = 100_000;

fn keys() -> Vec<IpAddr> {
    (0..DISTINCT)
        .map(|i| IpAddr::V4(Ipv4Addr::from(0x0A00_0000 + i * 7)))
        .collect()
}

/// Stands for what the key extractor hands the store: the address's bytes.
#[inline]
fn key_bytes(ip: &IpAddr, buf: &mut [u8; 16]) -> usize {
    match ip {
        IpAddr::V4(v4) => {
            buf[..4].copy_from_slice(&v4.octets());
            4
        }
        IpAddr::V6(v6) => {
            buf.copy_from_slice(&v6.octets());
            16
        }
    }
}

/// Something that decides a request of one IP key.
trait Checker: Sync {
    fn check(&self, ip: &IpAddr) -> bool;
}

struct Ours {
    limiter: Limiter,
    limit: Limit,
}

impl Checker for Ours {
    #[inline]
    fn check(&self, ip: &IpAddr) -> bool {
        let mut buf = [0u8; 16];
        let len = key_bytes(ip, &mut buf);
        match self.limiter.check(&self.limit, &buf[..len]).now_or_never() {
            Some(Ok(decision)) => decision.allowed(),
            _ => unreachable!("the memory store decides at once"),
        }
    }
}

impl Checker for DefaultKeyedRateLimiter<IpAddr> {
    #[inline]
    fn check(&self, ip: &IpAddr) -> bool {
        self.check_key(ip).is_ok()
    }
}

/// Limits that a benchmark never reaches (the allowed path), or always exceeds.
#[derive(Clone, Copy)]
enum Path {
    Allowed,
    Rejected,
}

fn ours(algorithm: Algorithm, path: Path) -> Ours {
    let policy = match path {
        // The exact log keeps every admitted instant, so it gets a per-client limit (5 per
        // second, as in the memory target): a "never reached" limit would mean a log of
        // millions of instants per key. Its runs are therefore mostly rejections after the
        // first five per second; `sliding_window_100` shows a larger log. The others get
        // the largest limit they take, which these runs never reach.
        Path::Allowed if algorithm == Algorithm::SlidingWindow => {
            Policy::for_algorithm(algorithm, 5, Duration::from_secs(1))
        }
        Path::Allowed => Policy::for_algorithm(
            algorithm,
            Policy::max_limit(algorithm),
            Duration::from_secs(1),
        ),
        Path::Rejected => Policy::for_algorithm(algorithm, 1, Duration::from_secs(3600)),
    }
    .expect("valid policy");
    Ours {
        limiter: Limiter::builder().build(),
        limit: Limit::new("bench", policy),
    }
}

fn governor(path: Path) -> DefaultKeyedRateLimiter<IpAddr> {
    let quota = match path {
        Path::Allowed => Quota::per_second(NonZeroU32::MAX),
        Path::Rejected => Quota::per_hour(NonZeroU32::MIN),
    };
    RateLimiter::keyed(quota)
}

fn contenders(path: Path) -> Vec<(String, Box<dyn Checker>)> {
    let mut all: Vec<(String, Box<dyn Checker>)> =
        vec![("governor".to_string(), Box::new(governor(path)))];
    for algorithm in Algorithm::ALL {
        all.push((
            algorithm.name().to_string(),
            Box::new(ours(algorithm, path)),
        ));
    }
    if let Path::Allowed = path {
        // 100 per second: over 100,000 keys the logs (400 bytes each) outgrow the caches.
        let policy = Policy::new(100, Duration::from_secs(1)).expect("valid policy");
        let checker = Ours {
            limiter: Limiter::builder().build(),
            limit: Limit::new("bench", policy),
        };
        all.push(("sliding_window_100".to_string(), Box::new(checker)));
    }
    all
}

/// Runs `iters` checks split over `threads` threads, over `keys` in turn.
fn timed(checker: &dyn Checker, keys: &[IpAddr], threads: usize, iters: u64) -> Duration {
    let per_thread = iters / threads as u64;
    let barrier = Barrier::new(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    let start = Instant::now();
                    let mut i = t * keys.len() / threads;
                    for _ in 0..per_thread {
                        black_box(checker.check(&keys[i]));
                        i += 1;
                        if i == keys.len() {
                            i = 0;
                        }
                    }
                    start.elapsed()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("bench thread"))
            .max()
            .unwrap_or_default()
    })
}

fn workload(c: &mut Criterion, name: &str, keys: &[IpAddr], threads: usize, path: Path) {
    let mut group = c.benchmark_group(name);
    for (label, checker) in contenders(path) {
        // Warm every key in, so the measured checks find their state.
        for key in keys {
            checker.check(key);
        }
        group.bench_function(BenchmarkId::from_parameter(&label), |b| {
            b.iter_custom(|iters| timed(&*checker, keys, threads, iters))
        });
    }
    group.finish();
}

fn benches(c: &mut Criterion) {
    let hot = [IpAddr::V4(Ipv4Addr::new(203, 0, 113, 7))];
    let many = keys();
    workload(c, "hot_key_1_thread", &hot, 1, Path::Allowed);
    workload(c, "hot_key_2_threads", &hot, 2, Path::Allowed);
    workload(c, "100k_keys_1_thread", &many, 1, Path::Allowed);
    workload(c, "100k_keys_2_threads", &many, 2, Path::Allowed);
    workload(c, "rejecting_1_thread", &hot, 1, Path::Rejected);
}

criterion_group! {
    name = store;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(30);
    targets = benches
}
criterion_main!(store);
