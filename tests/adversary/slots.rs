//! §6 of the attacks: concurrency slots under pressure. A thousand requests at once on a
//! route of eight slots, on one instance in memory and on two instances sharing Redis;
//! Redis slowed and killed while slots are taken and renewed; clients that reset their
//! connection in the middle of the answer. Every slot must come back, and no more requests
//! may run at once than the limit allows where the store can count them.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::{web, HttpResponse};
use limiter::{concurrency_limit, Limiter, RedisStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::redis_server::RedisServer;
use crate::harness::{client, exchange, Proxy, Server};

/// The slots of [`hold`]: everybody shares them.
pub(crate) const SLOTS: usize = 8;
/// How long [`hold`]'s handler runs: a storm of a few hundred milliseconds sees the
/// slots taken and given back several times.
pub(crate) const HOLD: Duration = Duration::from_millis(50);
/// The body [`big`] answers with: long enough to be cut in the middle.
pub(crate) const BIG: usize = 4 << 20;

/// How many handlers run at once, the most that ever did, and how many ran.
#[derive(Default)]
pub(crate) struct Tracker {
    now: AtomicUsize,
    most: AtomicUsize,
    ran: AtomicUsize,
}

impl Tracker {
    pub(crate) fn most(&self) -> usize {
        self.most.load(Ordering::SeqCst)
    }
}

/// One handler running, counted while it lives.
pub(crate) struct Running<'a>(&'a Tracker);

impl<'a> Running<'a> {
    pub(crate) fn enter(tracker: &'a Tracker) -> Running<'a> {
        let now = tracker.now.fetch_add(1, Ordering::SeqCst) + 1;
        tracker.most.fetch_max(now, Ordering::SeqCst);
        tracker.ran.fetch_add(1, Ordering::SeqCst);
        Running(tracker)
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::SeqCst);
    }
}

#[concurrency_limit(8, key = "global", scope = "adversary-slots")]
async fn hold(tracker: web::Data<Tracker>) -> HttpResponse {
    let _running = Running::enter(&tracker);
    tokio::time::sleep(HOLD).await;
    HttpResponse::Ok().body("held")
}

/// [`hold`]'s slots, held for three seconds: long enough for leases to be renewed, lost
/// with Redis's data, and renewed again.
#[concurrency_limit(8, key = "global", scope = "adversary-slots")]
async fn long(tracker: web::Data<Tracker>) -> HttpResponse {
    let _running = Running::enter(&tracker);
    tokio::time::sleep(Duration::from_secs(3)).await;
    HttpResponse::Ok().body("held long")
}

/// Two at once, answering four megabytes: a client can go in the middle of it.
#[concurrency_limit(2, key = "global", scope = "adversary-slots-big")]
async fn big() -> HttpResponse {
    tokio::time::sleep(Duration::from_millis(20)).await;
    HttpResponse::Ok().body(vec![b'x'; BIG])
}

/// A server of [`hold`] and [`big`] under `limiter`, counting [`hold`]'s handlers in
/// `tracker` (shared by the instances of one test).
fn serve(limiter: Limiter, tracker: &Arc<Tracker>) -> Server {
    let tracker = web::Data::from(Arc::clone(tracker));
    Server::start(limiter, 2, move |config| {
        config
            .app_data(tracker.clone())
            .route("/hold", web::get().to(hold))
            .route("/long", web::get().to(long))
            .route("/big", web::get().to(big));
    })
}

/// A limiter over Redis at `url`, slots leased for `lease`.
fn over_redis(rt: &tokio::runtime::Runtime, url: &str, lease: Duration) -> Limiter {
    let store = rt.block_on(RedisStore::connect(url)).unwrap().lease(lease);
    Limiter::builder().store(store).build()
}

/// [`over_redis`], failing closed: a request whose slot Redis could not be asked for is
/// answered 503, so that every 200 is a slot Redis gave.
fn failing_closed_over_redis(rt: &tokio::runtime::Runtime, url: &str, lease: Duration) -> Limiter {
    let store = rt.block_on(RedisStore::connect(url)).unwrap().lease(lease);
    Limiter::builder()
        .store(store)
        .on_store_error(limiter::OnStoreError::FailClosed)
        .build()
}

/// `n` requests to `/hold` at once, spread over `servers`: the statuses (0: no answer within
/// 20 s) and how long the last answer took.
pub(crate) async fn at_once(servers: &[SocketAddr], n: usize) -> (Vec<u16>, Duration) {
    storm(servers, n, Duration::ZERO).await
}

/// [`at_once`], the `n` requests sent over `spread` (evenly), each on a connection of its
/// own: most in flight together.
pub(crate) async fn storm(
    servers: &[SocketAddr],
    n: usize,
    spread: Duration,
) -> (Vec<u16>, Duration) {
    let started = Instant::now();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let addr = servers[i % servers.len()];
            let after = spread.mul_f64(i as f64 / n as f64);
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                let request = b"GET /hold HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
                exchange(addr, request, Duration::from_secs(20))
                    .await
                    .map_or(0, |r| {
                        if r.status == 429 {
                            assert_eq!(r.header("retry-after"), Some("1"), "{}", r.head);
                        }
                        r.status
                    })
            })
        })
        .collect();
    let mut statuses = Vec::with_capacity(n);
    for task in tasks {
        statuses.push(task.await.unwrap());
    }
    (statuses, started.elapsed())
}

pub(crate) fn count(statuses: &[u16], status: u16) -> usize {
    statuses.iter().filter(|&&s| s == status).count()
}

/// Every slot free again: [`SLOTS`] requests at once, spread over `servers`, all admitted
/// — tried for up to `within` (slots come back as the last answers are sent).
pub(crate) async fn all_free(servers: &[SocketAddr], within: Duration) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < within {
        let (statuses, _) = at_once(servers, SLOTS).await;
        if count(&statuses, 200) == SLOTS {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// A thousand requests at once (sent within 300 ms, each on its own connection) on a route
/// of eight slots held 50 ms each: every one answered (200 or 429 with `Retry-After: 1`),
/// never more than eight handlers running while the slots are taken and given back over and
/// over, and afterwards every slot free. In memory on one instance, and on two instances sharing one Redis, where the
/// eight are the fleet's.
#[test]
fn a_thousand_requests_at_once_never_run_more_than_the_slots() {
    let rt = client();
    let redis = RedisServer::start();
    let alone = Arc::new(Tracker::default());
    let shared = Arc::new(Tracker::default());
    let setups = [
        (
            "memory, one instance",
            Arc::clone(&alone),
            vec![serve(Limiter::builder().build(), &alone)],
        ),
        (
            "Redis, two instances",
            Arc::clone(&shared),
            (0..2)
                .map(|_| {
                    serve(
                        over_redis(&rt, &redis.url(), Duration::from_secs(30)),
                        &shared,
                    )
                })
                .collect(),
        ),
    ];
    for (setup, tracker, servers) in &setups {
        let servers: Vec<SocketAddr> = servers.iter().map(|s| s.addr).collect();
        let (statuses, took) = rt.block_on(storm(&servers, 1_000, Duration::from_millis(300)));
        let (admitted, refused) = (count(&statuses, 200), count(&statuses, 429));
        println!(
            "{setup}: 1,000 requests at once on {SLOTS} slots: {admitted} admitted, {refused} \
             refused, at most {} running at once, all answered in {took:?}",
            tracker.most()
        );
        assert_eq!(admitted + refused, 1_000, "{setup}: every request answered");
        assert!(admitted >= SLOTS, "{setup}: the slots were used");
        assert!(
            tracker.most() <= SLOTS,
            "{setup}: {} at once",
            tracker.most()
        );
        let free = rt.block_on(all_free(&servers, Duration::from_secs(5)));
        println!("{setup}: every slot free again after {free:?}");
        assert!(free.is_some(), "{setup}: a slot leaked");
    }
}

/// Redis slowed past the store's timeout while requests take slots, then killed (its data
/// lost) and started again while slots are held and renewed: the fault policy's memory
/// keeps the limit on this instance while Redis is slow (never more than eight running),
/// the requests still running take back the slots Redis lost at their next renewal, nothing
/// leaks, and the route admits eight at once again without a restart of the service.
/// (Before, a renewal of a lost lease gave up: 8 of 20 others ran beside the eight.)
#[test]
fn redis_slowed_or_killed_while_slots_are_taken_and_renewed_leaks_none() {
    let rt = client();
    let mut redis = RedisServer::start();
    let proxy = Proxy::start(redis.port());
    let tracker = Arc::new(Tracker::default());
    // A lease of 600 ms, renewed every 200: a hold of a second renews it during the fault.
    let server = serve(
        over_redis(&rt, &proxy.url(), Duration::from_millis(600)),
        &tracker,
    );
    let servers = [server.addr];
    assert!(rt
        .block_on(all_free(&servers, Duration::from_secs(5)))
        .is_some());

    // Slowed: every answer 200 ms late, four times the store's timeout.
    proxy.delay(Duration::from_millis(200));
    let (statuses, took) = rt.block_on(storm(&servers, 200, Duration::from_millis(300)));
    proxy.delay(Duration::ZERO);
    println!(
        "Redis slowed: 200 requests at once: {} admitted, {} refused, at most {} running, in \
         {took:?}",
        count(&statuses, 200),
        count(&statuses, 429),
        tracker.most()
    );
    assert_eq!(count(&statuses, 200) + count(&statuses, 429), 200);
    assert!(tracker.most() <= SLOTS, "{} at once", tracker.most());
    let free = rt.block_on(all_free(&servers, Duration::from_secs(5)));
    println!("Redis slowed: every slot free again after {free:?}");
    assert!(free.is_some(), "a slot taken while Redis was slow leaked");

    // Killed while eight hold their slots (each renewing its lease), and back empty; on an
    // instance failing closed, so that every admission is a slot Redis gave.
    let closed = serve(
        failing_closed_over_redis(&rt, &redis.url(), Duration::from_millis(600)),
        &tracker,
    );
    let addr = closed.addr;
    let long: Vec<_> = (0..SLOTS)
        .map(|_| {
            rt.spawn(async move {
                let request = b"GET /long HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
                exchange(addr, request, Duration::from_secs(20))
                    .await
                    .map_or(0, |r| r.status)
            })
        })
        .collect();
    // Their slots taken and a renewal or two made, Redis is killed; it is back, empty,
    // before they end.
    std::thread::sleep(Duration::from_millis(300));
    redis.stop();
    std::thread::sleep(Duration::from_millis(400));
    redis.restart();
    // Redis back, but empty: the eight still running take their slots again at their next
    // renewal (every 200 ms here). Three renewals later, others find no slot free.
    std::thread::sleep(Duration::from_millis(600));
    let (during, _) = rt.block_on(at_once(&[closed.addr], 20));
    let held: Vec<u16> = long.into_iter().map(|t| rt.block_on(t).unwrap()).collect();
    println!(
        "Redis killed while {SLOTS} slots were held, back empty: they ended {held:?}; of 20 \
         others 600 ms after its return, {} admitted; at most {} running at once",
        count(&during, 200),
        tracker.most()
    );
    assert_eq!(held, [200; SLOTS]);
    assert_eq!(
        count(&during, 200),
        0,
        "the slots Redis lost were not taken back"
    );
    let free = rt.block_on(all_free(&servers, Duration::from_secs(10)));
    println!("Redis killed and back: every slot free again after {free:?}");
    assert!(free.is_some(), "a slot held while Redis was killed leaked");
    assert!(tracker.most() <= SLOTS, "{} at once", tracker.most());
}

/// `n` clients each ask for [`big`]'s four megabytes and reset the connection (an RST,
/// `SO_LINGER` 0) once the head has come — in the middle of the answer, as actix sends the
/// body — or, one in two, before any of it came, while the handler runs. Their slots must
/// all come back: two at once are admitted afterwards.
pub(crate) async fn resets(addr: SocketAddr, n: usize) -> (usize, usize) {
    let mut mid_answer = 0;
    let mut before = 0;
    for i in 0..n {
        let Ok(mut stream) = TcpStream::connect(addr).await else {
            continue;
        };
        stream
            .write_all(b"GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
            .await
            .unwrap();
        if i % 2 == 0 {
            let mut head = [0u8; 1024];
            let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut head)).await;
            if matches!(read, Ok(Ok(n)) if n > 0) {
                mid_answer += 1;
            }
        } else {
            before += 1;
        }
        let _ = stream.set_zero_linger();
        drop(stream);
    }
    (mid_answer, before)
}

/// Both of [`big`]'s slots free again: two at once admitted, tried for up to 5 s.
pub(crate) async fn both_big_free(addr: SocketAddr) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(5) {
        let pair: Vec<_> = (0..2)
            .map(|_| {
                tokio::spawn(async move {
                    let request = b"GET /big HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
                    exchange(addr, request, Duration::from_secs(10))
                        .await
                        .map_or(0, |r| r.status)
                })
            })
            .collect();
        let mut statuses = Vec::new();
        for task in pair {
            statuses.push(task.await.unwrap());
        }
        if statuses == [200, 200] {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// Two hundred clients resetting their connections in the middle of answers (and before
/// them) on a route of two slots: afterwards both slots are free, in memory and on Redis.
/// (Each slot a reset kept would close the route to everyone.)
#[test]
fn clients_that_reset_mid_answer_give_their_slots_back() {
    let rt = client();
    let redis = RedisServer::start();
    let tracker = Arc::new(Tracker::default());
    let setups = [
        ("memory", serve(Limiter::builder().build(), &tracker)),
        (
            "Redis",
            serve(
                over_redis(&rt, &redis.url(), Duration::from_secs(30)),
                &tracker,
            ),
        ),
    ];
    for (setup, server) in &setups {
        let (mid_answer, before) = rt.block_on(resets(server.addr, 200));
        let free = rt.block_on(both_big_free(server.addr));
        println!(
            "{setup}: {mid_answer} resets in the middle of an answer and {before} before it; \
             both slots free again after {free:?}"
        );
        assert!(
            mid_answer > 50,
            "{setup}: the answers were cut ({mid_answer})"
        );
        assert!(free.is_some(), "{setup}: a reset kept a slot");
    }
}
