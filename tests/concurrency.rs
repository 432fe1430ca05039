//! `#[concurrency_limit]` through real actix services: never more than the limit running
//! (counted inside the handler), every slot back afterwards — after a success, a rate
//! limit's 429, a panic, a body dropped half way — in memory, and on Redis across two
//! instances, where a dead instance's slots expire with their leases (feature `redis`).
#![allow(clippy::unwrap_used, clippy::expect_used)]
// tests: a panic is a failure
// The tests that share the handler's counters run one at a time, each holding a lock
// across its awaits (on its own thread: no other task waits for it).
#![allow(clippy::await_holding_lock)]

use crate::common;

use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::LazyLock;

use actix_web::{test, web, App, HttpRequest, HttpResponse};
use common::header;
use futures_util::FutureExt;
use limiter::{concurrency_limit, rate_limit, Concurrency, ConcurrencyLimit, Limiter, MemoryStore};

/// Requests running in the handler now, and the most seen at once; requests answered 429.
static RUNNING: AtomicUsize = AtomicUsize::new(0);
static REFUSED: AtomicUsize = AtomicUsize::new(0);
static MOST: AtomicUsize = AtomicUsize::new(0);
/// Open while the test holds requests inside the handler.
static GATE: LazyLock<tokio::sync::Semaphore> = LazyLock::new(|| tokio::sync::Semaphore::new(0));

#[concurrency_limit(4, key = "user", scope = "slow-export")]
async fn slow_export() -> HttpResponse {
    let now = RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
    MOST.fetch_max(now, Ordering::SeqCst);
    let permit = GATE.acquire().await.unwrap();
    permit.forget();
    RUNNING.fetch_sub(1, Ordering::SeqCst);
    HttpResponse::Ok().body("done")
}

#[concurrency_limit(1, scope = "panicky")]
async fn panicky(req: HttpRequest) -> HttpResponse {
    if req.query_string() == "panic" {
        panic!("the handler failed");
    }
    HttpResponse::Ok().finish()
}

#[concurrency_limit(1, scope = "streaming")]
async fn streaming() -> HttpResponse {
    let chunks = futures_util::stream::iter(
        (0..3).map(|_| Ok::<_, actix_web::Error>(web::Bytes::from_static(b"chunk"))),
    );
    HttpResponse::Ok().streaming(chunks)
}

#[concurrency_limit(2, scope = "rated-in-flight")]
#[rate_limit(3, per = "1m", scope = "rated")]
async fn rated() -> HttpResponse {
    let permit = GATE.acquire().await.unwrap();
    permit.forget();
    HttpResponse::Ok().finish()
}

fn routes(config: &mut web::ServiceConfig) {
    config
        .route("/export", web::get().to(slow_export))
        .route("/panicky", web::get().to(panicky))
        .route("/streaming", web::get().to(streaming))
        .route("/rated", web::get().to(rated));
}

fn user_of(req: &HttpRequest) -> Option<String> {
    header(req.headers(), "x-user").map(str::to_owned)
}

fn export_request(user: &str) -> actix_http::Request {
    test::TestRequest::get()
        .uri("/export")
        .insert_header(("x-user", user))
        .peer_addr(common::CLIENT.parse().unwrap())
        .to_request()
}

/// A response's status, `Retry-After` and `RateLimit-Policy`.
type Answer = (u16, (Option<String>, Option<String>));

/// Lets `n` requests held in the handler go, once they are all in.
async fn release(n: usize) {
    for _ in 0..200 {
        if RUNNING.load(Ordering::SeqCst) >= n {
            break;
        }
        tokio::task::yield_now().await;
    }
    GATE.add_permits(n);
}

/// 50 requests of one user at once: 4 run, 46 are refused at once (429, Retry-After 1, the
/// `concurrent-requests` fields), and every slot is back once the 4 are done.
#[actix_web::test]
async fn fifty_requests_of_one_user_run_four_at_a_time() {
    let _one = common::one_at_a_time();
    MOST.store(0, Ordering::SeqCst);
    REFUSED.store(0, Ordering::SeqCst);
    let store = MemoryStore::new();
    let limiter = Limiter::builder()
        .store(store.clone())
        .user_key(user_of)
        .build();
    let app = Rc::new(test::init_service(App::new().app_data(limiter).configure(routes)).await);
    let requests: Vec<_> = (0..50)
        .map(|_| {
            let app = Rc::clone(&app);
            tokio::task::spawn_local(async move {
                let res = test::call_service(&*app, export_request("ann")).await;
                let fields = (
                    header(res.headers(), "retry-after").map(str::to_owned),
                    header(res.headers(), "ratelimit-policy").map(str::to_owned),
                );
                let status = res.status().as_u16();
                if status == 429 {
                    REFUSED.fetch_add(1, Ordering::SeqCst);
                }
                let _ = test::read_body(res).await;
                (status, fields)
            })
        })
        .collect();
    // Every request decided (4 running, the rest answered), then the four go.
    for _ in 0..10_000 {
        if REFUSED.load(Ordering::SeqCst) >= 46 {
            break;
        }
        tokio::task::yield_now().await;
    }
    release(4).await;
    let answers: Vec<Answer> = futures_util::future::join_all(requests)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let ok = answers.iter().filter(|(s, _)| *s == 200).count();
    let refused: Vec<_> = answers.iter().filter(|(s, _)| *s == 429).collect();
    println!(
        "50 requests of one user at a limit of 4 in flight: {ok} ran, {} refused, at most {} at once",
        refused.len(),
        MOST.load(Ordering::SeqCst)
    );
    assert_eq!((ok, refused.len()), (4, 46));
    assert_eq!(MOST.load(Ordering::SeqCst), 4);
    let (retry, policy) = &refused[0].1;
    assert_eq!(retry.as_deref(), Some("1"));
    assert_eq!(
        policy.as_deref(),
        Some("\"slow-export\";q=4;qu=\"concurrent-requests\"")
    );
    let limit = Concurrency::new("slow-export", 4).unwrap();
    let ann = limiter_key("ann");
    assert_eq!(store.slots_taken(&limit, &ann), 0, "every slot back");
}

/// The store key a user id is counted under (the same bytes `Limiter::store_key` gives).
fn limiter_key(user: &str) -> Vec<u8> {
    let limiter = Limiter::builder().user_key(user_of).build();
    limiter.store_key(limiter::Subject::User(user))
}

/// A handler that panics gives its slot back in the unwinding: the next request runs.
#[actix_web::test]
async fn a_panic_gives_the_slot_back() {
    let limiter = Limiter::builder().build();
    let app = test::init_service(App::new().app_data(limiter).configure(routes)).await;
    let get = |query: &str| {
        test::TestRequest::get()
            .uri(&format!("/panicky?{query}"))
            .peer_addr(common::CLIENT.parse().unwrap())
            .to_request()
    };
    let panicked = std::panic::AssertUnwindSafe(test::call_service(&app, get("panic")))
        .catch_unwind()
        .await;
    assert!(panicked.is_err(), "the handler panicked");
    assert_eq!(test::call_service(&app, get("fine")).await.status(), 200);
    assert_eq!(test::call_service(&app, get("fine")).await.status(), 200);
}

/// A streaming body holds its slot until it is sent, and gives it back when dropped
/// unread.
#[actix_web::test]
async fn a_body_holds_its_slot_until_sent_or_dropped() {
    let limiter = Limiter::builder().build();
    let app = test::init_service(App::new().app_data(limiter).configure(routes)).await;
    let get = || {
        test::TestRequest::get()
            .uri("/streaming")
            .peer_addr(common::CLIENT.parse().unwrap())
            .to_request()
    };
    let first = test::call_service(&app, get()).await;
    assert_eq!(first.status(), 200);
    assert_eq!(
        header(first.headers(), "ratelimit"),
        Some("\"streaming\";r=0")
    );
    // Its body is not sent yet: the slot is held.
    assert_eq!(test::call_service(&app, get()).await.status(), 429);
    assert_eq!(test::read_body(first).await, "chunkchunkchunk");
    let second = test::call_service(&app, get()).await;
    assert_eq!(second.status(), 200, "given back once sent");
    drop(second); // a client that went away
    assert_eq!(
        test::call_service(&app, get()).await.status(),
        200,
        "given back when dropped"
    );
}

/// A request over its concurrency limit takes nothing from the handler's rate limit: two
/// running, ten refused for concurrency, and the rate's third request is still there.
#[actix_web::test]
async fn a_request_refused_for_concurrency_takes_nothing_from_its_rate() {
    let _one = common::one_at_a_time();
    let limiter = Limiter::builder().build();
    let app = Rc::new(test::init_service(App::new().app_data(limiter).configure(routes)).await);
    let running: Vec<_> = (0..12)
        .map(|_| {
            let app = Rc::clone(&app);
            tokio::task::spawn_local(async move { get_rated(&*app).await })
        })
        .collect();
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    GATE.add_permits(2);
    let statuses: Vec<u16> = futures_util::future::join_all(running)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        statuses.iter().filter(|&&s| s == 200).count(),
        2,
        "{statuses:?}"
    );
    // One more of the rate's three is left, then the rate refuses (before the handler:
    // one permit is all it takes, and none is left over for the other tests).
    GATE.add_permits(1);
    assert_eq!(get_rated(&*app).await, 200);
    assert_eq!(get_rated(&*app).await, 429);
}

async fn get_rated(
    app: &impl actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse,
        Error = actix_web::Error,
    >,
) -> u16 {
    let req = test::TestRequest::get()
        .uri("/rated")
        .peer_addr(common::CLIENT.parse().unwrap())
        .to_request();
    test::call_service(app, req).await.status().as_u16()
}

/// The middleware holds a slot per request under everything it wraps, until the body is
/// sent.
#[actix_web::test]
async fn the_middleware_holds_a_slot_until_the_body_is_sent() {
    let limiter = Limiter::builder().build();
    let app = test::init_service(
        App::new().app_data(limiter).service(
            web::scope("/files")
                .wrap(ConcurrencyLimit::new(1).scope("files-in-flight"))
                .route("/big", web::get().to(streaming_file)),
        ),
    )
    .await;
    let get = || {
        test::TestRequest::get()
            .uri("/files/big")
            .peer_addr(common::CLIENT.parse().unwrap())
            .to_request()
    };
    let first = test::call_service(&app, get()).await;
    assert_eq!(first.status(), 200);
    let refused = test::call_service(&app, get()).await;
    assert_eq!(refused.status(), 429);
    assert_eq!(
        header(refused.headers(), "ratelimit-policy"),
        Some("\"files-in-flight\";q=1;qu=\"concurrent-requests\"")
    );
    assert_eq!(test::read_body(first).await.len(), 15);
    assert_eq!(test::call_service(&app, get()).await.status(), 200);
    let table = limiter::routes().to_string();
    let row = table.lines().find(|l| l.starts_with("files-in-flight "));
    let columns: Vec<&str> = row.unwrap_or_default().split_whitespace().collect();
    assert_eq!(columns[1..4], ["1", "in", "flight"], "{table}");
}

async fn streaming_file() -> HttpResponse {
    let chunks = futures_util::stream::iter(
        (0..3).map(|_| Ok::<_, actix_web::Error>(web::Bytes::from_static(b"chunk"))),
    );
    HttpResponse::Ok().streaming(chunks)
}

/// The route table lists concurrency limits.
#[::std::prelude::v1::test]
fn the_route_table_shows_concurrency_limits() {
    let table = limiter::routes().to_string();
    let row = table
        .lines()
        .find(|l| l.starts_with("slow-export"))
        .unwrap();
    assert!(row.contains("4 in flight") && row.contains("user"), "{row}");
}

#[cfg(feature = "redis")]
mod on_redis {
    use super::*;
    use common::redis_server::RedisServer;
    use limiter::{Acquired, RedisStore, Store};
    use std::time::Duration;

    /// 200 requests of one user over two instances on one Redis, the handler held: never
    /// more than 4 running, and every lease back afterwards.
    #[actix_web::test]
    async fn two_instances_share_four_slots() {
        let _one = common::one_at_a_time();
        MOST.store(0, Ordering::SeqCst);
        let server = RedisServer::start();
        let store = RedisStore::connect(&server.url()).await.unwrap();
        let mut apps = Vec::new();
        for _ in 0..2 {
            let store = RedisStore::connect(&server.url()).await.unwrap();
            let limiter = Limiter::builder().store(store).user_key(user_of).build();
            let app = test::init_service(App::new().app_data(limiter).configure(routes)).await;
            apps.push(Rc::new(app));
        }
        let requests: Vec<_> = (0..200)
            .map(|i| {
                let app = Rc::clone(&apps[i % 2]);
                tokio::task::spawn_local(async move {
                    let res = test::call_service(&*app, export_request("bob")).await;
                    let status = res.status().as_u16();
                    let _ = test::read_body(res).await;
                    status
                })
            })
            .collect();
        // Let every request reach Redis, then the four running go.
        for _ in 0..400 {
            if RUNNING.load(Ordering::SeqCst) >= 4 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        GATE.add_permits(4);
        let statuses: Vec<u16> = futures_util::future::join_all(requests)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let ok = statuses.iter().filter(|&&s| s == 200).count();
        println!(
            "200 requests of one user over two instances at 4 in flight: {ok} ran, at most {} at once",
            MOST.load(Ordering::SeqCst)
        );
        assert!(MOST.load(Ordering::SeqCst) <= 4);
        assert_eq!(ok + statuses.iter().filter(|&&s| s == 429).count(), 200);
        assert!(ok >= 4, "{statuses:?}");
        let limit = Concurrency::new("slow-export", 4).unwrap();
        let bob = limiter_key("bob");
        for _ in 0..100 {
            if store.slots_taken(&limit, &bob).await.unwrap() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(
            store.slots_taken(&limit, &bob).await.unwrap(),
            0,
            "every lease back"
        );
    }

    /// A request gone after Redis granted its slot and before it read the answer (actix's
    /// dispatcher drops a service's future unpolled when the connection resets on the poll
    /// the answer woke) keeps none: the slot comes back, and is not renewed for good.
    #[actix_web::test]
    async fn a_slot_granted_to_a_request_gone_before_it_heard_is_given_back() {
        use std::future::Future;
        let server = RedisServer::start();
        let store = RedisStore::connect(&server.url())
            .await
            .unwrap()
            .lease(Duration::from_millis(300));
        let limiter = Limiter::builder().store(store.clone()).build();
        let limit = Concurrency::new("gone-before-heard", 1).unwrap();
        for round in 0..3 {
            {
                let mut acquire = std::pin::pin!(limiter.acquire(&limit, b"k"));
                let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
                assert!(acquire.as_mut().poll(&mut cx).is_pending(), "sent to Redis");
                // Redis answers; the answer waits, unread.
                for _ in 0..400 {
                    if store.slots_taken(&limit, b"k").await.unwrap() == 1 {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            } // dropped unread
              // More than three leases: a leaked lease would have been renewed all along.
            tokio::time::sleep(Duration::from_millis(1_000)).await;
            let taken = store.slots_taken(&limit, b"k").await.unwrap();
            println!("round {round}: {taken} slot taken a second after its request went");
            assert_eq!(taken, 0, "round {round}: the slot leaked");
            let guard = limiter.acquire(&limit, b"k").await;
            assert!(
                guard.is_ok(),
                "round {round}: the next request gets the slot"
            );
            drop(guard);
            for _ in 0..400 {
                if store.slots_taken(&limit, b"k").await.unwrap() == 0 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }

    /// An instance that goes away holding slots leaks them for a lease at most.
    #[actix_web::test]
    async fn a_dead_instances_slots_expire_with_their_leases() {
        let server = RedisServer::start();
        let limit = Concurrency::new("leased", 1).unwrap();
        {
            let dying = RedisStore::connect(&server.url())
                .await
                .unwrap()
                .lease(Duration::from_millis(300));
            let Acquired::Slot(_never_given_back) = dying.acquire(&limit, b"k").await.unwrap()
            else {
                panic!("the first slot is free");
            };
        } // the instance is gone, its slot not given back
        let other = RedisStore::connect(&server.url()).await.unwrap();
        assert!(matches!(
            other.acquire(&limit, b"k").await.unwrap(),
            Acquired::Full
        ));
        let started = std::time::Instant::now();
        loop {
            if let Acquired::Slot(slot) = other.acquire(&limit, b"k").await.unwrap() {
                other.release(&slot);
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(3),
                "the lease expired"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        println!(
            "a dead instance's slot came back after {:?}",
            started.elapsed()
        );
        // A held slot is renewed: it outlives many leases.
        let living = RedisStore::connect(&server.url())
            .await
            .unwrap()
            .lease(Duration::from_millis(150));
        let Acquired::Slot(held) = living.acquire(&limit, b"j").await.unwrap() else {
            panic!("free");
        };
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(matches!(
            living.acquire(&limit, b"j").await.unwrap(),
            Acquired::Full
        ));
        living.release(&held);
        for _ in 0..50 {
            if living.slots_taken(&limit, b"j").await.unwrap() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(living.slots_taken(&limit, b"j").await.unwrap(), 0);
    }
}

/// A store of one's own that keeps no slots: the slots are this instance's, and its rate
/// checks stay the store's (a missing feature is no outage).
#[actix_web::test]
async fn a_store_without_slots_leaves_them_to_this_instance() {
    struct Counting(MemoryStore);
    impl limiter::Store for Counting {
        fn check<'a>(
            &'a self,
            limit: &'a limiter::Limit,
            key: &'a [u8],
            now: std::time::Duration,
        ) -> limiter::Check<'a> {
            self.0.check(limit, key, now)
        }
        fn check_all<'a>(
            &'a self,
            charges: &'a [limiter::Charge<'a>],
            now: std::time::Duration,
        ) -> limiter::Check<'a, limiter::Checked> {
            self.0.check_all(charges, now)
        }
        fn refund<'a>(
            &'a self,
            charges: &'a [limiter::Charge<'a>],
            receipt: &'a limiter::Receipt,
            now: std::time::Duration,
        ) -> limiter::Check<'a, ()> {
            self.0.refund(charges, receipt, now)
        }
        fn reset<'a>(&'a self, limit: &'a limiter::Limit, key: &'a [u8]) -> limiter::Check<'a, ()> {
            limiter::Store::reset(&self.0, limit, key)
        }
    }
    let counted = MemoryStore::new();
    let limiter = Limiter::builder()
        .store(Counting(counted.clone()))
        .on_store_error(limiter::OnStoreError::FailClosed)
        .build();
    let uploads = Concurrency::new("own-store", 1).unwrap();
    for _ in 0..5 {
        let held = limiter.acquire(&uploads, b"k").await.unwrap();
        assert_eq!(
            limiter.acquire(&uploads, b"k").await.unwrap_err(),
            limiter::NoSlot::Full
        );
        drop(held);
    }
    // The store still counts: no failure was recorded against it.
    let app = test::init_service(App::new().app_data(limiter).configure(routes)).await;
    assert_eq!(get_rated_released(&app).await, 200);
    assert!(!counted.is_empty(), "the rate was counted in the store");
}

async fn get_rated_released(
    app: &impl actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse,
        Error = actix_web::Error,
    >,
) -> u16 {
    let _one = common::one_at_a_time();
    GATE.add_permits(1);
    get_rated(app).await
}
