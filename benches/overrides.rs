//! What a policy set from configuration costs a check: none set (a relaxed load), one set
//! for another scope (a snapshot load and a map lookup), one set for this scope, and the
//! same while another thread calls `set_policy` without pause. Checks read a snapshot, so
//! a writer never blocks them.
//!
//! `cargo bench --manifest-path benches/Cargo.toml --bench overrides`

#![allow(missing_docs)] // criterion generates undocumented functions
#![allow(clippy::unwrap_used)] // a benchmark: a panic is a failure

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use limiter::{Algorithm, Limit, Limiter, Policy};

const KEYS: u32 = 10_000;

fn check(limiter: &Limiter, declared: &Limit, key: u32) -> bool {
    let bytes = key.to_le_bytes();
    let decision = match limiter.overridden(declared) {
        Some(limit) => limiter.check(&limit, &bytes).now_or_never(),
        None => limiter.check(declared, &bytes).now_or_never(),
    };
    decision.is_some_and(|d| d.is_ok_and(|d| d.allowed()))
}

fn run(c: &mut Criterion, name: &str, limiter: &Limiter, declared: &Limit) {
    let mut key = 0;
    c.bench_function(name, |b| {
        b.iter(|| {
            key = (key + 1) % KEYS;
            black_box(check(limiter, declared, key))
        })
    });
}

fn benches(c: &mut Criterion) {
    let hour = Duration::from_secs(3600);
    // Fixed windows: small state, so that the lookup's cost shows.
    let policy = |max| Policy::for_algorithm(Algorithm::FixedWindow, max, hour).unwrap();
    let declared = Limit::new("login", policy(1_000_000_000));
    let other = policy(2_000_000_000);

    let limiter = Limiter::builder().build();
    run(c, "overrides/none", &limiter, &declared);

    let limiter = Limiter::builder().policy("search", other).build();
    run(c, "overrides/another scope's", &limiter, &declared);

    let limiter = Limiter::builder().policy("login", other).build();
    run(c, "overrides/this scope's", &limiter, &declared);

    // A writer replacing the policy as fast as it can, on the other core.
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let policies = [other, policy(3_000_000_000)];
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) {
                limiter.set_policy("login", policies[i % 2]);
                i += 1;
            }
        });
        run(
            c,
            "overrides/this scope's, set_policy in a loop",
            &limiter,
            &declared,
        );
        stop.store(true, Ordering::Relaxed);
    });
}

criterion_group! {
    name = overrides;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = benches
}
criterion_main!(overrides);
