//! The Redis store against a real `redis-server` that these tests start on a free port (and
//! stop, pause and restart). Run with `cargo test --features redis`.
#![cfg(feature = "redis")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::rc::Rc;
use std::time::{Duration, Instant};

use actix_web::{test, web, App, HttpResponse};
use common::redis_server::RedisServer;
use common::replays::{self, policy, runtime};
use limiter::{
    rate_limit, Algorithm, Charge, Limit, Limiter, ManualClock, MemoryStore, OnStoreError, Policy,
    RedisStore, Store,
};
use proptest::prelude::*;

fn steps() -> impl Strategy<Value = Vec<(u8, u64)>> + Clone {
    replays::steps(3, 60)
}

/// A store connected to `server` that counts at its caller's readings (a manual clock's).
fn on_callers_clock(rt: &tokio::runtime::Runtime, server: &RedisServer) -> RedisStore {
    rt.block_on(RedisStore::connect(&server.url()))
        .unwrap()
        .use_caller_clock()
}

/// The two ways a store sends the check, for the tests of its decisions: to a server that
/// takes the check's library (`FCALL`), and to one whose ACL refuses functions, which gets
/// the check as a script (`EVALSHA`). Both must decide as the memory store does.
fn both_ways() -> impl Iterator<Item = (RedisServer, Way)> {
    [Way::Function, Way::Script].into_iter().map(|way| {
        let server = RedisServer::start();
        if way == Way::Script {
            server.command(&["ACL", "SETUSER", "default", "-fcall", "-function"]);
        }
        (server, way)
    })
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Way {
    Function,
    Script,
}

impl Way {
    /// Asserts that the checks sent to `server` went this way.
    fn was_taken(self, server: &RedisServer) {
        let (functions, scripts) = (
            server.calls("fcall"),
            server.calls("evalsha") + server.calls("eval"),
        );
        match self {
            // (Refunds are a script either way.)
            Way::Function => assert!(functions > 0, "{functions} calls of the function"),
            Way::Script => assert!(functions == 0 && scripts > 0, "{functions} {scripts}"),
        }
    }
}

/// The suite runs against the server asked for (`LIMITER_REDIS_SERVER=valkey-server`:
/// Valkey), and says which.
#[::std::prelude::v1::test]
fn the_server_under_test_is_the_one_asked_for() {
    let server = RedisServer::start();
    let version = server.version();
    println!("the Redis tests run against {version}");
    let asked = common::redis_server::server_binary();
    let family = if asked.contains("valkey") {
        "valkey "
    } else {
        "redis "
    };
    assert!(version.starts_with(family), "{asked} answered as {version}");
}

#[::std::prelude::v1::test]
fn decisions_equal_the_memory_stores_for_every_algorithm() {
    for (server, way) in both_ways() {
        let rt = runtime();
        let redis = on_callers_clock(&rt, &server);
        replays::single_checks_decide_as_in_memory(&rt, &redis, steps(), 40, "equal");
        way.was_taken(&server);
    }
}

/// Costs (including ones no budget holds) and refunds — late ones too, that arrive after
/// later requests and after their units came back — give the same decisions and the same
/// receipts in both stores, for every algorithm, on the caller's clock.
#[::std::prelude::v1::test]
fn costs_and_refunds_equal_the_memory_stores() {
    for (server, way) in both_ways() {
        let rt = runtime();
        let redis = on_callers_clock(&rt, &server);
        // Equivalence, not speed: a busy host may hold a call past the usual 50 ms.
        assert!(redis.accept_timeout(Duration::from_secs(10)));
        replays::costs_and_refunds_decide_as_in_memory(&rt, &redis, 40, "cost");
        way.was_taken(&server);
    }
}

// ---- readings out of order, stacks, and policies at their bounds ---------------------------

#[path = "../limiter-core/tests/common/lagging.rs"]
mod lagging;

/// Readings that reach Redis out of order (callers whose clocks read a few ms apart) keep
/// every algorithm within its bound, as in memory.
#[::std::prelude::v1::test]
fn lagging_readings_keep_every_bound_in_the_scripts() {
    let server = RedisServer::start();
    let rt = runtime();
    let redis = on_callers_clock(&rt, &server);
    let case = std::cell::Cell::new(0u32);
    for algorithm in Algorithm::ALL {
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(40));
        runner
            .run(
                &(lagging::any_policy(algorithm), lagging::schedule(50)),
                |(policy, schedule)| {
                    case.set(case.get() + 1);
                    let limit = Limit::new(format!("lagging-{}", case.get()), policy);
                    let check = |key: u8, reading: u64| {
                        rt.block_on(redis.check(&limit, &[key], Duration::from_millis(reading)))
                            .unwrap()
                    };
                    let runs = lagging::run(check, 1_700_000_000_000, &schedule);
                    lagging::within_bound(&policy, &runs)
                },
            )
            .unwrap();
    }
}

/// Stacked limits in one script answer exactly as the memory store's all-or-nothing
/// check: the same admissions, the same statuses for the limits that did not reject.
#[::std::prelude::v1::test]
fn stacks_answer_as_the_memory_store_does() {
    for (server, way) in both_ways() {
        let rt = runtime();
        let redis = on_callers_clock(&rt, &server);
        replays::stacks_answer_as_in_memory(&rt, &redis, steps(), 60, "stack", |key| {
            [[key], [key + 10], [key]]
        });
        way.was_taken(&server);
    }
}

/// Every policy the attribute accepts is computed, exactly, by the scripts: none is refused
/// (a refusal would look like an outage and flip every route to the fault policy).
#[::std::prelude::v1::test]
fn policies_at_their_bounds_are_exact_in_the_scripts() {
    let server = RedisServer::start();
    let rt = runtime();
    let redis = on_callers_clock(&rt, &server);
    let week = Duration::from_secs(7 * 86_400);
    let hour = Duration::from_secs(3_600);
    let at_bounds = [
        Policy::for_algorithm(Algorithm::TokenBucket, 4_000_000_000, hour).unwrap(),
        Policy::for_algorithm(Algorithm::TokenBucket, 1, week)
            .unwrap()
            .with_burst(7)
            .unwrap(),
        Policy::for_algorithm(Algorithm::TokenBucket, u32::MAX, Duration::from_millis(1)).unwrap(),
        Policy::for_algorithm(
            Algorithm::SlidingWindowCounter,
            Policy::max_limit_for(Algorithm::SlidingWindowCounter, week.as_millis() as u64),
            week,
        )
        .unwrap(),
        Policy::for_algorithm(Algorithm::SlidingWindowCounter, (1 << 24) - 1, hour).unwrap(),
        Policy::for_algorithm(Algorithm::FixedWindow, u32::MAX, week).unwrap(),
        Policy::for_algorithm(Algorithm::SlidingWindow, 65_535, week).unwrap(),
        Policy::new(1, Duration::from_millis(1)).unwrap(),
    ];
    for (i, policy) in at_bounds.into_iter().enumerate() {
        let limit = Limit::new(format!("bounds-{i}"), policy);
        let memory = MemoryStore::new();
        let mut now = Duration::from_secs(1_700_000_000);
        for step in [0u64, 0, 1, 999, 3_600_000, 0, 86_400_000, 1] {
            now += Duration::from_millis(step);
            let expected = memory.check_at(&limit, b"k", now);
            let got = rt.block_on(redis.check(&limit, b"k", now));
            assert_eq!(got.unwrap(), expected, "{policy:?} at {now:?}");
        }
    }
}

// ---- many instances, one budget -------------------------------------------------------------

#[rate_limit(100, per = "1m", algorithm = "sliding_window", key = "global")]
async fn sliding() -> HttpResponse {
    HttpResponse::Ok().finish()
}
#[rate_limit(100, per = "1m", algorithm = "fixed_window", key = "global")]
async fn fixed() -> HttpResponse {
    HttpResponse::Ok().finish()
}
#[rate_limit(100, per = "1m", algorithm = "sliding_window_counter", key = "global")]
async fn counter() -> HttpResponse {
    HttpResponse::Ok().finish()
}
#[rate_limit(100, per = "1m", algorithm = "token_bucket", key = "global")]
async fn bucket() -> HttpResponse {
    HttpResponse::Ok().finish()
}

// ---- production controls on Redis ---------------------------------------------------------

#[rate_limit(3, per = "15m", count = "failures", scope = "redis-login")]
async fn redis_login(req: actix_web::HttpRequest) -> HttpResponse {
    // Everyone sent at once is decided before the first answer is known.
    for _ in 0..10 {
        actix_web::rt::task::yield_now().await;
    }
    if req.query_string() == "password=right" {
        HttpResponse::Ok().finish()
    } else {
        HttpResponse::Unauthorized().finish()
    }
}

#[rate_limit(5, per = "1m", cost = 2, scope = "redis-configured")]
async fn redis_configured() -> HttpResponse {
    HttpResponse::Ok().finish()
}

#[rate_limit(2, per = "1m", scope = "redis-both-minute")]
#[rate_limit(2, per = "1h", scope = "redis-both-hour")]
async fn redis_stack() -> HttpResponse {
    HttpResponse::Ok().finish()
}

/// Both limits of a stack reject at once on Redis: `Retry-After` is the longest wait, on
/// either instance, and stays so as the requests repeat.
#[actix_web::test]
async fn a_stack_rejected_by_every_limit_waits_the_longest_on_every_instance() {
    let server = RedisServer::start();
    let clock = ManualClock::starting_at(Duration::from_secs(1_700_000_040));
    let mut apps = Vec::new();
    for _ in 0..2 {
        let limiter = common::redis_instance(&server.url(), &clock).await;
        apps.push(
            test::init_service(
                App::new()
                    .app_data(limiter)
                    .route("/", web::get().to(redis_stack)),
            )
            .await,
        );
    }
    let call = |i: usize| {
        let req = test::TestRequest::get()
            .uri("/")
            .peer_addr("203.0.113.7:1".parse().unwrap())
            .to_request();
        test::call_service(&apps[i], req)
    };
    assert_eq!(call(0).await.status(), 200);
    assert_eq!(call(1).await.status(), 200);
    clock.advance(Duration::from_secs(10));
    server.command(&["CONFIG", "RESETSTAT"]);
    let mut answers = Vec::new();
    for i in [0, 0, 1, 1] {
        let res = call(i).await;
        let retry_after = res
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_string());
        answers.push((res.status().as_u16(), retry_after));
    }
    let longest = (429, Some("3590".to_string()));
    assert_eq!(answers, vec![longest; 4]);
    // (A stack's rejection is not remembered by the instances: each was Redis's.)
    assert_eq!(server.check_calls(), 4);
    clock.advance(Duration::from_secs(50));
    let res = call(0).await;
    assert_eq!(res.status(), 429);
    assert_eq!(res.headers().get("retry-after").unwrap(), "3540");
}

/// Two instances on one Redis: failures only (refunds shared by both, exact under
/// concurrency), cost, configuration changed while serving, and a reset.
#[actix_web::test]
async fn production_controls_hold_across_instances() {
    let server = RedisServer::start();
    let clock = ManualClock::starting_at(Duration::from_secs(1_700_000_040));
    let mut apps = Vec::new();
    let mut limiters = Vec::new();
    for _ in 0..2 {
        let limiter = common::redis_instance(&server.url(), &clock).await;
        limiters.push(limiter.clone());
        apps.push(
            test::init_service(
                App::new()
                    .app_data(limiter)
                    .route("/login", web::get().to(redis_login))
                    .route("/configured", web::get().to(redis_configured)),
            )
            .await,
        );
    }
    let call = |i: usize, uri: &'static str| {
        let req = test::TestRequest::get()
            .uri(uri)
            .peer_addr("203.0.113.7:1".parse().unwrap())
            .to_request();
        test::call_service(&apps[i], req)
    };
    // Successes never use the budget, on either instance.
    for i in 0..10 {
        assert_eq!(call(i % 2, "/login?password=right").await.status(), 200);
    }
    // Twenty wrong passwords at once over both instances: exactly three tries.
    let attempts = (0..20).map(|i| call(i % 2, "/login?password=guess"));
    let statuses: Vec<u16> = futures_util::future::join_all(attempts)
        .await
        .iter()
        .map(|r| r.status().as_u16())
        .collect();
    assert_eq!(count(&statuses, 401), 3, "{statuses:?}");
    assert_eq!(count(&statuses, 429), 17, "{statuses:?}");
    // A reset on one instance unblocks the client on both.
    let client = "203.0.113.7".parse().unwrap();
    limiters[0]
        .reset("redis-login", limiter::Subject::Address(client))
        .await
        .unwrap();
    assert_eq!(call(1, "/login?password=right").await.status(), 200);
    // Cost 2 of 5: two requests, then the third does not fit.
    assert_eq!(call(0, "/configured").await.status(), 200);
    assert_eq!(call(1, "/configured").await.status(), 200);
    assert_eq!(call(0, "/configured").await.status(), 429);
    // Raised on both instances while serving: a new budget of 10, five requests.
    for limiter in &limiters {
        limiter.set_policy(
            "redis-configured",
            Policy::new(10, Duration::from_secs(60)).unwrap(),
        );
    }
    let statuses: Vec<u16> =
        futures_util::future::join_all((0..8).map(|i| call(i % 2, "/configured")))
            .await
            .iter()
            .map(|r| r.status().as_u16())
            .collect();
    assert_eq!(count(&statuses, 200), 5, "{statuses:?}");
}

#[actix_web::test]
async fn two_instances_admit_exactly_100_of_2_x_200_concurrent_requests() {
    let server = RedisServer::start();
    let clock = ManualClock::starting_at(Duration::from_secs(1_700_000_040));
    for path in ["/sliding", "/fixed", "/counter", "/bucket"] {
        let mut apps = Vec::new();
        for _ in 0..2 {
            let limiter = common::redis_instance(&server.url(), &clock).await;
            let app = test::init_service(
                App::new()
                    .app_data(limiter)
                    .route("/sliding", web::get().to(sliding))
                    .route("/fixed", web::get().to(fixed))
                    .route("/counter", web::get().to(counter))
                    .route("/bucket", web::get().to(bucket)),
            )
            .await;
            apps.push(Rc::new(app));
        }
        let mut requests = Vec::new();
        for i in 0..400 {
            let app = Rc::clone(&apps[i % 2]);
            requests.push(tokio::task::spawn_local(async move {
                let req = test::TestRequest::get()
                    .uri(path)
                    .peer_addr("203.0.113.7:4000".parse().unwrap())
                    .to_request();
                test::call_service(&*app, req).await.status().as_u16()
            }));
        }
        let mut admitted = 0;
        for request in requests {
            let status = request.await.unwrap();
            assert!(status == 200 || status == 429, "{path}: {status}");
            admitted += usize::from(status == 200);
        }
        assert_eq!(admitted, 100, "{path}");
    }
}

// ---- faults ---------------------------------------------------------------------------------

#[rate_limit(5, per = "1m")]
async fn login() -> HttpResponse {
    HttpResponse::Ok().finish()
}

/// Sends `n` requests; returns their statuses and the slowest one's time.
async fn burst(limiter: &Limiter, n: usize) -> (Vec<u16>, Duration) {
    let app = test::init_service(
        App::new()
            .app_data(limiter.clone())
            .route("/", web::get().to(login)),
    )
    .await;
    let mut statuses = Vec::new();
    let mut slowest = Duration::ZERO;
    for _ in 0..n {
        let started = Instant::now();
        let req = test::TestRequest::get()
            .uri("/")
            .peer_addr("203.0.113.7:4000".parse().unwrap())
            .to_request();
        statuses.push(test::call_service(&app, req).await.status().as_u16());
        slowest = slowest.max(started.elapsed());
    }
    (statuses, slowest)
}

fn count(statuses: &[u16], status: u16) -> usize {
    statuses.iter().filter(|&&s| s == status).count()
}

const TIMEOUT: Duration = Duration::from_millis(100);
/// Scheduling slack on a shared machine, on top of the timeout.
const SLACK: Duration = Duration::from_millis(400);

#[actix_web::test]
async fn a_killed_redis_gets_the_chosen_policy_for_every_request() {
    for policy in [
        OnStoreError::FallBackToMemory,
        OnStoreError::FailOpen,
        OnStoreError::FailClosed,
    ] {
        let mut server = RedisServer::start();
        let store = RedisStore::connect(&server.url()).await.unwrap();
        let limiter = Limiter::builder()
            .store(store)
            .on_store_error(policy)
            .store_timeout(TIMEOUT)
            .build();
        let (statuses, _) = burst(&limiter, 3).await;
        assert_eq!(statuses, [200, 200, 200], "{policy:?}: Redis counts");
        server.stop();
        let (statuses, slowest) = burst(&limiter, 12).await;
        assert!(
            slowest <= TIMEOUT + SLACK,
            "{policy:?}: a request waited {slowest:?}"
        );
        match policy {
            // A fresh budget in this instance's memory: 5 pass, then 429s.
            OnStoreError::FallBackToMemory => {
                assert_eq!((count(&statuses, 200), count(&statuses, 429)), (5, 7))
            }
            OnStoreError::FailOpen => assert_eq!(count(&statuses, 200), 12),
            OnStoreError::FailClosed => assert_eq!(count(&statuses, 503), 12),
        }
    }
}

#[actix_web::test]
async fn a_restarted_redis_resumes_shared_counting() {
    let mut server = RedisServer::start();
    let clock = ManualClock::starting_at(Duration::from_secs(1_700_000_100));
    let a = common::redis_instance(&server.url(), &clock).await;
    let b = common::redis_instance(&server.url(), &clock).await;
    server.stop();
    // Away: each instance limits alone.
    let (statuses, _) = burst(&a, 6).await;
    assert_eq!(count(&statuses, 200), 5);
    server.restart();
    // Back: each instance notices on its own (its first command on the dead connection
    // fails, a retry interval later it reconnects), then counts in Redis again.
    for limiter in [&a, &b] {
        wait_until_counting_in_redis(&server, limiter).await;
    }
    let (from_a, _) = burst(&a, 3).await;
    let (from_b, _) = burst(&b, 4).await;
    assert_eq!(
        count(&from_a, 200) + count(&from_b, 200),
        5,
        "{from_a:?} {from_b:?}"
    );
}

/// Checks a probe limit until its key shows up in Redis.
async fn wait_until_counting_in_redis(server: &RedisServer, limiter: &Limiter) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let probe = Limit::new(
        "probe",
        Policy::new(1_000, Duration::from_secs(60)).unwrap(),
    );
    loop {
        let before = server.state_keys();
        static PROBES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let key = PROBES
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            .to_be_bytes();
        let _ = limiter.check(&probe, &key).await;
        if server.state_keys() > before {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "counting did not move back to Redis"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[actix_web::test]
async fn a_paused_redis_times_out_within_the_timeout() {
    let server = RedisServer::start();
    let store = RedisStore::connect(&server.url()).await.unwrap();
    let limiter = Limiter::builder()
        .store(store)
        .on_store_error(OnStoreError::FailClosed)
        .store_timeout(TIMEOUT)
        .build();
    assert_eq!(burst(&limiter, 1).await.0, [200]);
    server.pause();
    let (statuses, slowest) = burst(&limiter, 5).await;
    assert_eq!(statuses, [503; 5]);
    assert!(slowest <= TIMEOUT + SLACK, "a request waited {slowest:?}");
    server.resume();
    tokio::time::sleep(limiter::RETRY_INTERVAL + Duration::from_millis(200)).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while burst(&limiter, 1).await.0 != [200] {
        assert!(Instant::now() < deadline, "Redis did not come back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

// ---- scripts, commands, expiry -------------------------------------------------------------

/// A store connected to `server` (on its runtime) and a limit `name` of 1,000 a minute: a
/// long sliding log, whose every check is a call of the check (never a first state's write).
fn a_long_log_on(
    server: &RedisServer,
    name: &'static str,
) -> (tokio::runtime::Runtime, RedisStore, Limit) {
    let rt = runtime();
    let store = rt.block_on(RedisStore::connect(&server.url())).unwrap();
    let policy = Policy::new(1_000, Duration::from_secs(60)).unwrap();
    (rt, store, Limit::new(name, policy))
}

/// A check is one call (`FCALL`: the check's function library, loaded when the store
/// connects); after `FUNCTION FLUSH` (as after a restart) the next check's call finds no
/// function, loads the library once and goes again.
#[::std::prelude::v1::test]
fn one_command_per_check_and_the_library_reloads_after_a_flush() {
    let server = RedisServer::start();
    let (rt, store, limit) = a_long_log_on(&server, "commands");
    let check = |key: &[u8]| {
        rt.block_on(store.check(&limit, key, Duration::ZERO))
            .unwrap()
    };
    check(b"warm-up");
    server.command(&["CONFIG", "RESETSTAT"]);
    for i in 0..50u32 {
        assert!(check(&i.to_be_bytes()).allowed());
    }
    assert_eq!(server.calls("fcall"), 50);
    let loads = || server.calls("function|load") + server.calls("script|load");
    assert_eq!(loads() + server.calls("evalsha") + server.calls("eval"), 0);

    server.command(&["FUNCTION", "FLUSH"]);
    let first = check(b"after flush");
    assert!(first.allowed() && first.remaining() == 999, "{first:?}");
    let second = check(b"after flush");
    assert!(second.allowed() && second.remaining() == 998, "{second:?}");
    assert_eq!(server.calls("function|load"), 1, "reloaded once");
    // The call that found no function, sent again, and the next.
    assert_eq!(server.calls("fcall"), 50 + 3);
    assert_eq!(server.calls("evalsha") + server.calls("eval"), 0);
}

/// A server that refuses functions (an ACL without `FCALL` and `FUNCTION`, as some plans
/// have, or Redis before 7) gets the check as a script (`EVALSHA`), decided the same; after
/// `SCRIPT FLUSH` the next check sends the script's source once, which caches it again.
#[::std::prelude::v1::test]
fn a_server_that_refuses_functions_gets_the_script() {
    let server = RedisServer::start();
    server.command(&["ACL", "SETUSER", "default", "-fcall", "-function"]);
    let (rt, store, limit) = a_long_log_on(&server, "scripts");
    let check = |key: &[u8]| {
        rt.block_on(store.check(&limit, key, Duration::ZERO))
            .unwrap()
    };
    // Three checks of one client through `store`, each counted.
    let three = |store: &RedisStore, key: &[u8]| {
        for i in 0..3 {
            let decision = rt
                .block_on(store.check(&limit, key, Duration::ZERO))
                .unwrap();
            assert!(
                decision.allowed() && decision.remaining() == 999 - i,
                "{decision:?}"
            );
        }
    };
    server.command(&["CONFIG", "RESETSTAT"]);
    three(&store, b"client");
    assert_eq!(server.calls("evalsha"), 3);
    assert_eq!(server.calls("fcall"), 0, "refused once, at the connect");

    server.command(&["SCRIPT", "FLUSH"]);
    assert!(check(b"after flush").allowed());
    assert!(check(b"after flush").allowed());
    assert_eq!(server.calls("eval"), 1, "reloaded once");
    assert_eq!(server.calls("evalsha"), 3 + 2);

    // A store that connects lazily (no load at its start) finds out at its first call.
    let manager = rt
        .block_on(redis::aio::ConnectionManager::new(
            redis::Client::open(server.url()).unwrap(),
        ))
        .unwrap();
    let lazy = RedisStore::from_manager(manager);
    server.command(&["CONFIG", "RESETSTAT"]);
    three(&lazy, b"lazy");
    assert_eq!(server.rejected("fcall"), 1, "refused once");
    assert_eq!(server.calls("evalsha") + server.calls("eval"), 3);
}

/// A server out of memory (`maxmemory` reached, `noeviction`) refuses writes, and a function
/// that may write before it runs, where it runs a script until its first write: a client
/// over its limit is still rejected there (its check writes nothing), not failed; a new
/// client's check, which must write, fails (the fault policy answers it).
#[::std::prelude::v1::test]
fn a_server_out_of_memory_still_rejects_a_flood() {
    still_rejects_a_flood_while(
        "full",
        &[&["maxmemory-policy", "noeviction"], &["maxmemory", "1"]],
        &["maxmemory", "0"],
    );
}

/// A primary told to refuse writes without a replica (`min-replicas-to-write`) refuses a
/// function that may write before it runs, as one out of memory does, with the same
/// outcome.
#[::std::prelude::v1::test]
fn a_primary_without_its_replicas_still_rejects_a_flood() {
    still_rejects_a_flood_while(
        "no-replicas",
        &[&["min-replicas-to-write", "1"]],
        &["min-replicas-to-write", "0"],
    );
}

/// A full Redis is not a Redis that is down: it answers. Its refusals of new clients' first
/// writes get the fault policy one by one, and do not open the breaker, so a client over a
/// stack of limits (which no instance remembers) keeps being rejected by Redis — under
/// `FailOpen` too, where a breaker opened by the refusals let it through.
#[::std::prelude::v1::test]
fn refused_writes_of_a_full_redis_do_not_open_the_limit_for_others() {
    let server = RedisServer::start();
    let rt = runtime();
    let limiter = Limiter::builder()
        .store(rt.block_on(RedisStore::connect(&server.url())).unwrap())
        .on_store_error(OnStoreError::FailOpen)
        .build();
    let minute = Limit::new(
        "full-minute",
        Policy::new(2, Duration::from_secs(60)).unwrap(),
    );
    let hour = Limit::new(
        "full-hour",
        Policy::new(10, Duration::from_secs(3_600)).unwrap(),
    );
    let check = |key: &[u8]| {
        let charges = [Charge::new(&minute, key), Charge::new(&hour, key)];
        rt.block_on(async { limiter.check_all(&charges).await })
    };
    for _ in 0..2 {
        assert!(check(b"flood")
            .unwrap()
            .decisions()
            .iter()
            .all(|d| d.allowed()));
    }
    server.command(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    server.command(&["CONFIG", "SET", "maxmemory", "1"]);
    let mut outcomes = Vec::new();
    for round in 0..10u8 {
        // New clients, more than the failures in a row that show a store down.
        for client in 0..4 {
            let new = check(&[b'n', round, client]);
            assert!(new.is_err(), "a new client's write is refused: {new:?}");
        }
        let flood = check(b"flood");
        outcomes.push(match flood {
            Ok(checked) if !checked.decisions()[0].allowed() => "rejected",
            Ok(_) => "admitted",
            Err(_) => "the fault policy",
        });
    }
    server.command(&["CONFIG", "SET", "maxmemory", "0"]);
    assert_eq!(outcomes, ["rejected"; 10]);
}

/// A call's rejections stay rejections whatever else it carries: on a server that refuses
/// writes — out of memory, short of replicas, after a failed save — a flood over its limit,
/// batched with admissions of existing clients and with new clients, is still rejected;
/// only the admissions (which had to count) fail and meet the fault policy, and nothing of
/// them is counted. Both ways (the library, the script); and under `FailOpen` the flood
/// stays rejected.
#[::std::prelude::v1::test]
fn refused_writes_keep_the_rejections_of_mixed_calls() {
    type Refuse = fn(&RedisServer);
    let cases: [(&str, Refuse, [&str; 2]); 3] = [
        (
            "full",
            |s| {
                s.command(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
                s.command(&["CONFIG", "SET", "maxmemory", "1"]);
            },
            ["maxmemory", "0"],
        ),
        (
            "no-replicas",
            |s| {
                s.command(&["CONFIG", "SET", "min-replicas-to-write", "1"]);
            },
            ["min-replicas-to-write", "0"],
        ),
        (
            "misconf",
            fail_a_save,
            ["stop-writes-on-bgsave-error", "no"],
        ),
    ];
    for (scope, refuse, allow) in cases {
        for (server, way) in both_ways() {
            mixed_flood_while(&server, way, scope, refuse, allow);
        }
    }
}

fn mixed_flood_while(
    server: &RedisServer,
    way: Way,
    scope: &str,
    refuse: fn(&RedisServer),
    [name, value]: [&str; 2],
) {
    let rt = runtime();
    let store = rt.block_on(RedisStore::connect(&server.url())).unwrap();
    let limit = Limit::new(
        format!("{scope}-{way:?}"),
        Policy::new(2, Duration::from_secs(60)).unwrap(),
    );
    let check = |key: &[u8]| rt.block_on(store.check(&limit, key, Duration::ZERO));
    let key = |kind: &str, i: usize| format!("{kind}-{i}").into_bytes();
    for i in 0..10 {
        for _ in 0..2 {
            assert!(check(&key("flood", i)).unwrap().allowed());
        }
    }
    for i in 0..100 {
        assert!(check(&key("client", i)).unwrap().allowed());
    }
    refuse(server);
    // Each flood check between an existing client's admission and a new client's, at once.
    let keys: Vec<Vec<u8>> = (0..100)
        .flat_map(|i| [key("flood", i % 10), key("client", i), key("new", i)])
        .collect();
    let answers = rt.block_on(futures_util::future::join_all(
        keys.iter().map(|k| store.check(&limit, k, Duration::ZERO)),
    ));
    let (mut rejected, mut failed) = (0, 0);
    for (k, answer) in keys.iter().zip(&answers) {
        if k.starts_with(b"flood") {
            let decision = answer.as_ref().unwrap_or_else(|e| {
                panic!("{scope} {way:?}: a rejection met the fault policy: {e}")
            });
            assert!(!decision.allowed(), "{scope} {way:?}: {decision:?}");
            assert!(decision.retry_after().unwrap() > Duration::from_secs(50));
            rejected += 1;
        } else {
            assert!(
                answer.is_err(),
                "{scope} {way:?}: admitted unwritten: {answer:?}"
            );
            failed += 1;
        }
    }
    println!("{scope} {way:?}: {rejected} flood checks rejected, {failed} admissions failed");
    way.was_taken(server);
    // Under FailOpen too: the flood is rejected, the admissions let through uncounted.
    let limiter = Limiter::builder()
        .store(store.clone())
        .on_store_error(OnStoreError::FailOpen)
        .build();
    for i in 0..10 {
        let flood = rt
            .block_on(limiter.check(&limit, &key("flood", i)))
            .unwrap();
        assert!(
            !flood.allowed(),
            "{scope} {way:?} under FailOpen: {flood:?}"
        );
    }
    server.command(&["CONFIG", "SET", name, value]);
    // Nothing the refused calls admitted was counted.
    for i in 0..100 {
        let decision = check(&key("client", i)).unwrap();
        assert!(
            decision.allowed() && decision.remaining() == 0,
            "{scope} {way:?}: {decision:?}"
        );
    }
}

/// A save that failed (its child killed) with saving on: the server refuses writes with
/// `MISCONF` until told otherwise.
fn fail_a_save(server: &RedisServer) {
    server.command(&["CONFIG", "SET", "save", "3600 1"]);
    server.command(&["CONFIG", "SET", "rdb-key-save-delay", "1000000"]);
    server.command(&["BGSAVE"]);
    let pid = server.pid();
    let started = Instant::now();
    let child = loop {
        let children =
            std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
        if let Some(child) = children.split_whitespace().next() {
            break child.to_string();
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "no save started"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    std::process::Command::new("kill")
        .args(["-9", &child])
        .status()
        .unwrap();
    while !server
        .text(&["INFO", "persistence"])
        .contains("rdb_last_bgsave_status:err")
    {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the save did not fail"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    server.command(&["CONFIG", "SET", "rdb-key-save-delay", "0"]);
}

/// A client over its limit is rejected, and a new client's check fails, while the server
/// is configured with `refuse` (`CONFIG SET` pairs); `allow` lets it write again.
fn still_rejects_a_flood_while(scope: &str, refuse: &[&[&str; 2]], allow: &[&str; 2]) {
    let server = RedisServer::start();
    let rt = runtime();
    let store = rt.block_on(RedisStore::connect(&server.url())).unwrap();
    let limit = Limit::new(
        scope.to_string(),
        Policy::new(2, Duration::from_secs(60)).unwrap(),
    );
    let check = |key: &[u8]| rt.block_on(store.check(&limit, key, Duration::ZERO));
    for _ in 0..2 {
        assert!(check(b"flood").unwrap().allowed());
    }
    let config = |[name, value]: &[&str; 2]| server.command(&["CONFIG", "SET", name, value]);
    refuse.iter().for_each(|pair| {
        config(pair);
    });
    for _ in 0..3 {
        let rejected = check(b"flood").unwrap();
        assert!(!rejected.allowed(), "{scope}: {rejected:?}");
        assert!(rejected.retry_after().unwrap() > Duration::from_secs(50));
    }
    let new = check(b"new client");
    assert!(new.is_err(), "{scope}: {new:?}");
    config(allow);
    assert!(check(b"new client").unwrap().allowed());
}

/// Checks that arrive together go out together: 800 concurrent checks of 8 keys (100 each,
/// against 30 a minute, every algorithm in turn) take a fraction of the calls (and at
/// least one per 128 checks, the most a call carries), and each key
/// admits exactly 30, with the remaining counts of a sequence — 29, 28, ... 0 — as if each
/// check had been sent alone, in order.
#[::std::prelude::v1::test]
fn concurrent_checks_are_batched_and_decided_in_order() {
    let server = RedisServer::start();
    let rt = runtime();
    let store = on_callers_clock(&rt, &server);
    for algorithm in Algorithm::ALL {
        let limit = Limit::new(
            format!("batched-{algorithm}"),
            Policy::for_algorithm(algorithm, 30, Duration::from_secs(60)).unwrap(),
        );
        server.command(&["CONFIG", "RESETSTAT"]);
        replays::concurrent_checks_keep_exact_sequences(&rt, &store, &limit, algorithm.name());
        let calls = server.calls("fcall");
        println!("{algorithm}: {calls} calls for 800 checks");
        // A call carries 128 checks at most (the 8 first checks are plain writes).
        assert!(
            (792_u64.div_ceil(128)..=800 / 4).contains(&calls),
            "{algorithm}: {calls} calls for 800 checks"
        );
    }
}

/// A busy client's checks side by side in one call, on the server's clock, are one entry of
/// the call (its key named once, six numbers answering them all: see check.lua) and are
/// decided exactly as one by one: 400 concurrent checks of one key, a few of another key
/// between them, against 40 — every algorithm and a short and a long log, both ways of
/// sending the check. Each key admits exactly 40, with the remaining counts 39, 38, ... 0;
/// the refused wait within the window; and the receipts of 5 admitted checks give back
/// exactly 5 (a run's receipts are each check's own).
#[::std::prelude::v1::test]
fn a_busy_clients_checks_in_one_call_count_as_one_by_one() {
    for (server, way) in both_ways() {
        let rt = runtime();
        let store = rt.block_on(RedisStore::connect(&server.url())).unwrap();
        assert!(store.accept_timeout(Duration::from_secs(10)));
        let hour = Duration::from_secs(3600);
        let policies = [
            ("log", Policy::new(40, hour).unwrap()),
            // A limit past 128 keeps its log as a list: 200, with 160 counted first.
            ("long-log", Policy::new(200, hour).unwrap()),
            (
                "fixed",
                Policy::for_algorithm(Algorithm::FixedWindow, 40, hour).unwrap(),
            ),
            (
                "counter",
                Policy::for_algorithm(Algorithm::SlidingWindowCounter, 40, hour).unwrap(),
            ),
            (
                "bucket",
                Policy::for_algorithm(Algorithm::TokenBucket, 40, hour).unwrap(),
            ),
            (
                "day",
                Policy::per_calendar(40, limiter::Period::Day).unwrap(),
            ),
        ];
        for (name, policy) in policies {
            let limit = Limit::new(format!("run-{name}"), policy);
            let max = policy.max().get();
            // The long log starts 40 short of its limit.
            let before = max - 40;
            for _ in 0..before {
                assert!(rt
                    .block_on(store.check(&limit, b"busy", Duration::ZERO))
                    .unwrap()
                    .allowed());
            }
            let calls_before = server.check_calls();
            let checked: Vec<(&[u8], limiter::Checked)> = rt.block_on(async {
                let tasks: Vec<_> = (0..400u32)
                    .map(|i| {
                        let (store, limit) = (store.clone(), limit.clone());
                        let key: &'static [u8] = if i % 37 == 36 { b"other" } else { b"busy" };
                        tokio::spawn(async move {
                            let charge = [Charge::new(&limit, key)];
                            (key, store.check_all(&charge, Duration::ZERO).await.unwrap())
                        })
                    })
                    .collect();
                let mut checked = Vec::new();
                for task in tasks {
                    checked.push(task.await.unwrap());
                }
                checked
            });
            let calls = server.check_calls() - calls_before;
            println!("{way:?} {name}: 400 checks in {calls} calls");
            assert!(calls < 100, "{way:?} {name}: {calls} calls");
            for (key, limit_left) in [(&b"busy"[..], 40), (&b"other"[..], 10)] {
                let decisions: Vec<&limiter::Decision> = checked
                    .iter()
                    .filter(|(k, _)| *k == key)
                    .map(|(_, c)| &c.decisions()[0])
                    .collect();
                let mut remaining: Vec<u32> = decisions
                    .iter()
                    .filter(|d| d.allowed())
                    .map(|d| d.remaining())
                    .collect();
                remaining.sort_unstable();
                let left = if key == b"busy" {
                    limit_left
                } else {
                    limit_left.min(max)
                };
                let expected: Vec<u32> = match key {
                    b"busy" => (0..left).collect(),
                    // 10 of "other" against the whole limit.
                    _ => (max - left..max).collect(),
                };
                assert_eq!(remaining, expected, "{way:?} {name}, {key:?}");
                for refused in decisions.iter().filter(|d| !d.allowed()) {
                    let wait = refused.retry_after().unwrap();
                    assert!(
                        wait > Duration::ZERO && wait <= Duration::from_secs(86_400),
                        "{way:?} {name}: {wait:?}"
                    );
                }
            }
            // Five admitted checks of the busy key given back by their receipts: exactly
            // five more are admitted.
            let admitted: Vec<&limiter::Checked> = checked
                .iter()
                .filter(|(k, c)| *k == b"busy" && c.decisions()[0].allowed())
                .map(|(_, c)| c)
                .take(5)
                .collect();
            let charge = [Charge::new(&limit, b"busy")];
            for checked in admitted {
                rt.block_on(store.refund(&charge, checked.receipt(), Duration::ZERO))
                    .unwrap();
            }
            let again: usize = (0..8)
                .filter(|_| {
                    rt.block_on(store.check(&limit, b"busy", Duration::ZERO))
                        .unwrap()
                        .allowed()
                })
                .count();
            // A bucket refills a token a 90 s: within the test, none.
            assert_eq!(again, 5, "{way:?} {name}: admitted after 5 refunds");
        }
        way.was_taken(&server);
    }
}

/// Batches decide as the memory store decides the same checks one by one, in order: random
/// A check of no limits, batched with others, answers nothing and fails none of them; a
/// check of more keys than Lua unpacks at once (8,000) reads and counts them all.
#[::std::prelude::v1::test]
fn empty_and_huge_checks_share_calls_with_the_others() {
    let server = RedisServer::start();
    let rt = runtime();
    let redis = rt.block_on(RedisStore::connect(&server.url())).unwrap();
    assert!(redis.accept_timeout(Duration::from_secs(10)));
    let limit = Limit::new("beside", Policy::new(5, Duration::from_secs(60)).unwrap());
    let (empty, one) = rt.block_on(async {
        tokio::join!(
            redis.check_all(&[], Duration::ZERO),
            redis.check(&limit, b"client", Duration::ZERO)
        )
    });
    assert!(empty.unwrap().decisions().is_empty());
    assert!(one.unwrap().allowed());
    let limits: Vec<Limit> = (0..8_100)
        .map(|i| {
            Limit::new(
                format!("many-{i}"),
                Policy::new(1, Duration::from_secs(60)).unwrap(),
            )
        })
        .collect();
    let charges: Vec<Charge<'_>> = limits.iter().map(|l| Charge::new(l, b"client")).collect();
    let first = rt
        .block_on(redis.check_all(&charges, Duration::ZERO))
        .unwrap();
    assert!(first.decisions().iter().all(|d| d.allowed()));
    // Every one of them counted: the next is refused by each.
    let second = rt
        .block_on(redis.check_all(&charges, Duration::ZERO))
        .unwrap();
    assert!(second.decisions().iter().all(|d| !d.allowed()));
    assert_eq!(server.state_keys(), 8_101);
}

/// schedules of costs over few keys, sent in bursts of 1 to 12 checks that go out as one
/// call — so that one call reads a key, counts on it several times, drops instants pushed
/// earlier in the same call, and writes it once.
#[::std::prelude::v1::test]
fn batches_decide_as_the_memory_store_does_one_by_one() {
    for (server, way) in both_ways() {
        let rt = runtime();
        let redis = on_callers_clock(&rt, &server);
        let case = std::cell::Cell::new(0u32);
        let checks = std::cell::Cell::new(0u64);
        for algorithm in Algorithm::ALL {
            let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(30));
            let bursts = prop::collection::vec(1..=12usize, 1..12);
            runner
                .run(
                    &(policy(algorithm), steps(), bursts),
                    |(policy, steps, bursts)| {
                        case.set(case.get() + 1);
                        let limit = Limit::new(format!("batch-{}", case.get()), policy);
                        let memory = MemoryStore::new();
                        let mut now = Duration::from_secs(1_700_000_000);
                        let mut steps = steps.iter().peekable();
                        for size in bursts.iter().cycle() {
                            if steps.peek().is_none() {
                                break;
                            }
                            let burst: Vec<(u8, Duration, u32)> = steps
                                .by_ref()
                                .take(*size)
                                .map(|(key, step)| {
                                    now += Duration::from_millis(*step % 50);
                                    (*key, now, 1 + (*step % 3) as u32)
                                })
                                .collect();
                            checks.set(checks.get() + burst.len() as u64);
                            let expected: Vec<_> = burst
                                .iter()
                                .map(|(key, at, cost)| {
                                    memory.check_all_at(
                                        &[Charge::new(&limit, &[*key]).cost(*cost)],
                                        *at,
                                    )
                                })
                                .collect();
                            let got = rt.block_on(futures_util::future::join_all(
                                burst.iter().map(|(key, at, cost)| {
                                    let charge =
                                        [Charge::new(&limit, std::slice::from_ref(key))
                                            .cost(*cost)];
                                    let redis = &redis;
                                    async move { redis.check_all(&charge, *at).await.unwrap() }
                                }),
                            ));
                            prop_assert_eq!(
                                got,
                                expected,
                                "{} burst ending at {:?}",
                                algorithm,
                                now
                            );
                        }
                        Ok(())
                    },
                )
                .unwrap();
        }
        // They did go out together (proptest's shrinking aside, which only runs on a failure).
        let calls = server.calls("fcall");
        assert!(
            calls * 2 < checks.get(),
            "{calls} calls for {} checks",
            checks.get()
        );
        way.was_taken(&server);
    }
}

/// A check needs no Tokio runtime of its caller's: the store's calls run on its own thread.
/// From a plain thread, with a bare executor, it counts.
#[::std::prelude::v1::test]
fn a_check_from_a_plain_thread_counts() {
    let server = RedisServer::start();
    let rt = runtime();
    let store = rt.block_on(RedisStore::connect(&server.url())).unwrap();
    drop(rt);
    let limit = Limit::new("outside", Policy::new(5, Duration::from_secs(60)).unwrap());
    let decisions: Vec<limiter::Decision> = std::thread::spawn(move || {
        (0..2)
            .map(|_| bare_block_on(store.check(&limit, b"client", Duration::ZERO)).unwrap())
            .collect()
    })
    .join()
    .unwrap();
    assert_eq!(
        decisions
            .iter()
            .map(limiter::Decision::remaining)
            .collect::<Vec<_>>(),
        [4, 3]
    );
}

/// Polls `future` to its end on this thread, parking between polls: an executor that is no
/// Tokio runtime.
fn bare_block_on<F: std::future::Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = std::task::Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park_timeout(Duration::from_millis(100));
    }
}

/// Checks that fail while Redis stalls are answered by the fault policy: those still
/// waiting for their turn when the call in flight times out are failed at once and never
/// sent, so they are not counted a second time when Redis comes back. (The one already in
/// Redis when it stalled does count: on one server a store has one batch in flight.)
#[::std::prelude::v1::test]
fn checks_given_up_while_redis_stalls_are_not_sent_later() {
    let server = RedisServer::start();
    let rt = runtime();
    let store = rt.block_on(RedisStore::connect(&server.url())).unwrap();
    let limit = Limit::new("stalled", Policy::new(6, Duration::from_secs(60)).unwrap());
    // Redis knows the script now: a call it holds runs as soon as it resumes.
    let first = rt.block_on(store.check(&limit, b"client", Duration::ZERO));
    assert_eq!(first.unwrap().remaining(), 5);
    let check = |store: RedisStore, limit: Limit| async move {
        tokio::time::timeout(
            Duration::from_secs(1),
            store.check(&limit, b"client", Duration::ZERO),
        )
        .await
    };
    server.pause();
    let started = std::time::Instant::now();
    rt.block_on(async {
        // One call in flight (one check), then nine checks waiting for a turn.
        let first = tokio::spawn(check(store.clone(), limit.clone()));
        tokio::time::sleep(Duration::from_millis(10)).await;
        let second = tokio::spawn(check(store.clone(), limit.clone()));
        tokio::time::sleep(Duration::from_millis(10)).await;
        let waiting: Vec<_> = (0..8)
            .map(|_| tokio::spawn(check(store.clone(), limit.clone())))
            .collect();
        for task in std::iter::once(first).chain([second]).chain(waiting) {
            // Each failed with its call, within the store's timeout, not the caller's.
            assert!(matches!(task.await.unwrap(), Ok(Err(_))), "failed in time");
        }
    });
    let failed_within = started.elapsed();
    server.resume();
    // Until Redis answers again (it first runs what it held), with a key of its own.
    let probe = Limit::new(
        "stalled-probe",
        Policy::new(100, Duration::from_secs(60)).unwrap(),
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while rt
        .block_on(store.check(&probe, b"probe", Duration::ZERO))
        .is_err()
    {
        assert!(std::time::Instant::now() < deadline, "Redis answers again");
    }
    let admitted = (0..6)
        .filter(|_| {
            rt.block_on(store.check(&limit, b"client", Duration::ZERO))
                .unwrap()
                .allowed()
        })
        .count();
    println!("ten checks failed within {failed_within:?} of a stall; {admitted} of 6 left");
    assert_eq!(admitted, 4);
    assert!(
        failed_within < Duration::from_millis(500),
        "{failed_within:?}"
    );
}

/// An operator's questions — where a client stands, the limits registered — to a stalled
/// Redis fail within the store's timeout, not the connection's (half a second).
#[::std::prelude::v1::test]
fn questions_to_a_stalled_redis_fail_within_the_timeout() {
    let server = RedisServer::start();
    let rt = runtime();
    let store = rt.block_on(RedisStore::connect(&server.url())).unwrap();
    let limit = Limit::new("asked", Policy::new(6, Duration::from_secs(60)).unwrap());
    rt.block_on(store.check(&limit, b"client", Duration::ZERO))
        .unwrap();
    server.pause();
    let started = std::time::Instant::now();
    let bound = Duration::from_secs(5);
    let (status, limits) = rt.block_on(async {
        (
            tokio::time::timeout(bound, store.status(&limit, b"client")).await,
            tokio::time::timeout(bound, store.limits()).await,
        )
    });
    let answered_within = started.elapsed();
    server.resume();
    println!("both questions failed within {answered_within:?} of a stall");
    assert!(matches!(status, Ok(Err(_))), "{status:?}");
    assert!(matches!(limits, Ok(Err(_))), "{limits:?}");
    // Two questions at the store's 50 ms each; the connection's own response timeout (half
    // a second) is what answered them before.
    assert!(
        answered_within < Duration::from_millis(400),
        "{answered_within:?}"
    );
}

/// The store's other calls to a stalled Redis — a refund, a reset, a concurrency slot —
/// fail within the store's timeout and a half (its probe's), as checks do, not the
/// connection's response timeout (half a second) or never.
#[::std::prelude::v1::test]
fn refunds_resets_and_slots_to_a_stalled_redis_fail_within_the_timeout() {
    let server = RedisServer::start();
    let rt = runtime();
    let store = rt.block_on(RedisStore::connect(&server.url())).unwrap();
    let limit = Limit::new(
        "other-calls",
        Policy::new(6, Duration::from_secs(60)).unwrap(),
    );
    let slots = limiter::Concurrency::new("other-calls-slots", 2).unwrap();
    let charge = [Charge::new(&limit, b"client")];
    let checked = rt
        .block_on(store.check_all(&charge, Duration::ZERO))
        .unwrap();
    let receipt = checked.receipt().clone();
    server.pause();
    fails_in_time(
        &rt,
        "a refund",
        store.refund(&charge, &receipt, Duration::ZERO),
    );
    fails_in_time(&rt, "a reset", store.reset(&limit, b"client"));
    fails_in_time(&rt, "a slot", store.acquire(&slots, b"client"));
    server.resume();
}

/// Asserts that `call`, to a stalled Redis, fails within 300 ms: 75 ms at the default
/// 50 ms timeout, generous against a shared machine's noise.
fn fails_in_time<T>(
    rt: &tokio::runtime::Runtime,
    name: &str,
    call: impl std::future::Future<Output = Result<T, limiter::StoreError>>,
) {
    let started = Instant::now();
    let answer = rt.block_on(async { tokio::time::timeout(Duration::from_secs(5), call).await });
    let (failed, took) = (matches!(answer, Ok(Err(_))), started.elapsed());
    println!("{name} to a stalled Redis: failed {failed} after {took:?}");
    assert!(failed, "{name} failed");
    assert!(took < Duration::from_millis(300), "{name}: {took:?}");
}

/// Workers whose threads block right after sending a check (a handler doing blocking I/O)
/// hold up no one: the batches run on the store's own thread, so another worker's checks
/// are answered at once. (With the batches on the first workers' runtimes, they waited
/// until those unblocked.)
#[::std::prelude::v1::test]
fn blocked_workers_stall_no_other_workers_checks() {
    let server = RedisServer::start();
    let main = runtime();
    let store = main.block_on(RedisStore::connect(&server.url())).unwrap();
    let limit = Limit::new(
        "blocked",
        Policy::new(1_000, Duration::from_secs(60)).unwrap(),
    );
    let blocked: Vec<_> = (0..2)
        .map(|_| {
            let (store, limit) = (store.clone(), limit.clone());
            std::thread::spawn(move || {
                let worker = runtime();
                worker.block_on(async {
                    let check = tokio::spawn(async move {
                        store.check(&limit, b"client", Duration::ZERO).await
                    });
                    tokio::task::yield_now().await;
                    // Blocks this worker's only thread, with its check in flight.
                    std::thread::sleep(Duration::from_secs(2));
                    check.await.unwrap().unwrap();
                });
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    let started = std::time::Instant::now();
    for _ in 0..20 {
        let answer = main.block_on(async {
            tokio::time::timeout(
                Duration::from_secs(1),
                store.check(&limit, b"client", Duration::ZERO),
            )
            .await
        });
        assert!(answer.expect("answered within a second").unwrap().allowed());
    }
    println!(
        "20 checks beside two blocked workers: {:?}",
        started.elapsed()
    );
    for thread in blocked {
        thread.join().unwrap();
    }
}

#[::std::prelude::v1::test]
fn every_key_expires_after_its_window() {
    let server = RedisServer::start();
    let rt = runtime();
    let store = rt.block_on(RedisStore::connect(&server.url())).unwrap();
    for algorithm in Algorithm::ALL {
        let policy = Policy::for_algorithm(algorithm, 3, Duration::from_millis(300)).unwrap();
        let limit = Limit::new(format!("expiry-{algorithm}"), policy);
        for i in 0..20u32 {
            rt.block_on(store.check(&limit, &i.to_be_bytes(), Duration::ZERO))
                .unwrap();
        }
    }
    assert_eq!(server.state_keys(), 80);
    // Redis's own clock expires them after two windows at most (the counter's reach); its
    // expiry cycle then removes them within moments.
    std::thread::sleep(Duration::from_millis(600));
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.state_keys() != 0 {
        assert!(Instant::now() < deadline, "keys outlived their windows");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Key names are a stable encoding of (scope, policy) and the client: these literals must
/// never change, or every budget in Redis splits on the deploy that changes them.
#[::std::prelude::v1::test]
fn key_names_are_stable_bounded_and_tagged() {
    let rt = runtime();
    let store = rt
        .block_on(async { RedisStore::connect_lazily("redis://127.0.0.1:1") })
        .unwrap();
    let login = Limit::new(
        "crate::handlers::login",
        Policy::new(5, Duration::from_secs(60)).unwrap(),
    );
    assert_eq!(
        store.key_name(&login, &[b'4', 203, 0, 113, 7]),
        "limiter:{NMsAcQc}keFoa1ta7tU"
    );
    let api = Limit::new(
        "api",
        Policy::for_algorithm(Algorithm::TokenBucket, 100, Duration::from_secs(1))
            .unwrap()
            .with_burst(20)
            .unwrap(),
    );
    assert_eq!(
        store.key_name(&api, &[b'x'; 10_000]),
        "limiter:{-MXN55HFBWz1FYgecByKnstDmnU}ONUrcc7SKmQ"
    );
    // A scope's name is not in the key, however long or odd: its id tells budgets apart.
    let long = Limit::new(
        "{x}".repeat(100),
        Policy::new(5, Duration::from_secs(60)).unwrap(),
    );
    let name = store.key_name(&long, b"k");
    assert_eq!(
        name,
        format!(
            "limiter:{{aw}}{}",
            common::base64url(&long.id().to_be_bytes())
        )
    );
    assert_eq!(name.matches('{').count(), 1, "one hash tag: {name}");
}

/// What the store writes is the documented layout, `PREFIX:{CLIENT}LIMIT`, computed here
/// from its definition: the key's bytes in base64url below 20 bytes, their SHA-1's from 20,
/// then the limit's id's.
#[::std::prelude::v1::test]
fn the_keys_written_follow_the_documented_layout() {
    let server = RedisServer::start();
    let rt = runtime();
    let store = rt.block_on(RedisStore::connect(&server.url())).unwrap();
    let limit = Limit::new("layout", Policy::new(5, Duration::from_secs(60)).unwrap());
    let short = [7u8; 19];
    let long = [7u8; 20];
    for key in [&short[..], &long[..]] {
        rt.block_on(store.check(&limit, key, Duration::ZERO))
            .unwrap();
    }
    let id = common::base64url(&limit.id().to_be_bytes());
    // The states, and the registry of the limits in use (for operators' tools).
    let mut expected = vec![
        "limiter:limits".to_string(),
        format!("limiter:{{{}}}{id}", common::base64url(&short)),
        format!(
            "limiter:{{{}}}{id}",
            common::base64url(&sha1_smol::Sha1::from(&long[..]).digest().bytes())
        ),
    ];
    expected.sort();
    // The registry is written on the store's thread, not waited for.
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    while server.integer(&["EXISTS", "limiter:limits"]) == 0 {
        assert!(std::time::Instant::now() < deadline, "no registry");
        std::thread::sleep(Duration::from_millis(10));
    }
    let written = match server.command(&["KEYS", "limiter:*"]) {
        redis::Value::Array(keys) => {
            let mut names: Vec<String> = keys
                .iter()
                .map(|k| match k {
                    redis::Value::BulkString(b) => String::from_utf8(b.clone()).unwrap(),
                    other => panic!("{other:?}"),
                })
                .collect();
            names.sort();
            names
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(written, expected);
}

// ---- one event per transition -------------------------------------------------------------

/// Counts `tracing` events by level.
#[derive(Default)]
struct Events {
    warnings: std::sync::atomic::AtomicUsize,
    infos: std::sync::atomic::AtomicUsize,
}

struct Counting(std::sync::Arc<Events>);

impl tracing::Subscriber for Counting {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        use std::sync::atomic::Ordering::Relaxed;
        match *event.metadata().level() {
            tracing::Level::WARN => self.0.warnings.fetch_add(1, Relaxed),
            tracing::Level::INFO => self.0.infos.fetch_add(1, Relaxed),
            _ => 0,
        };
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[actix_web::test]
async fn losing_and_regaining_redis_are_one_event_each() {
    use std::sync::atomic::Ordering::Relaxed;
    let events = std::sync::Arc::new(Events::default());
    let _guard = tracing::subscriber::set_default(Counting(events.clone()));
    let mut server = RedisServer::start();
    let clock = ManualClock::starting_at(Duration::from_secs(1_700_000_200));
    let limiter = common::redis_instance(&server.url(), &clock).await;
    burst(&limiter, 3).await;
    server.stop();
    burst(&limiter, 20).await;
    assert_eq!(
        events.warnings.load(Relaxed),
        1,
        "one 'lost' event for 20 requests"
    );
    server.restart();
    wait_until_counting_in_redis(&server, &limiter).await;
    burst(&limiter, 5).await;
    assert_eq!(events.infos.load(Relaxed), 1, "one 'back' event");
    assert_eq!(events.warnings.load(Relaxed), 1);
}

// ---- rejections answered locally --------------------------------------------------------

/// Instances on one Redis, each remembering the rejections Redis decided, answer every
/// request exactly as one in-memory store does: the same decisions on random schedules,
/// requests going to the instances in turn.
#[::std::prelude::v1::test]
fn remembered_rejections_change_no_decision() {
    let server = RedisServer::start();
    let rt = runtime();
    let case = std::cell::Cell::new(0u32);
    for algorithm in Algorithm::ALL {
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(25));
        runner
            .run(
                &(policy(algorithm), steps(), 1..=3usize),
                |(policy, steps, instances)| {
                    case.set(case.get() + 1);
                    let limit = Limit::new(format!("remembered-{}", case.get()), policy);
                    let clock = ManualClock::starting_at(Duration::from_secs(1_700_000_000));
                    let memory = Limiter::builder().clock(clock.clone()).build();
                    let redis: Vec<Limiter> = (0..instances)
                        .map(|_| {
                            let store = on_callers_clock(&rt, &server);
                            Limiter::builder()
                                .store(store)
                                .clock(clock.clone())
                                .store_timeout(Duration::from_secs(2))
                                .build()
                        })
                        .collect();
                    for (i, (key, step)) in steps.iter().enumerate() {
                        clock.advance(Duration::from_millis(*step));
                        let expected = memory
                            .check(&limit, &[*key])
                            .now_or_never()
                            .unwrap()
                            .unwrap();
                        let instance = &redis[i % instances];
                        let got = rt.block_on(instance.check(&limit, &[*key])).unwrap();
                        prop_assert_eq!(got, expected, "{} request {}", algorithm, i);
                    }
                    Ok(())
                },
            )
            .unwrap();
    }
}

/// A one-client flood of 10,000 requests against 5 a minute, over two instances: Redis is
/// asked for the five admissions and once more per instance (and the second instance's first
/// check tries a new client's write first, which finds the first's state).
#[::std::prelude::v1::test]
fn a_flood_from_one_client_is_answered_by_the_instances() {
    let server = RedisServer::start();
    let rt = runtime();
    let clock = ManualClock::starting_at(Duration::from_secs(1_700_000_000));
    let instances: Vec<Limiter> = (0..2)
        .map(|_| {
            let store = on_callers_clock(&rt, &server);
            Limiter::builder().store(store).clock(clock.clone()).build()
        })
        .collect();
    let limit = Limit::new("flood", Policy::new(5, Duration::from_secs(60)).unwrap());
    rt.block_on(instances[0].check(&limit, b"warm-up")).unwrap();
    server.command(&["CONFIG", "RESETSTAT"]);
    let mut admitted = 0;
    for i in 0..10_000 {
        if i % 100 == 0 {
            clock.advance(Duration::from_millis(1));
        }
        let decision = rt
            .block_on(instances[i % 2].check(&limit, b"one client"))
            .unwrap();
        admitted += usize::from(decision.allowed());
        if !decision.allowed() {
            assert!(decision.retry_after().unwrap() <= Duration::from_secs(60));
        }
    }
    assert_eq!(admitted, 5);
    // The first admission is a plain write (see `a_new_clients_first_check_...`).
    assert_eq!(server.calls("fcall"), 5 - 1 + 2);
    // A minute on, both instances ask Redis again: the key is admitted.
    clock.advance(Duration::from_secs(60));
    for instance in &instances {
        assert!(rt
            .block_on(instance.check(&limit, b"one client"))
            .unwrap()
            .allowed());
    }
    assert_eq!(server.calls("fcall"), 5 - 1 + 2 + 2);
}

// ---- the server's clock -------------------------------------------------------------------

/// On Redis's own clock (no caller clock), a schedule in real time gets the decisions the
/// memory store gives the same schedule on a manual clock set to the server's `TIME` before
/// each burst: the bursts take a few ms and the pauses are far from every edge (more than
/// two windows), so scheduling jitter cannot change an answer; waits agree within it.
#[::std::prelude::v1::test]
fn on_the_servers_clock_decisions_equal_the_memory_stores() {
    for (server, way) in both_ways() {
        let rt = runtime();
        let redis = rt.block_on(RedisStore::connect(&server.url())).unwrap();
        let server_time = || server_time(&server);
        let window = Duration::from_millis(200);
        // (requests in a burst, pause after it)
        let schedule = [(5, 450), (2, 0), (1, 450), (4, 450), (3, 0)];
        for algorithm in Algorithm::ALL {
            // A check Redis decides in a later millisecond than the one the memory store was set
            // to (a loaded machine, between reading `TIME` and the script's own reading) may
            // rightly differ — a counter's weight moves every millisecond. Such a run is made
            // again on a new budget, at most three times; a difference without it fails at once.
            let mut straddled = true;
            for attempt in 0..3 {
                if !straddled {
                    break;
                }
                straddled = false;
                let policy = Policy::for_algorithm(algorithm, 3, window).unwrap();
                let limit = Limit::new(format!("server-clock-{algorithm}-{attempt}"), policy);
                let clock = ManualClock::starting_at(server_time());
                let memory = Limiter::builder().clock(clock.clone()).build();
                let mut first = true;
                'run: for &(burst, pause) in &schedule {
                    for i in 0..burst {
                        // In step with the server's clock (and its phase in the counter's
                        // windows) before every check.
                        let before = server_time();
                        clock.advance(before.saturating_sub(limiter::Clock::now(&clock)));
                        let got = rt
                            .block_on(redis.check(&limit, b"client", Duration::ZERO))
                            .unwrap();
                        let same_ms = server_time().as_millis() == before.as_millis();
                        let expected = memory
                            .check(&limit, b"client")
                            .now_or_never()
                            .unwrap()
                            .unwrap();
                        let (a, b) = (got.reset_after(), expected.reset_after());
                        let apart = a.max(b) - a.min(b);
                        let agree = got.allowed() == expected.allowed()
                            && got.remaining() == expected.remaining()
                            && apart <= Duration::from_millis(60);
                        // A new client's first check counts at the store's reading of the
                        // server's clock, up to 12 ms behind it: within that of a window's
                        // start, a counter's aligned windows may differ.
                        let near_edge = std::mem::take(&mut first)
                            && before.as_millis() % window.as_millis() < 12;
                        if !agree && (!same_ms || near_edge) {
                            println!(
                                "{algorithm}: a check crossed a millisecond or an edge; again"
                            );
                            straddled = true;
                            break 'run;
                        }
                        assert_eq!(
                            got.allowed(),
                            expected.allowed(),
                            "{algorithm}, request {i} of a burst"
                        );
                        assert_eq!(got.remaining(), expected.remaining(), "{algorithm}");
                        assert!(
                            apart <= Duration::from_millis(60),
                            "{algorithm}: {a:?} vs {b:?}, request {i} of a burst of {burst} \
                             at {before:?}"
                        );
                    }
                    std::thread::sleep(Duration::from_millis(pause));
                }
            }
            assert!(!straddled, "{algorithm}: three runs crossed a millisecond");
        }
        way.was_taken(&server);
    }
}

/// On Redis's own clock, random schedules of costs and late refunds — a success refunded
/// after later requests — decide as the memory store does, for every algorithm: the
/// receipts Redis writes from its own `TIME` give back exactly what each check counted.
/// Windows of seven days, so that the schedule's real time cannot change an answer (a
/// counter's window edge or a bucket's token is days away); what is compared is what time
/// does not touch: admitted or not, and what remains.
#[::std::prelude::v1::test]
fn on_the_servers_clock_refunds_give_back_what_the_memory_store_does() {
    for (server, way) in both_ways() {
        let rt = runtime();
        let redis = rt.block_on(RedisStore::connect(&server.url())).unwrap();
        let week = Duration::from_secs(7 * 86_400);
        let case = std::cell::Cell::new(0u32);
        for algorithm in Algorithm::ALL {
            let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(24));
            let policies = (1..=6u32, 1..=6u32).prop_map(move |(max, burst)| {
                let policy = Policy::for_algorithm(algorithm, max, week).unwrap();
                if algorithm == Algorithm::TokenBucket {
                    policy.with_burst(burst).unwrap()
                } else {
                    policy
                }
            });
            let steps =
                prop::collection::vec((0..3u8, 1..=3u32, prop::option::of(0..6usize)), 1..40);
            runner
                .run(&(policies, steps), |(policy, steps)| {
                    case.set(case.get() + 1);
                    let limit = Limit::new(format!("server-refund-{}", case.get()), policy);
                    let memory = MemoryStore::new();
                    // A day into a week: no window edge in reach.
                    let mut now = Duration::from_secs(2_800 * 7 * 86_400 + 86_400);
                    // Refunds due after a later step: (step, key, cost, Redis's, memory's).
                    type Due = (usize, [u8; 1], u32, limiter::Receipt, limiter::Receipt);
                    let mut pending: Vec<Due> = Vec::new();
                    for (i, &(key, cost, refund_after)) in steps.iter().enumerate() {
                        now += Duration::from_millis(1);
                        for (_, key, cost, in_redis, in_memory) in
                            pending.extract_if(.., |due| due.0 <= i)
                        {
                            let charge = [Charge::new(&limit, &key).cost(cost)];
                            memory.refund_at(&charge, &in_memory, now);
                            rt.block_on(redis.refund(&charge, &in_redis, now)).unwrap();
                        }
                        let key = [key];
                        let charge = [Charge::new(&limit, &key).cost(cost)];
                        let expected = memory.check_all_at(&charge, now);
                        let got = rt.block_on(redis.check_all(&charge, now)).unwrap();
                        prop_assert_eq!(
                            got[0].allowed(),
                            expected[0].allowed(),
                            "{} step {}",
                            algorithm,
                            i
                        );
                        prop_assert_eq!(
                            got[0].remaining(),
                            expected[0].remaining(),
                            "{} step {}",
                            algorithm,
                            i
                        );
                        prop_assert_eq!(
                            got.receipt().counted_anything(),
                            expected.receipt().counted_anything()
                        );
                        if let (Some(after), true) = (refund_after, got[0].allowed()) {
                            let receipts = (got.receipt().clone(), expected.receipt().clone());
                            pending.push((i + after, key, cost, receipts.0, receipts.1));
                        }
                    }
                    Ok(())
                })
                .unwrap();
        }
        way.was_taken(&server);
    }
}

/// A key lives in Redis as long as its state can still change a decision: right after a
/// write its TTL covers the time until its state no longer counts.
#[::std::prelude::v1::test]
fn keys_survive_as_long_as_their_state_matters() {
    let server = RedisServer::start();
    let rt = runtime();
    let redis = rt.block_on(RedisStore::connect(&server.url())).unwrap();
    let window = Duration::from_secs(60);
    for algorithm in Algorithm::ALL {
        let policy = Policy::for_algorithm(algorithm, 3, window).unwrap();
        let limit = Limit::new(format!("survive-{algorithm}"), policy);
        let name = redis.key_name(&limit, b"client");
        let mut last = None;
        for i in 0..3 {
            if i > 0 {
                // Another writer (an instance of an earlier version, an operator) left the
                // key a shorter expiry than its state needs: the next write makes it enough.
                server.command(&["PEXPIRE", &name, "2000"]);
            }
            last = Some(
                rt.block_on(redis.check(&limit, b"client", Duration::ZERO))
                    .unwrap(),
            );
        }
        let ttl = Duration::from_millis(server.integer(&["PTTL", &name]) as u64);
        // Until then a request is still rejected (the state matters): the key must be there.
        let matters = match algorithm {
            // The counter's requests weigh on the next window too.
            Algorithm::SlidingWindowCounter => window,
            _ => last.unwrap().reset_after(),
        };
        assert!(
            ttl + Duration::from_millis(50) >= matters,
            "{algorithm}: the key expires in {ttl:?}, its state matters for {matters:?}"
        );
        let rejected = rt
            .block_on(redis.check(&limit, b"client", Duration::ZERO))
            .unwrap();
        assert!(!rejected.allowed(), "{algorithm}");
    }
}

/// A full log of 65,535 instants that all leave the window at once is dropped without a
/// scan: the bisection reads a few of them. (Redis's CPU for that one call is printed; the
/// assertion is generous, the difference is three orders of magnitude.)
#[::std::prelude::v1::test]
fn a_full_sliding_log_expires_without_a_scan() {
    let server = RedisServer::start();
    let rt = runtime();
    let redis = on_callers_clock(&rt, &server);
    // Pushing 65,535 instants can take a Redis beside a busy test run more than the default
    // 50 ms: what is measured here is Redis's work, not the timeout.
    assert!(redis.accept_timeout(Duration::from_secs(10)));
    let policy = Policy::new(65_535, Duration::from_secs(60)).unwrap();
    let limit = Limit::new("full-log", policy);
    let start = Duration::from_secs(1_700_000_000);
    // One check of 65,535 units fills the log with as many instants.
    let fill = [Charge::new(&limit, b"client").cost(65_535)];
    assert!(rt.block_on(redis.check_all(&fill, start)).unwrap()[0].allowed());
    server.command(&["CONFIG", "RESETSTAT"]);
    let later = start + Duration::from_secs(61);
    assert!(rt
        .block_on(redis.check(&limit, b"client", later))
        .unwrap()
        .allowed());
    let usec = server.usec_per_call("fcall");
    println!("Redis CPU of the check that dropped 65,535 instants: {usec} µs");
    assert!(usec < 5_000.0, "{usec} µs: the log was scanned");
    // Galloping then bisecting over 65,535 instants: two dozen reads or so, not thousands.
    let reads = server.calls("lindex") + server.calls("lrange");
    assert!(reads <= 40, "{reads} reads of the log");
    // And they are gone from Redis: the log holds the one instant still in its window.
    let name = redis.key_name(&limit, b"client");
    assert_eq!(server.integer(&["LLEN", &name]), 1);
}

// ---- a new client's first check, without the script ----------------------------------------

/// The value of `name`, as bytes (empty when absent).
fn raw_value(server: &RedisServer, name: &str) -> Vec<u8> {
    match server.command(&["GET", name]) {
        redis::Value::BulkString(bytes) => bytes,
        _ => Vec::new(),
    }
}

/// The server's clock (`TIME`).
fn server_time(server: &RedisServer) -> Duration {
    match server.command(&["TIME"]) {
        redis::Value::Array(parts) => {
            let number = |v: &redis::Value| match v {
                redis::Value::BulkString(b) => String::from_utf8_lossy(b).parse::<u64>().unwrap(),
                other => panic!("{other:?}"),
            };
            Duration::from_secs(number(&parts[0])) + Duration::from_micros(number(&parts[1]))
        }
        other => panic!("TIME answered {other:?}"),
    }
}

/// The server's clock, in whole ms.
fn server_ms(server: &RedisServer) -> u64 {
    server_time(server).as_millis() as u64
}

/// A burst of one client's checks on the server's clock goes in few calls, most of them
/// rejected: a call answers a rejected check's repeats from its first answer (a rejection
/// records nothing, and a call's usual checks count at its one reading). Those answers are
/// the ones the checks would get one by one: no unit left, and the wait a check sent
/// alone right after gets, plus the time between (every algorithm).
#[::std::prelude::v1::test]
fn a_burst_of_one_clients_rejections_answers_as_one_by_one() {
    let server = RedisServer::start();
    let rt = runtime();
    let store = rt.block_on(RedisStore::connect(&server.url())).unwrap();
    for algorithm in Algorithm::ALL {
        let policy = Policy::for_algorithm(algorithm, 20, Duration::from_secs(60)).unwrap();
        let limit = Limit::new(format!("busy-{algorithm}"), policy);
        server.command(&["CONFIG", "RESETSTAT"]);
        let started = Instant::now();
        // Every check reaches the store's queue on the first poll, in index order: under
        // Tokio's budget (128 a poll) the rest would be put off and woken last-first,
        // reaching the queue in reverse, so that their place in `burst` would not be the
        // order they were decided in (what made a later one seem to wait longer).
        let burst = rt.block_on(tokio::task::coop::unconstrained(
            futures_util::future::join_all(
                (0..200).map(|_| store.check(&limit, b"busy", Duration::ZERO)),
            ),
        ));
        let burst: Vec<_> = burst.into_iter().map(Result::unwrap).collect();
        let alone = rt
            .block_on(store.check(&limit, b"busy", Duration::ZERO))
            .unwrap();
        let between = started.elapsed() + Duration::from_millis(1);
        let admitted: Vec<u32> = burst
            .iter()
            .filter(|d| d.allowed())
            .map(|d| d.remaining())
            .collect();
        assert_eq!(admitted, (0..20).rev().collect::<Vec<_>>(), "{algorithm}");
        assert!(!alone.allowed(), "{algorithm}");
        let wait = alone.retry_after().unwrap();
        let mut before = Duration::MAX;
        for rejected in burst.iter().filter(|d| !d.allowed()) {
            assert_eq!(rejected.remaining(), 0, "{algorithm}");
            let burst_wait = rejected.retry_after().unwrap();
            assert!(
                wait <= burst_wait && burst_wait <= wait + between,
                "{algorithm}: {burst_wait:?} in the burst, {wait:?} alone, {between:?} later"
            );
            // Queued in index order, decided in order at readings that never go back: never
            // a longer wait than the rejection before it. A stale answer is off by more.
            assert!(
                burst_wait <= before,
                "{algorithm}: {burst_wait:?} after {before:?}"
            );
            before = burst_wait;
        }
        let calls = server.check_calls();
        println!("{algorithm}: 201 checks in {calls} calls; alone, a wait of {wait:?}");
        assert!(calls <= 50, "{algorithm}: {calls}");
    }
}

/// The store's reading of the server's clock is used for 250 ms at most: a new client
/// after a quiet moment goes to the script, whose call brings a new reading, and the next
/// new client is a plain write again. (Real time here: what ages is the reading.)
#[::std::prelude::v1::test]
fn a_reading_of_the_servers_clock_is_used_for_a_quarter_second_at_most() {
    let server = RedisServer::start();
    let rt = runtime();
    let store = rt.block_on(RedisStore::connect(&server.url())).unwrap();
    let limit = Limit::new("aged", Policy::new(3, Duration::from_secs(60)).unwrap());
    // The calls of the script so far (a plain write is none).
    let check = |key: &[u8]| {
        let decision = rt
            .block_on(store.check(&limit, key, Duration::ZERO))
            .unwrap();
        assert!(decision.allowed());
        server.check_calls()
    };
    // A reading is taken only from a call answered within 10 ms: a loaded host may need a
    // few tries to show a new client written with one.
    let written = (0..20u8).any(|i| {
        check(&[b'w', i]);
        let before = server.check_calls();
        check(&[b'f', i]) == before
    });
    if !written {
        println!("no call answered within 10 ms: too busy a host to show a reading's age");
        return;
    }
    std::thread::sleep(Duration::from_millis(300));
    let before = server.check_calls();
    assert_eq!(
        check(b"after a pause"),
        before + 1,
        "a reading 300 ms old: the script"
    );
}

/// A new client's usual check (one limit, one unit) is a plain `SET ... NX PXAT`, no script:
/// its key holds a mark, its reading modulo 8,192 (the counter's: its window's index), and
/// expires at that reading plus the state's lifetime, the reading being the store's estimate
/// of the server's clock (within a few ms of the server's readings before and after). Its
/// next checks go to the script, which reads it back exactly: the state it then writes
/// starts at that very reading, and remaining and status are the memory store's.
#[::std::prelude::v1::test]
fn a_new_clients_first_check_goes_without_the_script() {
    let server = RedisServer::start();
    let rt = runtime();
    let store = rt.block_on(RedisStore::connect(&server.url())).unwrap();
    let window = Duration::from_secs(60);
    for algorithm in Algorithm::ALL {
        let policy = Policy::for_algorithm(algorithm, 3, window).unwrap();
        let limit = Limit::new(format!("first-{algorithm}"), policy);
        // A script call first: the store's reading of the server's clock.
        rt.block_on(store.check(&limit, b"warm-up", Duration::ZERO))
            .unwrap();
        let name = store.key_name(&limit, b"new");
        server.command(&["CONFIG", "RESETSTAT"]);
        let before = server_ms(&server);
        let first = rt
            .block_on(store.check(&limit, b"new", Duration::ZERO))
            .unwrap();
        let after = server_ms(&server);
        assert!(first.allowed(), "{algorithm}");
        assert_eq!(first.remaining(), 2, "{algorithm}");
        assert_eq!(server.check_calls(), 0, "{algorithm}");
        assert_eq!(server.calls("set"), 1, "{algorithm}");
        let mark: u64 = String::from_utf8(raw_value(&server, &name))
            .unwrap()
            .parse()
            .unwrap();
        assert!(mark < 8_192, "{algorithm}: {mark}");
        let expires = server.integer(&["PEXPIRETIME", &name]) as u64;
        // The reading the first check counted at, from its expiry: never ahead of the
        // server's clock, behind it by a round trip at most.
        let at = match algorithm {
            Algorithm::FixedWindow | Algorithm::SlidingWindow => expires - 60_012,
            Algorithm::TokenBucket => expires - 20_013,
            Algorithm::SlidingWindowCounter => {
                let index = (expires - 12) / 60_000 - 2;
                assert_eq!((expires - 12) % 60_000, 0, "{algorithm}: {expires}");
                assert_eq!(mark, index % 8_192, "{algorithm}");
                assert!(index * 60_000 <= after && before < (index + 1) * 60_000 + 15);
                index * 60_000
            }
        };
        if algorithm != Algorithm::SlidingWindowCounter {
            assert!(
                before.saturating_sub(15) <= at && at <= after,
                "{algorithm}: counted at {at}, the server read {before} and {after}"
            );
            assert_eq!(mark, at % 8_192, "{algorithm}");
        }
        // Where the client stands, read by an operator's tool, and its next checks: one
        // unit counted.
        let status = rt.block_on(store.status(&limit, b"new")).unwrap();
        assert_eq!(status.remaining(), 2, "{algorithm}: status");
        for expected_remaining in [1, 0] {
            let next = rt
                .block_on(store.check(&limit, b"new", Duration::ZERO))
                .unwrap();
            assert!(next.allowed(), "{algorithm}");
            assert_eq!(next.remaining(), expected_remaining, "{algorithm}");
            if expected_remaining == 1 {
                // The script read the mark as the first check's own state: what it wrote
                // still starts at that reading.
                let raw = raw_value(&server, &name);
                let be = |bytes: &[u8]| bytes.iter().fold(0u64, |n, &b| (n << 8) | u64::from(b));
                let kept = match algorithm {
                    Algorithm::SlidingWindowCounter => be(&raw[..6]) * 60_000,
                    Algorithm::TokenBucket => be(&raw[..6]) - 40_000,
                    _ => be(&raw[..6]),
                };
                assert_eq!(kept, at, "{algorithm}: {raw:?}");
            }
        }
        let refused = rt
            .block_on(store.check(&limit, b"new", Duration::ZERO))
            .unwrap();
        assert!(!refused.allowed(), "{algorithm}");
        assert!(server.check_calls() >= 1, "{algorithm}");
    }
}

/// A TCP proxy to `upstream` (a port on loopback) that rewrites every `from` the client
/// sends into `to`, of the same length: a server that answers some command otherwise.
/// Returns its port; it runs on threads of its own until the test ends.
fn rewriting_proxy(upstream: u16, from: &'static [u8], to: &'static [u8]) -> u16 {
    use std::io::{Read, Write};
    assert_eq!(from.len(), to.len());
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { return };
            let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", upstream)) else {
                return;
            };
            let _ = (client.set_nodelay(true), server.set_nodelay(true));
            let (mut down_from, mut down_to) =
                (server.try_clone().unwrap(), client.try_clone().unwrap());
            std::thread::spawn(move || std::io::copy(&mut down_from, &mut down_to));
            let (mut up_from, mut up_to) = (client, server);
            std::thread::spawn(move || {
                let mut pending: Vec<u8> = Vec::new();
                let mut buf = [0u8; 16 * 1024];
                loop {
                    let n = match up_from.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    pending.extend_from_slice(&buf[..n]);
                    let mut i = 0;
                    while i + from.len() <= pending.len() {
                        if &pending[i..i + from.len()] == from {
                            pending[i..i + from.len()].copy_from_slice(to);
                            i += from.len();
                        } else {
                            i += 1;
                        }
                    }
                    // A tail that may be the start of `from` waits for the rest (a command's
                    // end never is: `from` starts an argument).
                    let held = (1..from.len())
                        .rev()
                        .find(|&k| k <= pending.len() && pending.ends_with(&from[..k]))
                        .unwrap_or(0);
                    let ready = pending.len() - held;
                    if up_to.write_all(&pending[..ready]).is_err() {
                        return;
                    }
                    pending.drain(..ready);
                }
            });
        }
    });
    port
}

/// A server without `SET ... PXAT` (Redis before 6.2; here a proxy turns the option into
/// an unknown one, which such a server answers alike): the first new client's write is
/// refused as a syntax error, its check goes to the script (counted, no error), and from
/// then on new clients' first checks are written as packed states (`SET ... NX PX`),
/// still without the script.
#[::std::prelude::v1::test]
fn a_server_without_pxat_gets_packed_first_states() {
    let server = RedisServer::start();
    let port = rewriting_proxy(server.port(), b"$4\r\nPXAT\r\n", b"$4\r\nPXAY\r\n");
    let rt = runtime();
    let store = rt
        .block_on(RedisStore::connect(&format!("redis://127.0.0.1:{port}")))
        .unwrap();
    let policy = Policy::for_algorithm(Algorithm::FixedWindow, 3, Duration::from_secs(60)).unwrap();
    let limit = Limit::new("no-pxat", policy);
    // A script call first: the store's reading of the server's clock.
    rt.block_on(store.check(&limit, b"warm-up", Duration::ZERO))
        .unwrap();
    server.command(&["CONFIG", "RESETSTAT"]);
    let first = rt
        .block_on(store.check(&limit, b"first", Duration::ZERO))
        .unwrap();
    assert!(first.allowed() && first.remaining() == 2, "{first:?}");
    // The marked write, refused, and the script's own (`SET`s in a script count too).
    assert_eq!(server.calls("set"), 2);
    assert_eq!(server.calls("fcall"), 1, "then the script");
    assert_eq!(
        raw_value(&server, &store.key_name(&limit, b"first")).len(),
        10
    );
    for (i, client) in [&b"second"[..], b"third"].into_iter().enumerate() {
        let next = rt
            .block_on(store.check(&limit, client, Duration::ZERO))
            .unwrap();
        assert!(next.allowed() && next.remaining() == 2, "{next:?}");
        assert_eq!(server.calls("set"), 3 + i as u64, "a packed first state");
        assert_eq!(server.calls("fcall"), 1, "no script");
        let state = raw_value(&server, &store.key_name(&limit, client));
        assert_eq!(state.len(), 10, "packed: {state:?}");
    }
    let status = rt.block_on(store.status(&limit, b"second")).unwrap();
    assert_eq!(status.remaining(), 2);
}

/// A check's answer, or the store's error.
type Outcome = Result<limiter::Decision, limiter::StoreError>;

/// Checks of `keys` that share one batch: the server is stopped while a first batch (a new
/// client, `ahead`) is in flight, so that they all wait for the next. Ahead's outcome, then
/// each one's, in order.
fn behind_a_stall(
    rt: &tokio::runtime::Runtime,
    server: &RedisServer,
    store: &RedisStore,
    limit: &Limit,
    ahead: &[u8],
    keys: &[Vec<u8>],
) -> (Outcome, Vec<Outcome>) {
    server.pause();
    rt.block_on(async {
        let check = |key: Vec<u8>| {
            let (store, limit) = (store.clone(), limit.clone());
            tokio::spawn(async move { store.check(&limit, &key, Duration::ZERO).await })
        };
        let ahead = check(ahead.to_vec());
        tokio::time::sleep(Duration::from_millis(20)).await;
        let checks: Vec<_> = keys.iter().cloned().map(check).collect();
        tokio::time::sleep(Duration::from_millis(20)).await;
        server.resume();
        let mut outcomes = Vec::new();
        for check in checks {
            outcomes.push(check.await.unwrap());
        }
        (ahead.await.unwrap(), outcomes)
    })
}

/// 20 new clients, "n" and a number.
fn new_clients() -> Vec<Vec<u8>> {
    (0..20u8).map(|i| vec![b'n', i]).collect()
}

/// A store whose reading of the server's clock is fresh, and a returning client counted
/// three times (a few script calls, in case a busy host slows one round trip past what a
/// reading may take).
fn with_a_returning_client(
    server: &RedisServer,
    rt: &tokio::runtime::Runtime,
    name: &'static str,
) -> (RedisStore, Limit) {
    let store = rt.block_on(RedisStore::connect(&server.url())).unwrap();
    // A busy host may hold the stopped server's first batch past the usual 50 ms.
    assert!(store.accept_timeout(Duration::from_secs(2)));
    let limit = Limit::new(
        name,
        Policy::for_algorithm(Algorithm::FixedWindow, 10, Duration::from_secs(60)).unwrap(),
    );
    for _ in 0..3 {
        rt.block_on(store.check(&limit, b"returning", Duration::ZERO))
            .unwrap();
    }
    (store, limit)
}

/// A batch of new clients' first checks and of a returning client's check is one round
/// trip: the script for the returning client goes in the pipeline of the plain writes (it
/// touches none of their keys). Counted by Redis's reads of the store's connection: the
/// server is stopped while a first batch is in flight, so that the returning client and 20
/// new ones share the next; one read for each batch.
#[::std::prelude::v1::test]
fn a_returning_client_shares_the_round_trip_of_new_clients_writes() {
    let server = RedisServer::start();
    let rt = runtime();
    let (store, limit) = with_a_returning_client(&server, &rt, "along");
    // Reset and read on one connection of the test's, held open (a connection closing is a
    // read too, counted whenever Redis gets to it): the `INFO` is the one read of its own.
    let mut counter = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let reads = |counter: &mut redis::Connection| -> i64 {
        let info: String = redis::cmd("INFO").arg("stats").query(counter).unwrap();
        info.lines()
            .find_map(|line| line.strip_prefix("total_reads_processed:"))
            .map(|n| n.trim().parse().unwrap())
            .unwrap()
    };
    let () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut counter)
        .unwrap();
    let mut keys = vec![b"returning".to_vec()];
    keys.extend(new_clients());
    let (ahead, outcomes) = behind_a_stall(&rt, &server, &store, &limit, b"ahead", &keys);
    let ahead = ahead.unwrap();
    let mut outcomes = outcomes.into_iter().map(Result::unwrap);
    let returning = outcomes.next().unwrap();
    let new: Vec<_> = outcomes.collect();
    assert!(ahead.allowed() && ahead.remaining() == 9);
    assert!(
        returning.allowed() && returning.remaining() == 6,
        "{returning:?}"
    );
    assert!(new.iter().all(|d| d.allowed() && d.remaining() == 9));
    let reads = reads(&mut counter) - 1;
    assert_eq!(reads, 2, "the store's reads: one for each batch");
    assert_eq!(server.calls("fcall"), 1);
    // 21 plain writes, and the script's own write of the returning client's state.
    assert_eq!(server.calls("set"), 22);
}

/// A batch whose new clients' first checks were decided as plain writes keeps their answers
/// when its script call then fails: those checks were counted, and an error for them would
/// send innocent clients to the fault policy. Here the script is refused by an ACL
/// (`-fcall -evalsha -eval`), and the server is stopped while a first batch is in flight, so that
/// a returning client's check and 20 new clients' wait together for the next one: the new
/// clients are admitted (their states are in Redis), the returning client gets the error.
/// The same when the script refused is the second call, after a pipeline of writes alone.
#[::std::prelude::v1::test]
fn a_failed_script_call_keeps_the_first_checks_decided_before_it() {
    let server = RedisServer::start();
    let rt = runtime();
    let (store, limit) = with_a_returning_client(&server, &rt, "kept");
    // A fresh reading of the server's clock (scripts allowed for it), then scripts refused.
    let refuse_scripts = || {
        server.command(&["ACL", "SETUSER", "default", "+fcall", "+evalsha", "+eval"]);
        for _ in 0..3 {
            rt.block_on(store.check(&limit, b"warm", Duration::ZERO))
                .unwrap();
        }
        server.command(&["ACL", "SETUSER", "default", "-fcall", "-evalsha", "-eval"]);
    };
    refuse_scripts();
    let mut keys = vec![b"returning".to_vec()];
    keys.extend(new_clients());
    let (ahead, mut outcomes) = behind_a_stall(&rt, &server, &store, &limit, b"ahead", &keys);
    assert!(ahead.unwrap().allowed());
    let returning = outcomes.remove(0);
    assert!(returning.is_err(), "the script was refused: {returning:?}");
    for (i, outcome) in outcomes.into_iter().enumerate() {
        let decision = outcome.unwrap_or_else(|e| panic!("new client {i}: {e}"));
        assert!(
            decision.allowed() && decision.remaining() == 9,
            "new client {i}"
        );
        let name = store.key_name(&limit, &[b'n', i as u8]);
        assert_eq!(server.integer(&["EXISTS", &name]), 1, "new client {i}");
    }
    // And a second call refused after a pipeline of writes alone: a new client's second
    // check in the batch waits behind its first, which keeps its answer.
    let mut keys = vec![b"twice".to_vec()];
    keys.extend(new_clients().into_iter().map(|mut key| {
        key[0] = b'm';
        key
    }));
    keys.push(b"twice".to_vec());
    refuse_scripts();
    let (_, mut outcomes) = behind_a_stall(&rt, &server, &store, &limit, b"ahead again", &keys);
    let again = outcomes.pop().unwrap();
    assert!(
        again.is_err(),
        "the second check's script was refused: {again:?}"
    );
    for (i, outcome) in outcomes.into_iter().enumerate() {
        let decision = outcome.unwrap_or_else(|e| panic!("check {i}: {e}"));
        assert!(decision.allowed() && decision.remaining() == 9, "check {i}");
    }
    // The returning client's call and the second check's reached Redis and were refused
    // (by the ACL): the first as the library's function (in the pipeline, and alone), then
    // as the script (functions refused); the second as the script.
    let (functions, scripts) = (server.rejected("fcall"), server.rejected("evalsha"));
    assert!(functions >= 1 && scripts == 2, "{functions} {scripts}");
}

/// A first check's receipt gives back exactly its unit, alone or after a later check of the
/// script.
#[::std::prelude::v1::test]
fn a_first_check_without_the_script_is_refunded_exactly() {
    let server = RedisServer::start();
    let rt = runtime();
    let store = rt.block_on(RedisStore::connect(&server.url())).unwrap();
    let window = Duration::from_secs(60);
    for algorithm in Algorithm::ALL {
        let policy = Policy::for_algorithm(algorithm, 3, window).unwrap();
        let limit = Limit::new(format!("first-refund-{algorithm}"), policy);
        for later in [false, true] {
            let key: &[u8] = if later { b"later" } else { b"alone" };
            let charge = [Charge::new(&limit, key)];
            // A script call first: the store's reading of the server's clock.
            rt.block_on(store.check(&limit, b"warm-up", Duration::ZERO))
                .unwrap();
            server.command(&["CONFIG", "RESETSTAT"]);
            let first = rt
                .block_on(store.check_all(&charge, Duration::ZERO))
                .unwrap();
            assert!(first.receipt().counted_anything(), "{algorithm}");
            assert_eq!(server.check_calls(), 0, "{algorithm}: by the script");
            if later {
                let second = rt
                    .block_on(store.check_all(&charge, Duration::ZERO))
                    .unwrap();
                assert_eq!(second[0].remaining(), 1, "{algorithm}");
            }
            rt.block_on(store.refund(&charge, first.receipt(), Duration::ZERO))
                .unwrap();
            let status = rt.block_on(store.status(&limit, key)).unwrap();
            let expected = if later { 2 } else { 3 };
            assert_eq!(status.remaining(), expected, "{algorithm}, later: {later}");
        }
    }
}

/// Two instances meet at a new client: the second finds the first's state (`NX` writes
/// nothing) and asks the script. 400 concurrent checks of 100 new clients over two stores,
/// each client 2 a minute: exactly 200 admitted, 2 per client.
#[::std::prelude::v1::test]
fn two_instances_count_new_clients_exactly() {
    let server = RedisServer::start();
    let rt = runtime();
    let a = rt.block_on(RedisStore::connect(&server.url())).unwrap();
    let b = rt.block_on(RedisStore::connect(&server.url())).unwrap();
    for algorithm in Algorithm::ALL {
        let policy = Policy::for_algorithm(algorithm, 2, Duration::from_secs(60)).unwrap();
        let limit = Limit::new(format!("two-first-{algorithm}"), policy);
        server.command(&["CONFIG", "RESETSTAT"]);
        let admitted: Vec<bool> = rt.block_on(async {
            let checks = (0..400u32).map(|i| {
                let store = if i % 2 == 0 { a.clone() } else { b.clone() };
                let limit = limit.clone();
                async move {
                    let key = (i % 100).to_be_bytes();
                    store
                        .check(&limit, &key, Duration::ZERO)
                        .await
                        .unwrap()
                        .allowed()
                }
            });
            futures_util::future::join_all(checks).await
        });
        let per_client = (0..100)
            .map(|c| (0..4).filter(|k| admitted[c + 100 * k]).count())
            .collect::<Vec<_>>();
        assert!(
            per_client.iter().all(|&n| n == 2),
            "{algorithm}: {per_client:?}"
        );
        println!(
            "{algorithm}: 200 of 400 admitted; {} transactions, {} script calls",
            server.calls("exec"),
            server.check_calls()
        );
    }
}
