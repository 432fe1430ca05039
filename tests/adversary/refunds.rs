//! §1 of the attacks: refunds (`count = "failures"`) give back exactly what is still owed,
//! on the store that counted it — over real HTTP, on Redis's own clock and the caller's.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use actix_web::{web, HttpResponse};
use limiter::{rate_limit, Charge, Limit, Limiter, ManualClock, OnStoreError, Policy, RedisStore};
use serde::Deserialize;
use tokio::sync::Semaphore;

use crate::common::redis_server::RedisServer;
use crate::harness::{client, exchange, get, Response, Server};

/// Gates that slow handlers wait at until the test opens them: a success that takes its
/// time, overlapping later requests. Each test uses gates of its own numbers.
static GATES: LazyLock<Mutex<HashMap<u32, Arc<Gate>>>> = LazyLock::new(Default::default);

struct Gate {
    arrived: Semaphore,
    open: Semaphore,
}

fn gate(n: u32) -> Arc<Gate> {
    Arc::clone(GATES.lock().unwrap().entry(n).or_insert_with(|| {
        Arc::new(Gate {
            arrived: Semaphore::new(0),
            open: Semaphore::new(0),
        })
    }))
}

fn open(n: u32) {
    gate(n).open.add_permits(1);
}

/// Waits until a handler reached gate `n`.
async fn arrived(n: u32) {
    gate(n).arrived.acquire().await.unwrap().forget();
}

#[derive(Deserialize)]
struct Attempt {
    /// The attempt succeeds (200) rather than failing (401).
    ok: Option<u8>,
    /// It waits at this gate first.
    gate: Option<u32>,
}

async fn attempt(q: web::Query<Attempt>) -> HttpResponse {
    if let Some(n) = q.gate {
        let gate = gate(n);
        gate.arrived.add_permits(1);
        gate.open.acquire().await.unwrap().forget();
    }
    if q.ok == Some(1) {
        HttpResponse::Ok().finish()
    } else {
        HttpResponse::Unauthorized().finish()
    }
}

#[rate_limit(1, per = "1h", algorithm = "fixed_window", count = "failures")]
async fn fixed(q: web::Query<Attempt>) -> HttpResponse {
    attempt(q).await
}

#[rate_limit(1, per = "1h", count = "failures")]
async fn sliding(q: web::Query<Attempt>) -> HttpResponse {
    attempt(q).await
}

#[rate_limit(
    1,
    per = "1h",
    algorithm = "sliding_window_counter",
    count = "failures"
)]
async fn counter(q: web::Query<Attempt>) -> HttpResponse {
    attempt(q).await
}

#[rate_limit(1, per = "1h", algorithm = "token_bucket", count = "failures")]
async fn bucket(q: web::Query<Attempt>) -> HttpResponse {
    attempt(q).await
}

/// One token per 10 s, a bucket of one, failures only.
#[rate_limit(1, per = "10s", algorithm = "token_bucket", count = "failures")]
async fn slow_bucket(q: web::Query<Attempt>) -> HttpResponse {
    attempt(q).await
}

/// One token per second, a bucket of one, failures only: for Redis's own clock.
#[rate_limit(1, per = "1s", algorithm = "token_bucket", count = "failures")]
async fn second_bucket(q: web::Query<Attempt>) -> HttpResponse {
    attempt(q).await
}

#[rate_limit(1000, per = "1h")]
async fn probe() -> HttpResponse {
    HttpResponse::Ok().finish()
}

fn routes(config: &mut web::ServiceConfig) {
    config
        .route("/probe", web::get().to(probe))
        .route("/fixed", web::get().to(fixed))
        .route("/sliding", web::get().to(sliding))
        .route("/counter", web::get().to(counter))
        .route("/bucket", web::get().to(bucket))
        .route("/slow-bucket", web::get().to(slow_bucket))
        .route("/second-bucket", web::get().to(second_bucket));
}

async fn call(server: &Server, path: &str) -> Response {
    exchange(server.addr, &get(path, &[]), Duration::from_secs(10))
        .await
        .expect("answered within 10 s")
}

/// `#[rate_limit(1, per = "1h", count = "failures")]` on a handler that always answers 200,
/// through `RedisStore::connect` with its defaults (Redis's own clock): every success is
/// given back, so it never answers 429 — for every algorithm. (It answered 200, 429, 429,
/// 429: the refund was placed 250 ms before the check it undid.) Two failures then spend
/// the one unit and are refused.
#[test]
fn on_redis_own_clock_every_success_is_given_back() {
    let redis = RedisServer::start();
    let rt = client();
    let store = rt.block_on(RedisStore::connect(&redis.url())).unwrap();
    let server = Server::start(Limiter::builder().store(store).build(), 2, routes);
    rt.block_on(async {
        for path in ["/fixed", "/sliding", "/counter", "/bucket"] {
            let mut statuses = Vec::new();
            for _ in 0..4 {
                statuses.push(call(&server, &format!("{path}?ok=1")).await.status);
            }
            statuses.push(call(&server, path).await.status);
            statuses.push(call(&server, path).await.status);
            println!("{path}: 4 successes then 2 failures answered {statuses:?}");
            assert_eq!(statuses, [200, 200, 200, 200, 401, 429], "{path}");
        }
    });
}

/// One token per 10 s, a bucket of one, failures only: a slow success admitted at t=0, a
/// failure admitted at t=10, the success finishes at t=15. Its token came back at t=10 by
/// itself and was taken by the failure: the refund has nothing left to give, and a third
/// failure at t=15 gets 429 with Retry-After 5. (The refund gave the failure's token back,
/// and admitted the third.) In memory and on Redis, on the caller's clock.
#[test]
fn a_late_bucket_refund_gives_back_nothing_that_already_came_back() {
    let redis = RedisServer::start();
    let rt = client();
    for on_redis in [false, true] {
        let clock = ManualClock::starting_at(Duration::from_secs(1_700_000_000));
        let mut builder = Limiter::builder().clock(clock.clone());
        if on_redis {
            let store = rt.block_on(RedisStore::connect(&redis.url())).unwrap();
            builder = builder.store(
                store
                    .use_caller_clock()
                    .with_prefix(format!("late-{on_redis}")),
            );
        }
        let server = Server::start(builder.build(), 2, routes);
        let n = u32::from(on_redis) + 10;
        let third = rt.block_on(async {
            let slow = {
                let addr = server.addr;
                let path = format!("/slow-bucket?ok=1&gate={n}");
                tokio::spawn(async move {
                    exchange(addr, &get(&path, &[]), Duration::from_secs(10)).await
                })
            };
            arrived(n).await;
            clock.advance(Duration::from_secs(10));
            assert_eq!(call(&server, "/slow-bucket").await.status, 401);
            clock.advance(Duration::from_secs(5));
            open(n);
            assert_eq!(slow.await.unwrap().unwrap().status, 200);
            call(&server, "/slow-bucket").await
        });
        let store = if on_redis { "redis" } else { "memory" };
        println!(
            "{store}: the third request answered {} with Retry-After {:?}",
            third.status,
            third.header("retry-after")
        );
        assert_eq!(third.status, 429, "{store}");
        assert_eq!(third.header("retry-after"), Some("5"), "{store}");
    }
}

/// The same on Redis's own clock, in real time (one token per second): a success admitted
/// at 0 and finished at 1.5 s, after a failure took the token that came back at 1 s, gives
/// nothing back.
#[test]
fn a_late_bucket_refund_on_redis_own_clock_gives_back_nothing_that_came_back() {
    let redis = RedisServer::start();
    let rt = client();
    let store = rt.block_on(RedisStore::connect(&redis.url())).unwrap();
    let server = Server::start(Limiter::builder().store(store).build(), 2, routes);
    let third = rt.block_on(async {
        let slow = {
            let addr = server.addr;
            tokio::spawn(async move {
                exchange(
                    addr,
                    &get("/second-bucket?ok=1&gate=2", &[]),
                    Duration::from_secs(10),
                )
                .await
            })
        };
        arrived(2).await;
        tokio::time::sleep(Duration::from_millis(1_050)).await;
        assert_eq!(call(&server, "/second-bucket").await.status, 401);
        tokio::time::sleep(Duration::from_millis(400)).await;
        open(2);
        assert_eq!(slow.await.unwrap().unwrap().status, 200);
        call(&server, "/second-bucket").await
    });
    println!("server clock: the third request answered {}", third.status);
    assert_eq!(third.status, 429);
}

/// A unit counted in Redis before an outage is given back to Redis, not to this instance's
/// fallback memory (where it would remove another request's unit); and one counted in the
/// fallback memory while Redis was away is given back there, not to Redis once it is back.
/// One failure per hour, failures only.
#[test]
fn a_refund_goes_to_the_store_that_counted() {
    let rt = client();
    // Counted in Redis, refunded while it is away.
    let mut redis = RedisServer::start();
    let store = rt.block_on(RedisStore::connect(&redis.url())).unwrap();
    let limiter = Limiter::builder()
        .store(store)
        .on_store_error(OnStoreError::FallBackToMemory)
        .build();
    let server = Server::start(limiter, 2, routes);
    let (second, third) = rt.block_on(async {
        let slow = {
            let addr = server.addr;
            tokio::spawn(async move {
                exchange(
                    addr,
                    &get("/fixed?ok=1&gate=3", &[]),
                    Duration::from_secs(10),
                )
                .await
            })
        };
        arrived(3).await;
        redis.stop();
        // Counted in this instance's memory meanwhile: its one unit.
        let second = call(&server, "/fixed").await.status;
        open(3);
        assert_eq!(slow.await.unwrap().unwrap().status, 200);
        (second, call(&server, "/fixed").await.status)
    });
    println!("Redis went away: the fallback answered {second} then {third}");
    assert_eq!((second, third), (401, 429));
    drop(server);

    // Counted in the fallback memory, refunded once Redis is back.
    redis.restart();
    let port = redis.port();
    redis.stop();
    let store = rt
        .block_on(async { RedisStore::connect_lazily(&format!("redis://127.0.0.1:{port}")) })
        .unwrap();
    let limiter = Limiter::builder()
        .store(store)
        .on_store_error(OnStoreError::FallBackToMemory)
        .build();
    let server = Server::start(limiter, 2, routes);
    let (second, third) = rt.block_on(async {
        let slow = {
            let addr = server.addr;
            tokio::spawn(async move {
                exchange(
                    addr,
                    &get("/sliding?ok=1&gate=4", &[]),
                    Duration::from_secs(10),
                )
                .await
            })
        };
        arrived(4).await;
        redis.restart();
        // Until this instance counts in Redis again (the probe's key appears there).
        while redis.try_state_keys() != Some(1) {
            let _ = call(&server, "/probe").await;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Redis counts this one: its one unit.
        let second = call(&server, "/sliding").await.status;
        open(4);
        assert_eq!(slow.await.unwrap().unwrap().status, 200);
        (second, call(&server, "/sliding").await.status)
    });
    println!("Redis came back: it answered {second} then {third}");
    assert_eq!((second, third), (401, 429));
}

#[rate_limit(2, per = "1h", scope = "adversary-shared")]
async fn shared_plain() -> HttpResponse {
    HttpResponse::Ok().finish()
}

#[rate_limit(2, per = "1h", scope = "adversary-shared", count = "failures")]
async fn shared_counted(q: web::Query<Attempt>) -> HttpResponse {
    attempt(q).await
}

fn shared_routes(config: &mut web::ServiceConfig) {
    config
        .route("/plain", web::get().to(shared_plain))
        .route("/counted", web::get().to(shared_counted));
}

/// Two handlers share a scope; one counts failures only. Two instances on one Redis: a
/// rejection remembered by one instance must not outlive a refund the other made — the
/// store would admit. (The remembered rejection answered 429 for an hour.)
#[test]
fn a_remembered_rejection_never_outlives_a_refund_of_its_budget() {
    let redis = RedisServer::start();
    let rt = client();
    let instance = |rt: &tokio::runtime::Runtime| {
        let store = rt.block_on(RedisStore::connect(&redis.url())).unwrap();
        Server::start(Limiter::builder().store(store).build(), 1, shared_routes)
    };
    let (one, two) = (instance(&rt), instance(&rt));
    let statuses = rt.block_on(async {
        let slow = {
            let addr = one.addr;
            tokio::spawn(async move {
                exchange(
                    addr,
                    &get("/counted?ok=1&gate=5", &[]),
                    Duration::from_secs(10),
                )
                .await
            })
        };
        arrived(5).await;
        let full = call(&two, "/plain").await.status;
        let rejected = call(&two, "/plain").await.status;
        open(5);
        assert_eq!(slow.await.unwrap().unwrap().status, 200);
        let after_refund = call(&two, "/plain").await.status;
        [full, rejected, after_refund]
    });
    println!("instance two, around instance one's refund: {statuses:?}");
    assert_eq!(statuses, [200, 429, 200]);
}

/// Giving back one instant of a full sliding log in Redis reads a few instants near its
/// newest end, not the whole log: no `LRANGE`, a handful of `LINDEX`.
#[test]
fn a_sliding_log_refund_reads_a_few_instants_of_a_long_log() {
    let redis = RedisServer::start();
    let rt = client();
    let store = rt
        .block_on(RedisStore::connect(&redis.url()))
        .unwrap()
        .use_caller_clock();
    let max = u32::from(u16::MAX);
    let limit = Limit::new(
        "long-log",
        Policy::new(max, Duration::from_secs(3600)).unwrap(),
    );
    let start = Duration::from_secs(1_700_000_000);
    let limiter = Limiter::builder().store(store).build();
    let receipts = rt.block_on(async {
        let mut receipts = Vec::new();
        for i in 0..u64::from(max) {
            let at = start + Duration::from_millis(i / 4);
            let charge = [Charge::new(&limit, b"client")];
            let checked = limiter.store().check_all(&charge, at).await.unwrap();
            assert!(checked[0].allowed(), "{i}");
            receipts.push((at, checked.receipt().clone()));
        }
        receipts
    });
    assert_eq!(redis.state_keys(), 1);
    redis.command(&["CONFIG", "RESETSTAT"]);
    let refunded = 100;
    rt.block_on(async {
        for (at, receipt) in receipts.iter().rev().step_by(7).take(refunded) {
            let charge = [Charge::new(&limit, b"client")];
            limiter.store().refund(&charge, receipt, *at).await.unwrap();
        }
    });
    let (lrange, lindex) = (redis.calls("lrange"), redis.calls("lindex"));
    let len = redis.integer(&["LLEN", &redis_key(&limiter, &limit)]);
    println!(
        "{refunded} refunds of a {max}-instant log: {lrange} LRANGE, {:.1} LINDEX each",
        lindex as f64 / refunded as f64
    );
    assert_eq!(len, i64::from(max) - refunded as i64);
    assert_eq!(lrange, 0);
    assert!(lindex as usize <= 40 * refunded, "{lindex}");
}

fn redis_key(limiter: &Limiter, limit: &Limit) -> String {
    let _ = limiter;
    // The store's documented layout: PREFIX:{CLIENT}LIMIT, both in base64url.
    format!(
        "limiter:{{{}}}{}",
        crate::common::base64url(b"client"),
        crate::common::base64url(&limit.id().to_be_bytes())
    )
}
