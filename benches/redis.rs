//! Checks per second through `RedisStore` with 32 concurrent tasks, against
//! `redis-benchmark` running the same script with `EVALSHA` at the same concurrency, in the
//! same run, on a `redis-server` of its own (loopback, a free port). Also reads
//! `INFO commandstats` for the calls per check (fewer than one: concurrent checks are batched).
//!
//! `cargo bench --manifest-path benches/Cargo.toml --features redis --bench redis` (about 20 s; `ROUNDS`, `CHECKS` change it)

#![allow(missing_docs)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark: a panic is a failure

#[path = "../tests/common/redis_server.rs"]
mod redis_server;

use std::process::Command;
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

/// `redis-benchmark` running the same script, same arguments, same concurrency.
fn theirs(port: u16, sha: &str, policy: &Policy, checks: u64, pipeline: u32) -> f64 {
    let key = format!("bench-{}:{{__rand_int__}}", policy.algorithm());
    let output = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args([
            "-c",
            &TASKS.to_string(),
            "-n",
            &checks.to_string(),
            "-P",
            &pipeline.to_string(),
        ])
        .args(["-r", "100000", "-q"])
        // min_ttl 0, one policy, one check of it (one unit, the server's clock).
        .args(["EVALSHA", sha, "1", &key, "0", "1"])
        // The script's state codes (scripts.rs): a sliding log of 128 or fewer is a packed
        // string (5), a longer one a list (1).
        .arg(match policy.algorithm() {
            Algorithm::SlidingWindow if policy.max().get() <= 128 => "5",
            Algorithm::SlidingWindow => "1",
            Algorithm::FixedWindow => "2",
            Algorithm::SlidingWindowCounter => "3",
            Algorithm::TokenBucket => "4",
        })
        .arg(policy.window_ms().to_string())
        .arg(policy.max().get().to_string())
        .arg(policy.emission_interval_ns().to_string())
        .arg((u64::from(policy.burst().get()) * policy.emission_interval_ns()).to_string())
        .arg("\u{1}") // the plan: one usual check of policy 1
        .output()
        .expect("redis-benchmark comes with redis-server (apt-get install -y redis-server)");
    let text = String::from_utf8_lossy(&output.stdout);
    // "EVALSHA ...: 31234.56 requests per second, p50=..."
    text.split("requests per second")
        .next()
        .and_then(|head| head.rsplit(' ').nth(1).or_else(|| head.rsplit(':').next()))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("cannot read redis-benchmark's output: {text}"))
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
    let port: u16 = server.url().rsplit(':').next().unwrap().parse().unwrap();
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
        server.command(&["FLUSHALL"]);
        let memory_before = server.used_memory();
        server.command(&["CONFIG", "RESETSTAT"]);
        // Every check of this run is a new client's.
        ours(&runtime, &store, &limit, checks);
        // Per check, not per call: a call carries a batch.
        let usec = server.usec_per_call("evalsha") * server.calls("evalsha") as f64 / checks as f64;
        let keys = server.integer(&["DBSIZE"]).max(1) as f64;
        let bytes = (server.used_memory() - memory_before) as f64 / keys;
        for _ in 0..rounds {
            a.push(ours(&runtime, &store, &limit, checks));
            b.push(theirs(port, sha, &policy, checks, 1));
        }
        let pipelined = theirs(port, sha, &policy, checks, 16);
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
    let calls = server.calls("evalsha");
    println!(
        "INFO commandstats: {calls} EVALSHA for 3200 checks ({:.3} per check)",
        calls as f64 / 3200.0
    );
}
