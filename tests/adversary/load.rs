//! §3 of the attacks: load is not an outage. Bursts of a thousand concurrent requests over
//! two instances on one healthy Redis, under each fault policy and on a busy host: exactly
//! the limit is admitted, nothing fails open or closed.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::{web, HttpResponse};
use limiter::{rate_limit, Limit, Limiter, OnStoreError, Policy, RedisStore};

use crate::common::redis_server::RedisServer;
use crate::harness::{client, exchange, get, Server};

/// A login that always fails: every admitted request stays counted (no rejection is
/// remembered for a scope that counts failures, so every check goes to Redis).
#[rate_limit(5, per = "1m", count = "failures", scope = "burst-login")]
async fn login() -> HttpResponse {
    HttpResponse::Unauthorized().finish()
}

fn routes(config: &mut web::ServiceConfig) {
    config.route("/login", web::get().to(login));
}

/// Keeps both cores busy while it lives: a busy host.
pub(crate) struct Busy(Arc<AtomicBool>, Vec<std::thread::JoinHandle<()>>);

impl Busy {
    pub(crate) fn start(threads: usize) -> Busy {
        let stop = Arc::new(AtomicBool::new(false));
        let handles = (0..threads)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let deadline = Instant::now() + Duration::from_secs(60);
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                        x = std::hint::black_box(
                            x.wrapping_mul(6364136223846793005).wrapping_add(1),
                        );
                    }
                })
            })
            .collect();
        Busy(stop, handles)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
        for handle in self.1.drain(..) {
            let _ = handle.join();
        }
    }
}

/// `n` concurrent requests for `path`, spread over `servers`; their statuses and the
/// slowest one's time.
pub(crate) async fn burst(servers: &[&Server], path: &str, n: usize) -> (Vec<u16>, Duration) {
    let addrs: Vec<SocketAddr> = servers.iter().map(|server| server.addr).collect();
    burst_at(&addrs, path, n).await
}

/// [`burst`] over the servers at `addrs`, whatever their framework.
pub(crate) async fn burst_at(addrs: &[SocketAddr], path: &str, n: usize) -> (Vec<u16>, Duration) {
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let addr = addrs[i % addrs.len()];
            let raw = get(path, &[]);
            tokio::spawn(async move {
                let sent = Instant::now();
                let status = exchange(addr, &raw, Duration::from_secs(30))
                    .await
                    .map_or(0, |r| r.status);
                (status, sent.elapsed())
            })
        })
        .collect();
    let mut statuses = Vec::with_capacity(n);
    let mut slowest = Duration::ZERO;
    for task in tasks {
        let (status, took) = task.await.unwrap();
        statuses.push(status);
        slowest = slowest.max(took);
    }
    (statuses, slowest)
}

pub(crate) fn count(statuses: &[u16], status: u16) -> usize {
    statuses.iter().filter(|&&s| s == status).count()
}

/// A thousand concurrent failed logins of one client over two instances, under each fault
/// policy, on an idle host and three times on a busy one: exactly 5 are admitted (answered
/// 401), every other one gets 429; no 503, no request let through unlimited. (With the store's timeout counting the time
/// checks waited in the batch queue, up to 15 of 5 were admitted under FallBackToMemory,
/// up to 505 under FailOpen, and hundreds got 503 under FailClosed.)
#[test]
fn a_burst_of_a_thousand_is_never_mistaken_for_an_outage() {
    let _alone = crate::harness::alone();
    let redis = RedisServer::start();
    // The busy host is the limiter's; Redis keeps its share of the CPU, as on a host of its
    // own (starved by the spinning threads, a Redis answers late whatever the limiter does).
    redis.prioritize();
    let rt = client();
    for policy in [
        OnStoreError::FallBackToMemory,
        OnStoreError::FailOpen,
        OnStoreError::FailClosed,
    ] {
        for (busy, round) in [(false, 0), (true, 1), (true, 2), (true, 3)] {
            let instance = |prefix: &str| {
                let store = rt
                    .block_on(RedisStore::connect(&redis.url()))
                    .unwrap()
                    .with_prefix(prefix);
                let limiter = Limiter::builder()
                    .store(store)
                    .on_store_error(policy)
                    .build();
                Server::start(limiter, 2, routes)
            };
            let prefix = format!("burst-{policy:?}-{round}");
            let (one, two) = (instance(&prefix), instance(&prefix));
            // Twice as many spinning threads as cores.
            let load = busy.then(|| Busy::start(4));
            let (statuses, slowest) = rt.block_on(burst(&[&one, &two], "/login", 1_000));
            drop(load);
            let (admitted, rejected) = (count(&statuses, 401), count(&statuses, 429));
            println!(
                "{policy:?}{}: 1,000 concurrent over two instances: {admitted} admitted of 5, \
                 {rejected} rejected, {} other; slowest {slowest:?}",
                if busy { ", busy host" } else { "" },
                1_000 - admitted - rejected
            );
            assert_eq!(admitted, 5, "{policy:?} busy={busy}: {statuses:?}");
            assert_eq!(rejected, 995, "{policy:?} busy={busy}");
        }
    }
}

/// Every connection the store makes to Redis sends a call as soon as it is written. With
/// Nagle's algorithm (redis's default), a batch written in two segments held its second
/// until Redis's delayed acknowledgement, 40 ms later: the burst above then failed calls
/// to a healthy Redis on a busy host (22 of them let through under FailOpen, in CI).
#[test]
fn the_stores_connections_send_each_call_at_once() {
    let _alone = crate::harness::alone();
    let redis = RedisServer::start();
    let rt = client();
    let limiter = |store: RedisStore| Limiter::builder().store(store).build();
    let made = [
        (
            "connect",
            rt.block_on(RedisStore::connect(&redis.url())).unwrap(),
        ),
        (
            "connect_lazily",
            RedisStore::connect_lazily(&redis.url()).unwrap(),
        ),
        (
            "from_client",
            rt.block_on(RedisStore::from_client(
                redis::Client::open(redis.url()).unwrap(),
            ))
            .unwrap(),
        ),
    ];
    for (how, store) in made {
        let limiter = limiter(store);
        // A check makes the lazy connection; each store holds its own.
        let limit = Limit::new("nodelay", Policy::new(5, Duration::from_secs(60)).unwrap());
        let decision = rt.block_on(async { limiter.check(&limit, b"one").await });
        assert!(decision.unwrap().allowed(), "{how}");
        let sockets = crate::common::sockets_to(redis.port());
        println!("{how}: sockets to Redis, TCP_NODELAY: {sockets:?}");
        assert!(!sockets.is_empty(), "{how}: no socket to Redis");
        assert!(sockets.iter().all(|&on| on), "{how}: {sockets:?}");
        drop(limiter);
    }
}

/// Ten thousand checks at once, of as many clients, on a Redis 20 ms away: more than the
/// store's queue holds (4,096 waiting). A check that finds it full waits for room; waiting
/// is load, never timed, so every check is decided by Redis — none fails, none is let
/// through by the fault policy — and each client's one request is admitted.
#[test]
fn ten_thousand_checks_at_once_all_wait_their_turn() {
    let _alone = crate::harness::alone();
    let redis = RedisServer::start();
    let proxy = crate::harness::Proxy::start(redis.port());
    let rt = client();
    // What is measured is the queue, not the timeout: a busy host's calls get room.
    let limiter = Limiter::builder()
        .store(rt.block_on(RedisStore::connect(&proxy.url())).unwrap())
        .store_timeout(Duration::from_millis(500))
        .on_store_error(OnStoreError::FailClosed)
        .build();
    let limit = Limit::new("queue", Policy::new(1, Duration::from_secs(60)).unwrap());
    proxy.delay(Duration::from_millis(20));
    let started = Instant::now();
    let (admitted, failed) = rt.block_on(async {
        let checks: Vec<_> = (0..10_000u32)
            .map(|client| {
                let (limiter, limit) = (limiter.clone(), limit.clone());
                tokio::spawn(async move { limiter.check(&limit, &client.to_be_bytes()).await })
            })
            .collect();
        let (mut admitted, mut failed) = (0, 0);
        for check in checks {
            match check.await.unwrap() {
                Ok(decision) => admitted += usize::from(decision.allowed()),
                Err(_) => failed += 1,
            }
        }
        (admitted, failed)
    });
    let took = started.elapsed();
    println!(
        "10,000 checks at once, Redis 20 ms away: {admitted} admitted, {failed} failed, in \
         {took:?}; Redis holds {} keys",
        redis.state_keys()
    );
    assert_eq!((admitted, failed), (10_000, 0));
    assert_eq!(redis.state_keys(), 10_000);
}

/// A check whose caller went away while it waited for its turn — a request dropped (its
/// client hung up, a proxy in front timed it out) — is not sent: Redis counts only what
/// someone waits for. Twenty checks queue behind one in flight on a Redis 150 ms away, and
/// are dropped before their turn: the key counts the one in flight only.
#[test]
fn a_check_whose_caller_went_away_is_not_sent() {
    let _alone = crate::harness::alone();
    let redis = RedisServer::start();
    let proxy = crate::harness::Proxy::start(redis.port());
    let rt = client();
    let store = rt.block_on(RedisStore::connect(&proxy.url())).unwrap();
    // The call in flight is slow, not failed: a timeout past its round trip.
    assert!(limiter::Store::accept_timeout(
        &store,
        Duration::from_secs(1)
    ));
    let limit = Limit::new("gone", Policy::new(100, Duration::from_secs(60)).unwrap());
    let check = |store: RedisStore, limit: Limit| async move {
        limiter::Store::check(&store, &limit, b"client", Duration::ZERO).await
    };
    let warm = rt.block_on(check(store.clone(), limit.clone())).unwrap();
    assert_eq!(warm.remaining(), 99);
    // Long enough for the twenty to queue and be dropped while it is out, on a busy host.
    proxy.delay(Duration::from_millis(150));
    let in_flight = rt.block_on(async {
        let in_flight = tokio::spawn(check(store.clone(), limit.clone()));
        tokio::time::sleep(Duration::from_millis(10)).await;
        let waiting: Vec<_> = (0..20)
            .map(|_| tokio::spawn(check(store.clone(), limit.clone())))
            .collect();
        tokio::time::sleep(Duration::from_millis(10)).await;
        for check in &waiting {
            check.abort();
        }
        in_flight.await.unwrap()
    });
    assert!(in_flight.unwrap().allowed());
    proxy.delay(Duration::ZERO);
    let after = rt.block_on(check(store.clone(), limit.clone())).unwrap();
    println!(
        "20 checks dropped while they waited: the key has {} of 100 left (97 if none was sent)",
        after.remaining()
    );
    assert_eq!(after.remaining(), 97);
}
