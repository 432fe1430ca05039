//! Metrics (feature `metrics`), read through `metrics-util`'s debugging recorder: counters
//! move exactly as decisions are made, the store's latency and health and the memory
//! store's figures are published, and no client key ever becomes a label.
#![cfg(feature = "metrics")]
#![allow(clippy::unwrap_used, clippy::expect_used)]
// tests: a panic is a failure
// The tests run one at a time (see `one_at_a_time`), each on a runtime of its own: a guard
// held across their awaits cannot deadlock.
#![allow(clippy::await_holding_lock)]

use crate::common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use actix_web::dev::{Service, ServiceResponse};
use actix_web::{test, web, App, HttpRequest, HttpResponse};
use common::peer;
use limiter::{rate_limit, Limit, Limiter, ManualClock, MemoryStore, OnStoreError, Policy, Store};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};

/// Every metric so far, by name and labels (`name{a=x,b=y}`): counters summed, gauges as
/// last set, histograms' sample counts. Snapshots drain the recorder, so all tests read
/// through this one accumulator.
fn metrics() -> HashMap<String, f64> {
    static SNAPSHOTTER: OnceLock<Snapshotter> = OnceLock::new();
    static SEEN: Mutex<Option<HashMap<String, f64>>> = Mutex::new(None);
    let snapshotter = SNAPSHOTTER.get_or_init(|| {
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        recorder.install().expect("the only recorder");
        snapshotter
    });
    let mut seen = SEEN.lock().unwrap();
    let seen = seen.get_or_insert_with(HashMap::new);
    for (key, _, _, value) in snapshotter.snapshot().into_vec() {
        let key = key.key();
        let mut labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        labels.sort();
        let name = format!("{}{{{}}}", key.name(), labels.join(","));
        let entry = seen.entry(name).or_insert(0.0);
        match value {
            DebugValue::Counter(n) => *entry += n as f64,
            DebugValue::Gauge(g) => *entry = g.into_inner(),
            DebugValue::Histogram(samples) => *entry += samples.len() as f64,
        }
    }
    seen.clone()
}

/// The memory store's gauges (`limiter_keys`, `limiter_bytes`) are the process's, set by
/// whichever store publishes last — every limiter here has one, a Redis limiter's fallback
/// too: the tests run one at a time, so that each reads its own.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    common::one_at_a_time()
}

fn decisions(scope: &str, outcome: &str) -> f64 {
    let name = format!("limiter_decisions_total{{outcome={outcome},scope={scope}}}");
    metrics().get(&name).copied().unwrap_or(0.0)
}

async fn get(
    app: &impl Service<actix_http::Request, Response = ServiceResponse, Error = actix_web::Error>,
    uri: &str,
) -> u16 {
    let req = test::TestRequest::get()
        .uri(uri)
        .peer_addr(peer("203.0.113.7:1"));
    test::call_service(app, req.to_request())
        .await
        .status()
        .as_u16()
}

#[rate_limit(2, per = "1m", scope = "metrics-login")]
async fn login() -> &'static str {
    "ok"
}

#[rate_limit(1, per = "1m", dry_run = true, scope = "metrics-trial")]
async fn trial() -> &'static str {
    "ok"
}

static PER_NAME: Limit = Limit::constant(
    "metrics-checked",
    match Policy::new(1, Duration::from_secs(60)) {
        Ok(policy) => policy,
        Err(_) => panic!("a valid policy"),
    },
);

async fn checked(req: HttpRequest) -> Result<HttpResponse, limiter::Rejected> {
    limiter::check(&req, &PER_NAME, "ann").await?;
    Ok(HttpResponse::Ok().finish())
}

#[actix_web::test]
async fn counters_move_exactly_as_decisions_are_made() {
    let _one = one_at_a_time();
    metrics();
    let limiter = Limiter::builder()
        .clock(ManualClock::starting_at(Duration::from_secs(60)))
        .exempt_when(|req| req.headers().contains_key("x-internal"))
        .build();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/login", web::get().to(login))
            .route("/trial", web::get().to(trial))
            .route("/checked", web::get().to(checked)),
    )
    .await;
    let statuses = [
        get(&app, "/login").await,
        get(&app, "/login").await,
        get(&app, "/login").await,
    ];
    assert_eq!(statuses, [200, 200, 429]);
    let internal = test::TestRequest::get()
        .uri("/login")
        .insert_header(("x-internal", "1"))
        .peer_addr(peer("203.0.113.7:1"));
    assert_eq!(
        test::call_service(&app, internal.to_request())
            .await
            .status(),
        200
    );
    assert_eq!(decisions("metrics-login", "allowed"), 2.0);
    assert_eq!(decisions("metrics-login", "rejected"), 1.0);
    assert_eq!(decisions("metrics-login", "exempt"), 1.0);

    assert_eq!(
        [get(&app, "/trial").await, get(&app, "/trial").await],
        [200, 200]
    );
    assert_eq!(decisions("metrics-trial", "allowed"), 1.0);
    assert_eq!(decisions("metrics-trial", "dry_run"), 1.0);

    assert_eq!(
        [get(&app, "/checked").await, get(&app, "/checked").await],
        [200, 429]
    );
    assert_eq!(decisions("metrics-checked", "allowed"), 1.0);
    assert_eq!(decisions("metrics-checked", "rejected"), 1.0);

    // Labels are scopes and outcomes: the client's address appears nowhere.
    assert!(metrics().keys().all(|name| !name.contains("203.0.113.7")));
}

#[rate_limit(1, per = "1m", enforce = "25%", scope = "metrics-rollout")]
async fn rolled_out() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn a_rollout_counts_enforced_and_let_through_rejections_apart() {
    let _one = one_at_a_time();
    metrics();
    let limiter = Limiter::builder()
        .clock(ManualClock::starting_at(Duration::from_secs(60)))
        .build();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/r", web::get().to(rolled_out)),
    )
    .await;
    let (mut refused, mut let_through) = (0.0, 0.0);
    for n in 0..400u32 {
        let from = peer(&format!("10.0.{}.{}:1", n >> 8, n & 255));
        for round in 0..2 {
            let req = test::TestRequest::get().uri("/r").peer_addr(from);
            let res = test::call_service(&app, req.to_request()).await;
            match (round, res.status().as_u16()) {
                (0, 200) => {}
                (1, 429) => refused += 1.0,
                (1, 200) if res.headers().contains_key("x-ratelimit-dry-run") => let_through += 1.0,
                other => panic!("client {n}: {other:?}"),
            }
        }
    }
    assert!(
        refused > 50.0 && let_through > 250.0,
        "{refused} {let_through}"
    );
    assert_eq!(decisions("metrics-rollout", "allowed"), 400.0);
    assert_eq!(decisions("metrics-rollout", "rejected"), refused);
    assert_eq!(decisions("metrics-rollout", "dry_run"), let_through);
}

// ---- a store that fails on demand ----------------------------------------------------------

/// The memory store, failing while its flag is set; a flag and a name per test, since they
/// run at once and the store's metrics are labelled by its name.
struct Flaky(MemoryStore, &'static AtomicBool, &'static str);

impl Store for Flaky {
    fn check<'a>(&'a self, limit: &'a Limit, key: &'a [u8], now: Duration) -> limiter::Check<'a> {
        if self.1.load(Ordering::SeqCst) {
            return limiter::Check::ready(Err(limiter::StoreError::msg("down")));
        }
        self.0.check(limit, key, now)
    }

    fn check_all<'a>(
        &'a self,
        charges: &'a [limiter::Charge<'a>],
        now: Duration,
    ) -> limiter::Check<'a, limiter::Checked> {
        if self.1.load(Ordering::SeqCst) {
            return limiter::Check::ready(Err(limiter::StoreError::msg("down")));
        }
        self.0.check_all(charges, now)
    }

    fn refund<'a>(
        &'a self,
        charges: &'a [limiter::Charge<'a>],
        receipt: &'a limiter::Receipt,
        now: Duration,
    ) -> limiter::Check<'a, ()> {
        self.0.refund(charges, receipt, now)
    }

    fn reset<'a>(&'a self, limit: &'a Limit, key: &'a [u8]) -> limiter::Check<'a, ()> {
        Store::reset(&self.0, limit, key)
    }

    fn name(&self) -> &'static str {
        self.2
    }
}

#[rate_limit(100, per = "1m", scope = "metrics-store")]
async fn stored() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn the_store_publishes_its_latency_and_health() {
    let _one = one_at_a_time();
    static DOWN: AtomicBool = AtomicBool::new(false);
    metrics();
    let limiter = Limiter::builder()
        .store(Flaky(MemoryStore::new(), &DOWN, "flaky"))
        .on_store_error(OnStoreError::FailOpen)
        .build();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/", web::get().to(stored)),
    )
    .await;
    assert_eq!(get(&app, "/").await, 200);
    assert_eq!(get(&app, "/").await, 200);
    let seen = metrics();
    assert_eq!(seen.get("limiter_store_up{store=flaky}"), Some(&1.0));
    assert_eq!(seen.get("limiter_store_seconds{store=flaky}"), Some(&2.0));
    DOWN.store(true, Ordering::SeqCst);
    assert_eq!(get(&app, "/").await, 200); // fails open
    assert_eq!(get(&app, "/").await, 200);
    assert_eq!(get(&app, "/").await, 200);
    // One failure is a blip, not an outage: each of the three asked the store. Three in a
    // row are one.
    let seen = metrics();
    assert_eq!(seen.get("limiter_store_seconds{store=flaky}"), Some(&5.0));
    assert_eq!(seen.get("limiter_store_up{store=flaky}"), Some(&0.0));
    assert_eq!(decisions("metrics-store", "store_error"), 3.0);
    assert_eq!(decisions("metrics-store", "allowed"), 2.0);
    DOWN.store(false, Ordering::SeqCst);
    // Retried after the retry interval, in real time.
    std::thread::sleep(limiter::RETRY_INTERVAL + Duration::from_millis(50));
    assert_eq!(get(&app, "/").await, 200);
    assert_eq!(metrics().get("limiter_store_up{store=flaky}"), Some(&1.0));
}

#[rate_limit(2, per = "1m", scope = "metrics-fallback")]
async fn fallback_one() -> &'static str {
    "ok"
}

#[rate_limit(2, per = "1m", scope = "metrics-fallback-minute")]
#[rate_limit(10, per = "1h", scope = "metrics-fallback-hour")]
async fn fallback_two() -> &'static str {
    "ok"
}

static FALLBACK_CHECKED: Limit = Limit::constant(
    "metrics-fallback-checked",
    match Policy::new(2, Duration::from_secs(60)) {
        Ok(policy) => policy,
        Err(_) => panic!("a valid policy"),
    },
);

async fn fallback_checked(req: HttpRequest) -> Result<HttpResponse, limiter::Rejected> {
    limiter::check(&req, &FALLBACK_CHECKED, "ann").await?;
    Ok(HttpResponse::Ok().finish())
}

#[actix_web::test]
async fn every_check_the_fallback_memory_answers_counts_as_a_store_error() {
    let _one = one_at_a_time();
    static DOWN: AtomicBool = AtomicBool::new(true);
    metrics();
    let limiter = Limiter::builder()
        .store(Flaky(MemoryStore::new(), &DOWN, "flaky-fallback"))
        .on_store_error(OnStoreError::FallBackToMemory)
        .build();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/one", web::get().to(fallback_one))
            .route("/two", web::get().to(fallback_two))
            .route("/checked", web::get().to(fallback_checked)),
    )
    .await;
    // The limits hold from memory, and every decision of the outage says so, allowed or
    // rejected: a single limit, a stack, a check inside the handler.
    for (path, scopes) in [
        ("/one", &["metrics-fallback"][..]),
        (
            "/two",
            &["metrics-fallback-minute", "metrics-fallback-hour"],
        ),
        ("/checked", &["metrics-fallback-checked"]),
    ] {
        let mut statuses = Vec::new();
        for _ in 0..3 {
            statuses.push(get(&app, path).await);
        }
        assert_eq!(statuses, [200, 200, 429], "{path}");
        let counted: Vec<[f64; 3]> = scopes
            .iter()
            .map(|scope| {
                ["store_error", "allowed", "rejected"].map(|outcome| decisions(scope, outcome))
            })
            .collect();
        println!("{path}: [store_error, allowed, rejected] per scope: {counted:?}");
        // Each limit's decisions of the outage; in the stack, the hour's third is not
        // counted (the minute rejected the request before it was decided).
        assert_eq!(counted[0], [3.0, 0.0, 0.0], "{path}");
        if let Some(hour) = counted.get(1) {
            assert_eq!(*hour, [2.0, 0.0, 0.0], "{path}");
        }
    }
}

#[rate_limit(3, per = "1m", scope = "metrics-outage")]
async fn outage() -> &'static str {
    "ok"
}

/// A real outage: a `redis-server` of the test's own, killed. While it answers, decisions
/// are `allowed`; once it is gone, every request is decided by the fallback memory and
/// counted as a store error, the limit still holding.
#[cfg(feature = "redis")]
#[actix_web::test]
async fn a_killed_redis_is_counted_as_store_errors() {
    let _one = one_at_a_time();
    let mut redis = common::redis_server::RedisServer::start();
    metrics();
    let store = limiter::RedisStore::connect(&redis.url()).await.unwrap();
    let limiter = Limiter::builder()
        .store(store)
        .on_store_error(OnStoreError::FallBackToMemory)
        .build();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/", web::get().to(outage)),
    )
    .await;
    let count = || ["store_error", "allowed", "rejected"].map(|o| decisions("metrics-outage", o));
    assert_eq!(get(&app, "/").await, 200);
    assert_eq!(count(), [0.0, 1.0, 0.0], "Redis up");
    redis.stop();
    let statuses = [
        get(&app, "/").await,
        get(&app, "/").await,
        get(&app, "/").await,
        get(&app, "/").await,
    ];
    println!(
        "Redis killed: {statuses:?}, [store_error, allowed, rejected] = {:?}",
        count()
    );
    // The fallback memory counts afresh (it never saw the first request): 3 more, then 429.
    assert_eq!(statuses, [200, 200, 200, 429]);
    assert_eq!(
        count(),
        [4.0, 1.0, 0.0],
        "every decision of the outage is a store error"
    );
}

#[::std::prelude::v1::test]
fn the_memory_store_publishes_its_keys_bytes_and_evictions() {
    let _one = one_at_a_time();
    metrics();
    let clock = ManualClock::starting_at(Duration::from_secs(1));
    let store = MemoryStore::with_bounds(1_000, 1 << 20);
    let limit = Limit::new(
        "metrics-memory",
        Policy::new(5, Duration::from_secs(3600)).unwrap(),
    );
    // 2,000 keys into 1,000, the clock moving a housekeeping tick per check: every shard is
    // visited many times over, and the figures published once per round.
    for i in 0u32..2_000 {
        clock.advance(Duration::from_millis(10));
        let _ = store.check_at(&limit, &i.to_le_bytes(), limiter::Clock::now(&clock));
    }
    let seen = metrics();
    let keys = seen.get("limiter_keys{}").copied().unwrap_or(0.0);
    assert!(keys > 900.0 && keys <= 1_000.0, "{keys}");
    assert!(seen.get("limiter_bytes{}").copied().unwrap_or(0.0) > 0.0);
    assert!(
        seen.get("limiter_evictions_total{}")
            .copied()
            .unwrap_or(0.0)
            >= 900.0
    );
}
