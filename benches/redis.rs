//! Checks per second through `RedisStore` with 32 concurrent tasks, against 32 clients
//! sending the same script one check per `EVALSHA` (as `redis-benchmark` would, one call or
//! 16 pipelined in flight per connection), in the same run, on a `redis-server` of its own (loopback, a free port). Also reads
//! `INFO commandstats` for the calls per check (fewer than one: concurrent checks are batched).
//!
//! `cargo bench --manifest-path benches/Cargo.toml --features redis --bench redis` (about 20 s; `ROUNDS`, `CHECKS` change it)

#![allow(missing_docs)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark: a panic is a failure

#[path = "../tests/common/redis_server.rs"]
mod redis_server;

use std::time::{Duration, Instant};

use limiter::{Algorithm, Limit, Policy, RedisStore, Store};
use redis_server::RedisServer;

const TASKS: usize = 32;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Our checks per second: `checks` spread over 32 tasks sharing one store.
fn ours(runtime: &tokio::runtime::Runtime, store: &RedisStore, limit: &Limit, checks: u64) -> f64 {
    let started = Instant::now();
    runtime.block_on(async {
        let tasks: Vec<_> = (0..TASKS as u64)
            .map(|task| {
                let store = store.clone();
                let limit = limit.clone();
                tokio::spawn(async move {
                    for i in 0..checks / TASKS as u64 {
                        let key = ((task << 32) | (i % 100_000)).to_be_bytes();
                        store.check(&limit, &key, Duration::ZERO).await.unwrap();
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
    });
    checks as f64 / started.elapsed().as_secs_f64()
}

/// Clients sending the same script one check per call — as `redis-benchmark` would, which
/// cannot send the script's binary header — at the same concurrency (32 connections, each
/// with `pipeline` calls in flight), each check on a random one of 100,000 keys.
fn theirs(url: &str, sha: &str, policy: &Policy, checks: u64, pipeline: u32) -> f64 {
    // The header (scripts.rs): min_ttl 0, one policy; the plan: one usual check of it.
    let mut header = Vec::new();
    header.extend_from_slice(&0u64.to_be_bytes());
    header.extend_from_slice(&1u32.to_be_bytes());
    // The script's state codes (scripts.rs): a sliding log of 128 or fewer is a packed
    // string (5), a longer one a list (1).
    header.push(match policy.algorithm() {
        Algorithm::SlidingWindow if policy.max().get() <= 128 => 5,
        Algorithm::SlidingWindow => 1,
        Algorithm::FixedWindow => 2,
        Algorithm::SlidingWindowCounter => 3,
        Algorithm::TokenBucket => 4,
    });
    header.extend_from_slice(&policy.window_ms().to_be_bytes());
    header.extend_from_slice(&policy.max().get().to_be_bytes());
    header.extend_from_slice(&policy.emission_interval_ns().to_be_bytes());
    let capacity = u64::from(policy.burst().get()) * policy.emission_interval_ns();
    header.extend_from_slice(&capacity.to_be_bytes());
    // No penalty (block_ms 8, after 1, within_ms 8, escalated block_ms 8), no calendar
    // (period 1, offset 2), no delay (8): the header's other fields, as call.rs packs them.
    header.extend_from_slice(&[0u8; 8 + 1 + 8 + 8 + 1 + 2 + 8]);
    let per_client = checks / TASKS as u64;
    let started = Instant::now();
    std::thread::scope(|scope| {
        for client in 0..TASKS as u64 {
            let header = &header;
            scope.spawn(move || {
                let mut connection = redis::Client::open(url).unwrap().get_connection().unwrap();
                let mut state = client.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                let mut sent = 0;
                while sent < per_client {
                    let mut pipe = redis::pipe();
                    for _ in 0..u64::from(pipeline).min(per_client - sent) {
                        // xorshift: a random key, as redis-benchmark's -r.
                        state ^= state << 13;
                        state ^= state >> 7;
                        state ^= state << 17;
                        let key = format!("theirs-{}:{{{}}}", policy.algorithm(), state % 100_000);
                        pipe.cmd("EVALSHA")
                            .arg(sha)
                            .arg(1)
                            .arg(key)
                            .arg(header.as_slice())
                            .arg(&[1u8][..]);
                        sent += 1;
                    }
                    let _: Vec<Vec<i64>> = pipe.query(&mut connection).unwrap();
                }
            });
        }
    });
    checks as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let checks: u64 = std::env::var("CHECKS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let server = RedisServer::start();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let store = runtime
        .block_on(RedisStore::connect(&server.url()))
        .unwrap();
    println!("{TASKS} concurrent checks on one redis-server, {checks} checks a round, medians of {rounds} rounds");
    println!(
        "{:<24} {:>12} {:>14} {:>9} {:>16} {:>14} {:>12}",
        "algorithm",
        "ours/s",
        "evalsha/s",
        "ratio",
        "pipelined x16/s",
        "Redis µs/check",
        "bytes/key"
    );
    for algorithm in Algorithm::ALL {
        let policy = Policy::for_algorithm(algorithm, 100, Duration::from_secs(60)).unwrap();
        let limit = Limit::new(format!("bench-{algorithm}"), policy);
        let (sha, _) = store.script();
        ours(&runtime, &store, &limit, 1_000); // loads the script, warms the connection
        let (mut a, mut b) = (Vec::new(), Vec::new());
        // `SYNC`: Valkey 8 frees a flushed database in the background by default.
        server.command(&["FLUSHALL", "SYNC"]);
        let memory_before = server.used_memory();
        server.command(&["CONFIG", "RESETSTAT"]);
        // Every check of this run is a new client's.
        ours(&runtime, &store, &limit, checks);
        // Per check, not per call: a call carries a batch (and a new client's first check is
        // a plain `SET`).
        let usec = server.usec_of_calls() as f64 / checks as f64;
        let keys = server.integer(&["DBSIZE"]).max(1) as f64;
        let bytes = (server.used_memory() - memory_before) as f64 / keys;
        for _ in 0..rounds {
            a.push(ours(&runtime, &store, &limit, checks));
            b.push(theirs(&server.url(), sha, &policy, checks, 1));
        }
        let pipelined = theirs(&server.url(), sha, &policy, checks, 16);
        let (a, b) = (median(a), median(b));
        println!(
            "{:<24} {a:>12.0} {b:>14.0} {:>9.2} {pipelined:>16.0} {usec:>14.2} {bytes:>12.0}",
            algorithm.name(),
            a / b
        );
    }
    // A sliding log's bytes per instant: clients' logs of one instant, then as many more
    // filled to `max`; short logs are packed strings, long ones lists.
    for max in [10, 100, 128, 129, 1_000, 10_000] {
        let limit = Limit::new(
            format!("log-{max}"),
            Policy::new(max, Duration::from_secs(60)).unwrap(),
        );
        let clients: u32 = if max > 1_000 { 100 } else { 1_000 };
        let fill = |first: u32, cost: u32| {
            for client in first..first + clients {
                let key = client.to_be_bytes();
                let charge = [limiter::Charge::new(&limit, &key).cost(cost)];
                runtime
                    .block_on(store.check_all(&charge, Duration::ZERO))
                    .unwrap();
            }
        };
        server.command(&["FLUSHALL", "SYNC"]);
        let empty = server.used_memory() as f64;
        fill(0, 1);
        let one = server.used_memory() as f64;
        fill(clients, max);
        let full = server.used_memory() as f64;
        let per_log = (one - empty) / f64::from(clients);
        let per_full = (full - one) / f64::from(clients);
        println!(
            "a sliding log of {max:>6}: {:>5.1} bytes per instant, {per_log:>4.0} bytes with one",
            (per_full - per_log) / f64::from(max - 1),
        );
    }
    // Commands per check: one at most, fewer when checks are batched.
    server.command(&["CONFIG", "RESETSTAT"]);
    let limit = Limit::new(
        "commands",
        Policy::new(100, Duration::from_secs(60)).unwrap(),
    );
    ours(&runtime, &store, &limit, 3_200);
    let calls = server.check_calls();
    let sets = server.calls("set");
    println!(
        "INFO commandstats: {calls} FCALL/EVALSHA and {sets} SET for 3200 checks of new clients ({:.3} calls per check)",
        (calls + sets) as f64 / 3200.0
    );
}
