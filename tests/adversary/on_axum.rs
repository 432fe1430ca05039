//! The attacks again, against the axum front end (limiter-axum's attribute and its
//! `RateLimitLayer`), over real loopback HTTP: a thousand concurrent requests over two
//! instances on one Redis on a busy host, spoofed forwarding headers, floods of chosen and
//! of distinct keys, slow and chunked bodies on a rejected request, and Redis killed and
//! slowed under it; a thousand requests at once on a handler's concurrency slots, and
//! clients that reset their connections in the middle of its answers.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Extension, Router};
use limiter::RedisStore;
use limiter_axum::{concurrency_limit, rate_limit, Limiter, OnStoreError, Policy, RateLimitLayer};

use crate::bodies::{chunked_body_on, slow_body_on};
use crate::common::redis_server::RedisServer;
use crate::harness::{client, exchange, get as request, rss, Proxy};
use crate::load::{burst_at, count, Busy};
use crate::slots::{self, Running, Tracker, BIG, HOLD, SLOTS};

/// A login that always fails: every admitted request stays counted.
#[rate_limit(5, per = "1m", count = "failures", scope = "axum-burst-login")]
async fn login() -> StatusCode {
    StatusCode::UNAUTHORIZED
}

/// Five an hour per client, by the address the limiter settles on.
#[rate_limit(5, per = "1h", scope = "axum-spoof")]
async fn spoofed() -> &'static str {
    "ok"
}

/// One an hour; its body is read only when admitted.
#[rate_limit(1, per = "1h", scope = "axum-bodies")]
async fn upload(body: axum::body::Bytes) -> String {
    format!("{} bytes", body.len())
}

#[rate_limit(60_000, per = "1m", scope = "axum-faults-open")]
async fn open() -> &'static str {
    "ok"
}

async fn unlimited() -> StatusCode {
    StatusCode::UNAUTHORIZED
}

/// Eight slots everybody shares, held 50 ms: the actix suite's `hold`.
#[concurrency_limit(8, key = "global", scope = "axum-adversary-slots")]
async fn hold(Extension(tracker): Extension<Arc<Tracker>>) -> &'static str {
    let _running = Running::enter(&tracker);
    tokio::time::sleep(HOLD).await;
    "held"
}

/// Two at once, answering four megabytes: a client can go in the middle of it.
#[concurrency_limit(2, key = "global", scope = "axum-adversary-slots-big")]
async fn big() -> Vec<u8> {
    tokio::time::sleep(Duration::from_millis(20)).await;
    vec![b'x'; BIG]
}

fn routes() -> Router {
    let layered = Policy::new(5, Duration::from_secs(60)).unwrap();
    Router::new()
        .route("/login", get(login))
        .route("/spoof", get(spoofed))
        .route("/upload", post(upload))
        .route("/open", get(open))
        .route("/hold", get(hold))
        .route("/big", get(big))
        .route(
            "/layer/login",
            get(unlimited).route_layer(RateLimitLayer::new(layered).scope("axum-burst-layer")),
        )
}

/// An axum server on a loopback port of its own, on a runtime of `workers` threads,
/// serving [`routes`] under `limiter`. Stopped (its connections dropped) when dropped.
struct AxumServer {
    addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
}

impl AxumServer {
    fn start(limiter: Limiter, workers: usize) -> AxumServer {
        AxumServer::counting(limiter, workers, Arc::default())
    }

    /// [`start`](Self::start), counting `/hold`'s handlers in `tracker`.
    fn counting(limiter: Limiter, workers: usize, tracker: Arc<Tracker>) -> AxumServer {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .enable_all()
            .build()
            .expect("a runtime");
        let listener = runtime.block_on(async {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
            // A thousand connections at once must not overflow the listening queue.
            socket.listen(4_096).unwrap()
        });
        let addr = listener.local_addr().unwrap();
        let app = routes()
            .layer(Extension(tracker))
            .layer(Extension(limiter))
            .into_make_service_with_connect_info::<SocketAddr>();
        runtime.spawn(async move { axum::serve(listener, app).await });
        AxumServer {
            addr,
            runtime: Some(runtime),
        }
    }
}

impl Drop for AxumServer {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

fn on_redis(
    rt: &tokio::runtime::Runtime,
    url: &str,
    prefix: &str,
    policy: OnStoreError,
) -> Limiter {
    let store = rt
        .block_on(RedisStore::connect(url))
        .unwrap()
        .with_prefix(prefix);
    Limiter::builder()
        .store(store)
        .on_store_error(policy)
        .build()
}

/// A thousand concurrent failed logins of one client over two axum instances on one
/// Redis, under each fault policy, on an idle host and on a busy one, through the
/// attribute and through the layer: exactly 5 admitted (401), 995 refused (429), nothing
/// else.
#[test]
fn axum_a_burst_of_a_thousand_over_two_instances_admits_exactly_the_limit() {
    let _alone = crate::harness::alone();
    let redis = RedisServer::start();
    redis.prioritize();
    let rt = client();
    for policy in [OnStoreError::FallBackToMemory, OnStoreError::FailClosed] {
        for path in ["/login", "/layer/login"] {
            for (busy, round) in [(false, 0), (true, 1)] {
                let prefix = format!("axum-burst-{policy:?}-{round}");
                let one = AxumServer::start(on_redis(&rt, &redis.url(), &prefix, policy), 2);
                let two = AxumServer::start(on_redis(&rt, &redis.url(), &prefix, policy), 2);
                let load = busy.then(|| Busy::start(4));
                let (statuses, slowest) = rt.block_on(burst_at(&[one.addr, two.addr], path, 1_000));
                drop(load);
                let (admitted, rejected) = (count(&statuses, 401), count(&statuses, 429));
                println!(
                    "axum {path} {policy:?}{}: 1,000 concurrent over two instances: {admitted} \
                     admitted of 5, {rejected} rejected, {} other; slowest {slowest:?}",
                    if busy { ", busy host" } else { "" },
                    1_000 - admitted - rejected
                );
                assert_eq!(admitted, 5, "{path} {policy:?} busy={busy}: {statuses:?}");
                assert_eq!(rejected, 995, "{path} {policy:?} busy={busy}");
            }
        }
    }
}

/// Forwarding headers the client wrote itself. With no trusted proxy, none of them moves
/// the key: 300 requests each naming a new address in `X-Forwarded-For`, `Forwarded` or
/// `X-Real-IP` are one client, 5 admitted. Behind a trusted proxy (loopback), a client
/// that prepends made-up entries is still the rightmost untrusted one: 5 admitted again.
#[test]
fn axum_spoofed_forwarding_headers_do_not_move_the_key() {
    let rt = client();
    let direct = AxumServer::start(Limiter::builder().build(), 2);
    let proxied = AxumServer::start(Limiter::builder().trusted_proxies(["127.0.0.1"]).build(), 2);
    rt.block_on(async {
        let mut statuses = Vec::new();
        for i in 0..300u32 {
            let fake = format!("198.51.{}.{}", i / 256, i % 256);
            let header = match i % 3 {
                0 => format!("X-Forwarded-For: {fake}"),
                1 => format!("Forwarded: for={fake}"),
                _ => format!("X-Real-IP: {fake}"),
            };
            let response = exchange(direct.addr, &request("/spoof", &[header]), Duration::from_secs(5)).await;
            statuses.push(response.map_or(0, |r| r.status));
        }
        println!(
            "axum, no trusted proxy: 300 requests with made-up forwarding headers: {} admitted of 5",
            count(&statuses, 200)
        );
        assert_eq!(count(&statuses, 200), 5, "{statuses:?}");
        assert_eq!(count(&statuses, 429), 295);

        let mut statuses = Vec::new();
        for i in 0..300u32 {
            // What the client wrote, then what the trusted proxy appended: the client.
            let header = format!(
                "X-Forwarded-For: 10.{}.{}.1, 192.0.2.{}, 203.0.113.9",
                i % 256,
                i / 256,
                i % 200
            );
            let response = exchange(proxied.addr, &request("/spoof", &[header]), Duration::from_secs(5)).await;
            statuses.push(response.map_or(0, |r| r.status));
        }
        println!(
            "axum, behind a trusted proxy: 300 requests with made-up leftmost entries: {} admitted of 5",
            count(&statuses, 200)
        );
        assert_eq!(count(&statuses, 200), 5, "{statuses:?}");
    });
}

/// A flood of 20,000 distinct clients (each named by the trusted proxy) after one client
/// spent its 5: every new client is admitted, the spent one is still refused, and the store
/// holds them in under 64 bytes each (28 today). (The process's resident memory is printed, not
/// held to a bound: the binary's other tests run beside this one, and their allocations
/// moved it from 0 to 31 MiB.)
#[test]
fn axum_a_flood_of_distinct_clients_lifts_no_one_and_stays_bounded() {
    let _alone = crate::harness::alone();
    let rt = client();
    let store = limiter::MemoryStore::new();
    let limiter = Limiter::builder()
        .store(store.clone())
        .trusted_proxies(["127.0.0.1"])
        .build();
    let server = AxumServer::start(limiter, 2);
    let victim = || request("/spoof", &["X-Forwarded-For: 203.0.113.200".to_string()]);
    rt.block_on(async {
        for _ in 0..5 {
            let r = exchange(server.addr, &victim(), Duration::from_secs(5))
                .await
                .unwrap();
            assert_eq!(r.status, 200);
        }
        let before = rss();
        let started = Instant::now();
        let mut admitted = 0usize;
        for batch in 0..40u32 {
            let tasks: Vec<_> = (0..500u32)
                .map(|i| {
                    let n = batch * 500 + i;
                    let raw = request(
                        "/spoof",
                        &[format!(
                            "X-Forwarded-For: 10.{}.{}.{}",
                            n >> 16,
                            (n >> 8) & 255,
                            n & 255
                        )],
                    );
                    let addr = server.addr;
                    tokio::spawn(async move {
                        exchange(addr, &raw, Duration::from_secs(10))
                            .await
                            .map_or(0, |r| r.status)
                    })
                })
                .collect();
            for task in tasks {
                admitted += usize::from(task.await.unwrap() == 200);
            }
        }
        let grown = rss().saturating_sub(before);
        let spent = exchange(server.addr, &victim(), Duration::from_secs(5))
            .await
            .unwrap();
        let per_key = store.bytes() / store.len().max(1);
        println!(
            "axum: 20,000 distinct clients in {:?}: {admitted} admitted; the spent client then \
             got {}; the store holds {} keys in {} bytes ({per_key} a key); RSS grew {} KiB \
             (the test's client and the tests beside it included)",
            started.elapsed(),
            spent.status,
            store.len(),
            store.bytes(),
            grown / 1024
        );
        assert_eq!(admitted, 20_000);
        assert_eq!(spent.status, 429);
        assert!(store.len() > 20_000, "{} keys", store.len());
        assert!(per_key < 64, "{per_key} bytes a key");
    });
}

/// A spent client's upload whose `Content-Length: 16000` body comes at 5 bytes a second:
/// the 429 comes at once (decided before the body's extractor), and the connection is
/// closed after it rather than held for the body. Then a chunked body of 10 MB at about
/// 1.3 MB/s: its 429, the connection held under 3 s, under 4 MiB of it taken in. (The
/// actix suite's attacks, `bodies::slow_body_on` and `bodies::chunked_body_on`.)
#[test]
fn axum_slow_and_chunked_bodies_on_a_refused_request_hold_nothing() {
    let rt = client();
    let server = AxumServer::start(Limiter::builder().build(), 2);
    let first = rt
        .block_on(exchange(
            server.addr,
            b"POST /upload HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi",
            Duration::from_secs(5),
        ))
        .unwrap();
    assert_eq!((first.status, first.body.as_str()), (200, "2 bytes"));
    slow_body_on(server.addr, &rt, "/upload", "");
    chunked_body_on(server.addr, &rt, "/upload");
}

/// `n` requests for `path` one after the other: their statuses and the slowest one's time.
async fn sequence(addr: SocketAddr, path: &str, n: usize) -> (Vec<u16>, Duration) {
    let mut statuses = Vec::with_capacity(n);
    let mut slowest = Duration::ZERO;
    for _ in 0..n {
        let sent = Instant::now();
        let status = exchange(addr, &request(path, &[]), Duration::from_secs(10))
            .await
            .map_or(0, |r| r.status);
        slowest = slowest.max(sent.elapsed());
        statuses.push(status);
    }
    (statuses, slowest)
}

/// An axum instance failing closed, its store reaching Redis through a proxy: slowed past
/// the timeout, then killed, every request gets the documented 503 within about one and a
/// half timeouts; counting in Redis resumes on its own once Redis is back.
#[test]
fn axum_redis_faults_cost_at_most_a_timeout_and_recover() {
    let _alone = crate::harness::alone();
    let mut redis = RedisServer::start();
    let proxy = Proxy::start(redis.port());
    let rt = client();
    let server = AxumServer::start(
        on_redis(&rt, &proxy.url(), "axum-faults", OnStoreError::FailClosed),
        2,
    );
    let bounded = Duration::from_millis(400);
    let recovery = |what: &str| {
        let started = Instant::now();
        loop {
            let (statuses, _) = rt.block_on(sequence(server.addr, "/open", 1));
            if statuses == [200] {
                println!(
                    "axum: {what}: counting in Redis again after {:?}",
                    started.elapsed()
                );
                return started.elapsed();
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{what}: no recovery in 10 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let (statuses, slowest) = rt.block_on(sequence(server.addr, "/open", 20));
    println!(
        "axum, healthy: {} of 20 answered 200, slowest {slowest:?}",
        count(&statuses, 200)
    );
    assert_eq!(count(&statuses, 200), 20);

    proxy.delay(Duration::from_millis(300));
    let (statuses, slowest) = rt.block_on(sequence(server.addr, "/open", 20));
    println!(
        "axum, Redis 300 ms slow: {} of 20 answered 503, slowest {slowest:?}",
        count(&statuses, 503)
    );
    assert_eq!(count(&statuses, 503), 20, "{statuses:?}");
    assert!(slowest < bounded, "{slowest:?}");
    proxy.delay(Duration::ZERO);
    assert!(recovery("latency removed") < Duration::from_secs(1));

    redis.stop();
    let (statuses, slowest) = rt.block_on(sequence(server.addr, "/open", 20));
    println!(
        "axum, Redis killed: {} of 20 answered 503, slowest {slowest:?}",
        count(&statuses, 503)
    );
    assert_eq!(count(&statuses, 503), 20, "{statuses:?}");
    assert!(slowest < bounded, "{slowest:?}");
    redis.restart();
    assert!(recovery("restarted") < Duration::from_secs(2));
}

/// A thousand requests at once (sent within 300 ms, each on its own connection) on an axum
/// handler of eight slots held 50 ms each: every one answered (200, or 429 with
/// `Retry-After: 1`), never more than eight running, and every slot free afterwards. In
/// memory on one instance, and on two instances sharing one Redis.
#[test]
fn axum_a_thousand_requests_at_once_never_run_more_than_the_slots() {
    let rt = client();
    let redis = RedisServer::start();
    let over_redis = || {
        let store = rt.block_on(RedisStore::connect(&redis.url())).unwrap();
        Limiter::builder().store(store).build()
    };
    let setups = [
        ("memory, one instance", Arc::new(Tracker::default()), 1),
        ("Redis, two instances", Arc::new(Tracker::default()), 2),
    ];
    for (setup, tracker, instances) in setups {
        let servers: Vec<AxumServer> = (0..instances)
            .map(|_| {
                let limiter = match instances {
                    1 => Limiter::builder().build(),
                    _ => over_redis(),
                };
                AxumServer::counting(limiter, 2, Arc::clone(&tracker))
            })
            .collect();
        let addrs: Vec<SocketAddr> = servers.iter().map(|s| s.addr).collect();
        let (statuses, took) = rt.block_on(slots::storm(&addrs, 1_000, Duration::from_millis(300)));
        let (admitted, refused) = (count(&statuses, 200), count(&statuses, 429));
        println!(
            "axum, {setup}: 1,000 requests at once on {SLOTS} slots: {admitted} admitted, \
             {refused} refused, at most {} running at once, all answered in {took:?}",
            tracker.most()
        );
        assert_eq!(admitted + refused, 1_000, "{setup}: every request answered");
        assert!(admitted >= SLOTS, "{setup}: the slots were used");
        assert!(
            tracker.most() <= SLOTS,
            "{setup}: {} at once",
            tracker.most()
        );
        let free = rt.block_on(slots::all_free(&addrs, Duration::from_secs(5)));
        println!("axum, {setup}: every slot free again after {free:?}");
        assert!(free.is_some(), "{setup}: a slot leaked");
    }
}

/// Two hundred clients resetting their connections in the middle of an axum handler's
/// four-megabyte answers (and before them, while it runs) on a route of two slots:
/// afterwards both slots are free, in memory and on Redis.
#[test]
fn axum_clients_that_reset_mid_answer_give_their_slots_back() {
    let rt = client();
    let redis = RedisServer::start();
    let store = rt.block_on(RedisStore::connect(&redis.url())).unwrap();
    let setups = [
        ("memory", AxumServer::start(Limiter::builder().build(), 2)),
        (
            "Redis",
            AxumServer::start(Limiter::builder().store(store).build(), 2),
        ),
    ];
    for (setup, server) in &setups {
        let (mid_answer, before) = rt.block_on(slots::resets(server.addr, 200));
        let free = rt.block_on(slots::both_big_free(server.addr));
        println!(
            "axum, {setup}: {mid_answer} resets in the middle of an answer and {before} \
             before it; both slots free again after {free:?}"
        );
        assert!(
            mid_answer > 50,
            "{setup}: the answers were cut ({mid_answer})"
        );
        assert!(free.is_some(), "{setup}: a reset kept a slot");
    }
}
