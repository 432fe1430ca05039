//! Penalties (`block = "15m"`, `penalty = "3 in 1h -> 1d"`) through real actix services with
//! the manual clock: in memory, and on Redis across two instances (feature `redis`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::rc::Rc;
use std::time::Duration;

use actix_web::{test, web, App, HttpResponse};
use common::{get_from, header, CLIENT};
use limiter::{rate_limit, Limiter, ManualClock, Penalty, Policy, RateLimit, Subject};

const MINUTE: Duration = Duration::from_secs(60);

#[rate_limit(
    2,
    per = "1m",
    block = "15m",
    penalty = "2 in 1h -> 1d",
    scope = "penalized-login"
)]
async fn login() -> HttpResponse {
    HttpResponse::Ok().finish()
}

fn routes(config: &mut web::ServiceConfig) {
    config.route("/login", web::get().to(login));
}

fn retry_after(res: &actix_web::dev::ServiceResponse) -> u64 {
    header(res.headers(), "retry-after")
        .unwrap()
        .parse()
        .unwrap()
}

/// Two admitted, then the third is refused for the block's 15 minutes, counted down; when
/// it ends the client is admitted. The third block within an hour lasts a day.
#[actix_web::test]
async fn a_rejected_client_is_blocked_and_a_repeat_offender_longer() {
    let clock = ManualClock::new();
    let limiter = Limiter::builder().clock(clock.clone()).build();
    let app = test::init_service(App::new().app_data(limiter.clone()).configure(routes)).await;
    let get = || get_from(&app, "/login", CLIENT);
    assert_eq!(get().await.status(), 200);
    assert_eq!(get().await.status(), 200);
    let third = get().await;
    assert_eq!(third.status(), 429);
    assert_eq!(retry_after(&third), 900, "the block, not the minute's wait");
    // The window is long over, the block is not: refused, nothing counted.
    clock.advance(10 * MINUTE);
    let blocked = get().await;
    assert_eq!(
        (blocked.status().as_u16(), retry_after(&blocked)),
        (429, 300)
    );
    clock.advance(5 * MINUTE);
    assert_eq!(get().await.status(), 200, "the block is over");
    assert_eq!(
        get().await.status(),
        200,
        "and nothing was counted while it lasted"
    );
    // The second block, at 15 minutes; the third within the hour lasts a day.
    assert_eq!(retry_after(&get().await), 900);
    clock.advance(15 * MINUTE);
    get().await;
    get().await;
    let third_block = get().await;
    assert_eq!(
        retry_after(&third_block),
        86_400,
        "two blocks within the hour before it"
    );
    // A reset lifts it, and forgets the past blocks.
    let client = CLIENT.parse::<std::net::SocketAddr>().unwrap().ip();
    limiter
        .reset("penalized-login", Subject::Address(client))
        .await
        .unwrap();
    assert_eq!(get().await.status(), 200);
    get().await;
    assert_eq!(retry_after(&get().await), 900, "a first block again");
}

/// Another client is not blocked by one's penalty, and the route table says what a
/// rejection costs.
#[actix_web::test]
async fn a_block_is_its_clients_and_the_route_table_shows_it() {
    let clock = ManualClock::new();
    let limiter = Limiter::builder().clock(clock.clone()).build();
    let app = test::init_service(App::new().app_data(limiter).configure(routes)).await;
    for _ in 0..3 {
        get_from(&app, "/login", CLIENT).await;
    }
    assert_eq!(get_from(&app, "/login", CLIENT).await.status(), 429);
    assert_eq!(
        get_from(&app, "/login", "198.51.100.2:1").await.status(),
        200
    );
    let table = limiter::routes().to_string();
    let row = table
        .lines()
        .find(|line| line.contains("penalized-login"))
        .unwrap();
    assert!(
        row.contains("2 per 1m, sliding_window, block 15m, 2 in 1h -> 1d"),
        "{row}"
    );
}

/// 200 concurrent requests of one client: exactly the limit's two are admitted, every other
/// one is refused by the block they started (Retry-After the block's), and the block holds.
#[actix_web::test]
async fn two_hundred_concurrent_requests_admit_exactly_the_limit() {
    let clock = ManualClock::new();
    let limiter = Limiter::builder().clock(clock.clone()).build();
    let app = Rc::new(test::init_service(App::new().app_data(limiter).configure(routes)).await);
    let requests = (0..200).map(|_| {
        let app = Rc::clone(&app);
        tokio::task::spawn_local(async move {
            let res = get_from(&*app, "/login", CLIENT).await;
            (
                res.status().as_u16(),
                header(res.headers(), "retry-after").map(str::to_owned),
            )
        })
    });
    let answers: Vec<(u16, Option<String>)> = futures_util::future::join_all(requests)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let admitted = answers.iter().filter(|(status, _)| *status == 200).count();
    println!("200 concurrent requests at a limit of 2 with a block: {admitted} admitted");
    assert_eq!(admitted, 2);
    assert!(answers
        .iter()
        .filter(|(status, _)| *status == 429)
        .all(|(_, retry)| retry.as_deref() == Some("900")));
    clock.advance(14 * MINUTE);
    assert_eq!(get_from(&*app, "/login", CLIENT).await.status(), 429);
}

/// The middleware takes a penalty on its policy, with the same rules.
#[actix_web::test]
async fn the_middleware_blocks_too() {
    let clock = ManualClock::new();
    let limiter = Limiter::builder().clock(clock.clone()).build();
    let policy = Policy::new(1, Duration::from_secs(1))
        .unwrap()
        .with_penalty(Penalty::block(Duration::from_secs(30)).unwrap());
    let app = test::init_service(
        App::new().app_data(limiter).service(
            web::scope("/api")
                .wrap(RateLimit::new(policy).scope("penalized-api"))
                .route("/list", web::get().to(HttpResponse::Ok)),
        ),
    )
    .await;
    assert_eq!(get_from(&app, "/api/list", CLIENT).await.status(), 200);
    let second = get_from(&app, "/api/list", CLIENT).await;
    assert_eq!((second.status().as_u16(), retry_after(&second)), (429, 30));
    clock.advance(Duration::from_secs(29));
    assert_eq!(get_from(&app, "/api/list", CLIENT).await.status(), 429);
    clock.advance(Duration::from_secs(1));
    assert_eq!(get_from(&app, "/api/list", CLIENT).await.status(), 200);
}

#[cfg(feature = "redis")]
mod on_redis {
    use super::*;
    use common::redis_server::RedisServer;

    /// A block started through one instance refuses the client on the other, exactly; the
    /// escalation counts the blocks of both; a reset on one lifts it on both.
    #[actix_web::test]
    async fn a_block_holds_across_instances() {
        let server = RedisServer::start();
        let clock = ManualClock::starting_at(Duration::from_secs(1_700_000_040));
        let mut apps = Vec::new();
        let mut limiters = Vec::new();
        for _ in 0..2 {
            let limiter = common::redis_instance(&server.url(), &clock).await;
            limiters.push(limiter.clone());
            apps.push(test::init_service(App::new().app_data(limiter).configure(routes)).await);
        }
        let get = |i: usize| get_from(&apps[i], "/login", CLIENT);
        assert_eq!(get(0).await.status(), 200);
        assert_eq!(get(1).await.status(), 200);
        let third = get(0).await;
        assert_eq!((third.status().as_u16(), retry_after(&third)), (429, 900));
        clock.advance(10 * MINUTE);
        let other = get(1).await;
        assert_eq!((other.status().as_u16(), retry_after(&other)), (429, 300));
        clock.advance(5 * MINUTE);
        assert_eq!(get(1).await.status(), 200);
        get(0).await;
        assert_eq!(
            retry_after(&get(1).await),
            900,
            "the second block, through the other"
        );
        clock.advance(15 * MINUTE);
        get(0).await;
        get(1).await;
        assert_eq!(
            retry_after(&get(0).await),
            86_400,
            "two blocks within the hour, on both"
        );
        let client = CLIENT.parse::<std::net::SocketAddr>().unwrap().ip();
        limiters[1]
            .reset("penalized-login", Subject::Address(client))
            .await
            .unwrap();
        assert_eq!(
            get(1).await.status(),
            200,
            "lifted at once where it was reset"
        );
        // The other instance answered the blocked client itself; it asks Redis again
        // within a second.
        clock.advance(Duration::from_secs(1));
        assert_eq!(
            get(0).await.status(),
            200,
            "lifted on the other within a second"
        );
    }

    /// 200 concurrent requests of one client over two instances: exactly two admitted, the
    /// rest refused with the block's Retry-After.
    #[actix_web::test]
    async fn two_hundred_concurrent_requests_over_two_instances_admit_exactly_the_limit() {
        let server = RedisServer::start();
        let clock = ManualClock::starting_at(Duration::from_secs(1_700_000_040));
        let mut apps = Vec::new();
        for _ in 0..2 {
            let limiter = common::redis_instance(&server.url(), &clock).await;
            let app = test::init_service(App::new().app_data(limiter).configure(routes)).await;
            apps.push(Rc::new(app));
        }
        let requests = (0..200).map(|i| {
            let app = Rc::clone(&apps[i % 2]);
            tokio::task::spawn_local(async move {
                let res = get_from(&*app, "/login", CLIENT).await;
                let retry = header(res.headers(), "retry-after").map(str::to_owned);
                (res.status().as_u16(), retry)
            })
        });
        let answers: Vec<(u16, Option<String>)> = futures_util::future::join_all(requests)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let admitted = answers.iter().filter(|(status, _)| *status == 200).count();
        println!(
            "200 concurrent requests over two instances at 2 with a block: {admitted} admitted"
        );
        assert_eq!(admitted, 2, "{answers:?}");
        assert!(answers
            .iter()
            .filter(|(status, _)| *status == 429)
            .all(|(_, retry)| retry.as_deref() == Some("900")));
    }
}

/// A restart lifts no block: saved with the counts, restored ten minutes later, the block
/// has five minutes left.
#[actix_web::test]
async fn a_block_survives_a_restart() {
    use limiter::{Clock, MemoryStore};
    let dir = std::env::temp_dir().join(format!("limiter-blocks-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("limits.bin");
    let clock = ManualClock::starting_at(Duration::from_secs(1_770_000_000));
    let store = MemoryStore::new();
    let limiter = Limiter::builder()
        .store(store.clone())
        .clock(clock.clone())
        .build();
    let app = test::init_service(App::new().app_data(limiter).configure(routes)).await;
    for _ in 0..3 {
        get_from(&app, "/login", CLIENT).await;
    }
    assert_eq!(retry_after(&get_from(&app, "/login", CLIENT).await), 900);
    let wall = |at: Duration| std::time::UNIX_EPOCH + at;
    store
        .save_at(&file, clock.now(), wall(clock.now()))
        .unwrap();
    let later = clock.now() + 10 * MINUTE;
    let restored = MemoryStore::new()
        .restore_at(&file, later, wall(later))
        .unwrap();
    let limiter = Limiter::builder()
        .store(restored)
        .clock(ManualClock::starting_at(later))
        .build();
    let app = test::init_service(App::new().app_data(limiter).configure(routes)).await;
    let blocked = get_from(&app, "/login", CLIENT).await;
    assert_eq!(
        (blocked.status().as_u16(), retry_after(&blocked)),
        (429, 300)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
