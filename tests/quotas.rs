//! Calendar quotas (`per = "day"`, `"week"`, `"month"`) through real actix services with the
//! manual clock reading Unix time: in memory, and on Redis across two instances and against
//! the memory store near the boundaries (feature `redis`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::time::Duration;

use actix_web::{test, web, App, HttpResponse};
use common::{get_from, header, CLIENT};
use limiter::{rate_limit, Clock, Limiter, ManualClock};

/// 2026-01-31T23:59:00Z.
const LAST_MINUTE_OF_JANUARY: Duration = Duration::from_secs(1_769_903_940);
/// 2026-03-02T21:59:00Z, a Monday.
const MONDAY_EVENING: Duration = Duration::from_secs(1_772_488_740);

#[rate_limit(3, per = "month", key = "header:x-api-key", scope = "monthly")]
async fn monthly() -> HttpResponse {
    HttpResponse::Ok().finish()
}

#[rate_limit(2, per = "1s", scope = "stacked-second")]
#[rate_limit(3, per = "day", scope = "stacked-day")]
async fn stacked() -> HttpResponse {
    HttpResponse::Ok().finish()
}

#[rate_limit(1, per = "week", scope = "weekly")]
async fn weekly() -> HttpResponse {
    HttpResponse::Ok().finish()
}

fn routes(config: &mut web::ServiceConfig) {
    config
        .route("/monthly", web::get().to(monthly))
        .route("/stacked", web::get().to(stacked))
        .route("/weekly", web::get().to(weekly));
}

async fn get_with_key(
    app: &impl actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse,
        Error = actix_web::Error,
    >,
    key: &str,
) -> actix_web::dev::ServiceResponse {
    let req = test::TestRequest::get()
        .uri("/monthly")
        .insert_header(("x-api-key", key))
        .peer_addr(CLIENT.parse().unwrap());
    test::call_service(app, req.to_request()).await
}

fn retry_after(res: &actix_web::dev::ServiceResponse) -> u64 {
    header(res.headers(), "retry-after")
        .unwrap()
        .parse()
        .unwrap()
}

/// Three a month: the fourth waits for February, 60 s away, and `t` says so; February
/// starts afresh; the fields announce the longest month.
#[actix_web::test]
async fn a_monthly_quota_resets_at_the_first_of_the_month() {
    let clock = ManualClock::starting_at(LAST_MINUTE_OF_JANUARY);
    let limiter = Limiter::builder().clock(clock.clone()).build();
    let app = test::init_service(App::new().app_data(limiter).configure(routes)).await;
    for _ in 0..3 {
        assert_eq!(get_with_key(&app, "key-1").await.status(), 200);
    }
    let fourth = get_with_key(&app, "key-1").await;
    assert_eq!((fourth.status().as_u16(), retry_after(&fourth)), (429, 60));
    assert_eq!(
        header(fourth.headers(), "ratelimit"),
        Some("\"monthly\";r=0;t=60")
    );
    assert_eq!(
        header(fourth.headers(), "ratelimit-policy"),
        Some("\"monthly\";q=3;w=2678400")
    );
    assert_eq!(
        get_with_key(&app, "key-2").await.status(),
        200,
        "its own quota"
    );
    clock.advance(Duration::from_secs(60));
    let february = get_with_key(&app, "key-1").await;
    assert_eq!(february.status(), 200);
    // 28 days of February left, less nothing: t counts to March 1st.
    assert_eq!(
        header(february.headers(), "ratelimit"),
        Some(format!("\"monthly\";r=2;t={}", 28 * 86_400).as_str())
    );
}

/// A short limit and a daily quota stack: each holds, the longer wait is Retry-After, and a
/// request the second's limit refuses takes nothing from the day's.
#[actix_web::test]
async fn a_daily_quota_stacks_with_a_per_second_limit() {
    let clock = ManualClock::starting_at(MONDAY_EVENING);
    let limiter = Limiter::builder().clock(clock.clone()).build();
    let app = test::init_service(App::new().app_data(limiter).configure(routes)).await;
    assert_eq!(get_from(&app, "/stacked", CLIENT).await.status(), 200);
    assert_eq!(get_from(&app, "/stacked", CLIENT).await.status(), 200);
    let third = get_from(&app, "/stacked", CLIENT).await;
    assert_eq!((third.status().as_u16(), retry_after(&third)), (429, 1));
    clock.advance(Duration::from_secs(1));
    assert_eq!(get_from(&app, "/stacked", CLIENT).await.status(), 200);
    clock.advance(Duration::from_secs(1));
    let day_over = get_from(&app, "/stacked", CLIENT).await;
    assert_eq!(
        (day_over.status().as_u16(), retry_after(&day_over)),
        (429, 7_258)
    );
    clock.advance(Duration::from_secs(7_258));
    assert_eq!(get_from(&app, "/stacked", CLIENT).await.status(), 200);
}

/// A week runs from Monday to Monday; with `utc_offset(120)` a day ends at 22:00 UTC.
#[actix_web::test]
async fn weeks_begin_on_monday_and_days_at_the_configured_offset() {
    let clock = ManualClock::starting_at(MONDAY_EVENING);
    let limiter = Limiter::builder()
        .clock(clock.clone())
        .utc_offset(120)
        .build();
    let app = test::init_service(App::new().app_data(limiter.clone()).configure(routes)).await;
    // Monday 21:59 UTC is Monday 23:59 at UTC+2: the week has 6 days and a minute to go.
    assert_eq!(get_from(&app, "/weekly", CLIENT).await.status(), 200);
    let again = get_from(&app, "/weekly", CLIENT).await;
    assert_eq!(retry_after(&again), 6 * 86_400 + 60);
    // The daily quota's day at UTC+2 ends at 22:00 UTC, a minute away.
    for _ in 0..3 {
        get_from(&app, "/stacked", "198.51.100.9:1").await;
        clock.advance(Duration::from_secs(1));
    }
    let over = get_from(&app, "/stacked", "198.51.100.9:1").await;
    assert_eq!((over.status().as_u16(), retry_after(&over)), (429, 57));
    let table = limiter.routes().to_string();
    let row = table.lines().find(|l| l.contains("stacked-day")).unwrap();
    assert!(
        row.contains("3 per day, utc+02:00") && row.contains("configured"),
        "{row}"
    );
}

/// A scope whose quota configuration sets without an offset keeps UTC, and the limiter
/// says so once it is built with `utc_offset`.
#[actix_web::test]
async fn an_offset_configuration_overrides_is_reported() {
    common::events::record();
    let configured = limiter::Policy::per_calendar(5, limiter::Period::Day).unwrap();
    let limiter = Limiter::builder()
        .policy("stacked-day", configured)
        .utc_offset(120)
        .build();
    assert_eq!(
        limiter.policy("stacked-day").unwrap().to_string(),
        "5 per day",
        "configuration wins"
    );
    let warned = common::events::warnings("utc_offset does not apply");
    assert!(!warned.is_empty(), "no warning");
}

/// A quota counted in memory survives a restart: saved at the end of January, restored the
/// next day, the month's count still holds until February.
#[actix_web::test]
async fn a_quota_survives_a_restart() {
    let dir = std::env::temp_dir().join(format!("limiter-quota-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("limits.bin");
    let clock = ManualClock::starting_at(LAST_MINUTE_OF_JANUARY - Duration::from_secs(3_600));
    let store = limiter::MemoryStore::new();
    let limiter = Limiter::builder()
        .store(store.clone())
        .clock(clock.clone())
        .build();
    let app = test::init_service(App::new().app_data(limiter).configure(routes)).await;
    for _ in 0..3 {
        assert_eq!(get_with_key(&app, "key-9").await.status(), 200);
    }
    let wall = std::time::UNIX_EPOCH + clock.now();
    assert_eq!(store.len(), 1);
    store.save_at(&file, clock.now(), wall).unwrap();
    // Twenty minutes later, another process: 41 minutes to February.
    let later = clock.now() + Duration::from_secs(1_200);
    let restored = limiter::MemoryStore::new()
        .restore_at(&file, later, std::time::UNIX_EPOCH + later)
        .unwrap();
    assert_eq!(restored.len(), 1, "the quota's state was restored");
    let clock = ManualClock::starting_at(later);
    let limiter = Limiter::builder()
        .store(restored)
        .clock(clock.clone())
        .build();
    let app = test::init_service(App::new().app_data(limiter).configure(routes)).await;
    let refused = get_with_key(&app, "key-9").await;
    assert_eq!(
        (refused.status().as_u16(), retry_after(&refused)),
        (429, 2_460)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[cfg(feature = "redis")]
mod on_redis {
    use super::*;
    use common::redis_server::RedisServer;
    use limiter::Period;
    use limiter::{Charge, Limit, MemoryStore, Policy, RedisStore, Store};
    use proptest::prelude::*;

    /// Two instances share one month's quota, exactly, and February starts afresh on both.
    #[actix_web::test]
    async fn two_instances_share_a_monthly_quota() {
        let server = RedisServer::start();
        let clock = ManualClock::starting_at(LAST_MINUTE_OF_JANUARY);
        let mut apps = Vec::new();
        for _ in 0..2 {
            let limiter = common::redis_instance(&server.url(), &clock).await;
            apps.push(test::init_service(App::new().app_data(limiter).configure(routes)).await);
        }
        let mut admitted = 0;
        for i in 0..20 {
            admitted += usize::from(get_with_key(&apps[i % 2], "key-r").await.status() == 200);
        }
        assert_eq!(admitted, 3);
        let refused = get_with_key(&apps[1], "key-r").await;
        assert_eq!(retry_after(&refused), 60);
        clock.advance(Duration::from_secs(60));
        assert_eq!(get_with_key(&apps[1], "key-r").await.status(), 200);
    }

    /// On Redis's own clock, the wait is to the real end of the month.
    #[actix_web::test]
    async fn on_the_servers_clock_the_wait_is_to_the_real_boundary() {
        let server = RedisServer::start();
        let store = RedisStore::connect(&server.url()).await.unwrap();
        let limit = Limit::new(
            "real-month",
            Policy::per_calendar(1, Period::Month).unwrap(),
        );
        let now = Duration::ZERO; // ignored: the server reads its clock
        assert!(store.check(&limit, b"k", now).await.unwrap().allowed());
        let refused = store.check(&limit, b"k", now).await.unwrap();
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        let calendar = limiter::Calendar::utc(Period::Month);
        let end = calendar.start_ms(calendar.index(wall.as_millis() as u64) + 1);
        let expected = end - wall.as_millis() as u64;
        let got = refused.retry_after().unwrap().as_millis() as u64;
        println!("to the month's end: {got} ms by Redis, {expected} ms by this host");
        assert!(got.abs_diff(expected) < 2_000, "{got} vs {expected}");
    }

    /// Random schedules across day, week and month boundaries, at offsets, with costs and
    /// refunds: Redis decides as the memory store.
    #[::std::prelude::v1::test]
    fn near_the_boundaries_redis_decides_as_the_memory_store() {
        let server = RedisServer::start();
        let rt = common::replays::runtime();
        let redis = rt
            .block_on(RedisStore::connect(&server.url()))
            .unwrap()
            .use_caller_clock();
        let periods = prop_oneof![Just(Period::Day), Just(Period::Week), Just(Period::Month)];
        let offsets = prop_oneof![Just(0i32), Just(120), Just(-330), Just(840)];
        let steps = prop::collection::vec((0..2u8, 0..4_000u64, 1..=3u32, any::<bool>()), 1..40);
        let case = std::cell::Cell::new(0);
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(48));
        runner
            .run(
                &(periods, offsets, 1..=4u32, steps),
                |(period, offset, max, steps)| {
                    case.set(case.get() + 1);
                    let policy = Policy::per_calendar(max, period)
                        .unwrap()
                        .with_utc_offset(offset)
                        .unwrap();
                    let limit = Limit::new(format!("quota-{}", case.get()), policy);
                    let memory = MemoryStore::new();
                    let calendar = policy.calendar().unwrap();
                    // A little before the boundary of the period after 2026-01-31.
                    let index = calendar.index(LAST_MINUTE_OF_JANUARY.as_millis() as u64);
                    let boundary = calendar.start_ms(index + 1);
                    let mut now = Duration::from_millis(boundary - 30_000);
                    for (i, (key, step, cost, refund)) in steps.iter().enumerate() {
                        now += Duration::from_millis(*step * 10);
                        let key = [*key];
                        let charge = [Charge::new(&limit, &key).cost(*cost)];
                        let expected = memory.check_all_at(&charge, now);
                        let got = rt.block_on(redis.check_all(&charge, now)).unwrap();
                        prop_assert_eq!(&got, &expected, "request {} at {:?}", i, now);
                        if *refund {
                            memory.refund_at(&charge, expected.receipt(), now);
                            rt.block_on(redis.refund(&charge, got.receipt(), now))
                                .unwrap();
                        }
                    }
                    Ok(())
                },
            )
            .unwrap();
    }
}
