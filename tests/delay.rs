//! `delay = "2s"` on a token bucket: a burst beyond the bucket waits its turn — each
//! request at the exact instant its token comes back — instead of a 429; beyond the delay,
//! or with the queue full, a 429. Through real actix services with the manual clock, and
//! tokio's paused timer (the waits are virtual, exact, and take no real time).
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::rc::Rc;
use std::time::Duration;

use actix_web::{test, web, App, HttpResponse};
use common::{get_from, header, CLIENT};
use limiter::{rate_limit, Limiter, ManualClock};

#[rate_limit(
    10,
    per = "1s",
    algorithm = "token_bucket",
    delay = "2s",
    scope = "smooth"
)]
async fn smooth() -> HttpResponse {
    HttpResponse::Ok().finish()
}

#[rate_limit(
    1,
    per = "1s",
    algorithm = "token_bucket",
    delay = "5s",
    scope = "patient"
)]
async fn patient() -> HttpResponse {
    HttpResponse::Ok().finish()
}

const PER_SECOND: limiter::Policy =
    match limiter::Policy::__try_from_attribute(1, 1_000, limiter::Algorithm::TokenBucket, 0) {
        Ok(policy) => match policy.with_delay(Duration::from_secs(5)) {
            Ok(policy) => policy,
            Err(error) => panic!("{}", error.message()),
        },
        Err(error) => panic!("{}", error.message()),
    };
static INLINE: limiter::Limit = limiter::Limit::constant("inline-smooth", PER_SECOND);

/// A bucket with a delay stacked with a plain limit: a request refused for a full queue
/// still says where both stand.
#[rate_limit(
    1,
    per = "1s",
    algorithm = "token_bucket",
    delay = "5s",
    scope = "queued"
)]
#[rate_limit(100, per = "1m", scope = "plenty")]
async fn queued() -> HttpResponse {
    HttpResponse::Ok().finish()
}

/// The same bucket on trial: nothing waits, and each request that would have waited says
/// so in a `warn` event, with how long.
#[rate_limit(
    1,
    per = "1s",
    algorithm = "token_bucket",
    delay = "5s",
    dry_run = true,
    scope = "patient-on-trial"
)]
async fn patient_on_trial() -> HttpResponse {
    HttpResponse::Ok().finish()
}

/// A limit checked inside the handler waits its turn too.
async fn inline(req: actix_web::HttpRequest) -> Result<HttpResponse, limiter::Rejected> {
    limiter::check(&req, &INLINE, "ann").await?;
    Ok(HttpResponse::Ok().finish())
}

fn routes(config: &mut web::ServiceConfig) {
    config
        .route("/smooth", web::get().to(smooth))
        .route("/patient", web::get().to(patient))
        .route("/queued", web::get().to(queued))
        .route("/patient-on-trial", web::get().to(patient_on_trial))
        .route("/inline", web::get().to(inline));
}

/// `limiter::check` with a delay: the second request waits a second, then runs.
#[actix_web::test]
async fn a_limit_checked_in_the_handler_waits_its_turn() {
    tokio::time::pause();
    let clock = ManualClock::starting_at(Duration::from_secs(1_770_000_000));
    let limiter = Limiter::builder().clock(clock.clone()).build();
    let app = test::init_service(App::new().app_data(limiter).configure(routes)).await;
    assert_eq!(get_from(&app, "/inline", CLIENT).await.status(), 200);
    let start = tokio::time::Instant::now();
    let second = get_from(&app, "/inline", CLIENT).await;
    assert_eq!(second.status(), 200);
    assert!(
        on_time(start.elapsed(), Duration::from_secs(1)),
        "{:?}",
        start.elapsed()
    );
}

/// Whether a request ran at `expected`, to the timer's millisecond (tokio's timer fires at
/// the next millisecond at the latest).
fn on_time(at: Duration, expected: Duration) -> bool {
    at >= expected && at <= expected + Duration::from_millis(1)
}

/// 35 requests at one instant at 10/s with a delay of 2 s: 10 at once, 20 spread over the
/// 2 s at the instants their tokens come back (every 100 ms), 5 refused at once.
#[actix_web::test]
async fn a_burst_is_spread_over_the_delay_at_the_exact_instants() {
    tokio::time::pause();
    let clock = ManualClock::starting_at(Duration::from_secs(1_770_000_000));
    let limiter = Limiter::builder().clock(clock.clone()).build();
    let app = Rc::new(test::init_service(App::new().app_data(limiter).configure(routes)).await);
    let start = tokio::time::Instant::now();
    let requests: Vec<_> = (0..35)
        .map(|_| {
            let app = Rc::clone(&app);
            tokio::task::spawn_local(async move {
                let res = get_from(&*app, "/smooth", CLIENT).await;
                let retry = header(res.headers(), "retry-after").map(str::to_owned);
                (res.status().as_u16(), start.elapsed(), retry)
            })
        })
        .collect();
    let answers: Vec<(u16, Duration, Option<String>)> = futures_util::future::join_all(requests)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let mut ran: Vec<Duration> = answers
        .iter()
        .filter(|(status, _, _)| *status == 200)
        .map(|(_, at, _)| *at)
        .collect();
    ran.sort();
    let refused = answers
        .iter()
        .filter(|(status, _, _)| *status == 429)
        .count();
    println!("35 at once at 10/s with delay 2s: ran at {ran:?}, {refused} refused");
    assert_eq!(ran.len(), 30);
    assert_eq!(refused, 5);
    for (i, at) in ran.iter().enumerate() {
        let expected = Duration::from_millis(100 * i.saturating_sub(9) as u64);
        assert!(
            on_time(*at, expected),
            "request {i} ran at {at:?}, not {expected:?}"
        );
    }
    // The refused ones were answered at once, told when they may come back to wait: the
    // 31st's token is 2.1 s away, within the delay 0.1 s from now.
    assert!(answers
        .iter()
        .filter(|(status, _, _)| *status == 429)
        .all(|(_, at, retry)| at.is_zero() && retry.as_deref() == Some("1")));
}

/// A waiting request that goes away gives its place back: the next one waits as long as
/// it would have.
#[actix_web::test]
async fn a_request_that_goes_away_while_it_waits_gives_its_place_back() {
    tokio::time::pause();
    let clock = ManualClock::starting_at(Duration::from_secs(1_770_000_000));
    let limiter = Limiter::builder().clock(clock.clone()).build();
    let app = Rc::new(test::init_service(App::new().app_data(limiter).configure(routes)).await);
    assert_eq!(get_from(&*app, "/patient", CLIENT).await.status(), 200);
    let app2 = Rc::clone(&app);
    let gone =
        tokio::task::spawn_local(
            async move { get_from(&*app2, "/patient", CLIENT).await.status() },
        );
    // It is waiting (a second) when its client goes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    gone.abort();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let start = tokio::time::Instant::now();
    assert_eq!(get_from(&*app, "/patient", CLIENT).await.status(), 200);
    // Its turn is the one the request gone had: a second after the first, not two.
    assert!(
        on_time(start.elapsed(), Duration::from_secs(1)),
        "{:?}",
        start.elapsed()
    );
}

/// With the queue full, one more is refused at once — and its place is given back.
#[actix_web::test]
async fn a_full_queue_refuses_at_once() {
    tokio::time::pause();
    let clock = ManualClock::starting_at(Duration::from_secs(1_770_000_000));
    let limiter = Limiter::builder()
        .clock(clock.clone())
        .most_waiting(2)
        .build();
    let app = Rc::new(test::init_service(App::new().app_data(limiter).configure(routes)).await);
    assert_eq!(get_from(&*app, "/patient", CLIENT).await.status(), 200);
    let waiting: Vec<_> = (0..2)
        .map(|_| {
            let app = Rc::clone(&app);
            tokio::task::spawn_local(
                async move { get_from(&*app, "/patient", CLIENT).await.status() },
            )
        })
        .collect();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let start = tokio::time::Instant::now();
    let full = get_from(&*app, "/patient", CLIENT).await;
    assert_eq!(
        (full.status().as_u16(), start.elapsed()),
        (429, Duration::ZERO)
    );
    assert_eq!(header(full.headers(), "retry-after"), Some("3"));
    for request in waiting {
        assert_eq!(request.await.unwrap(), 200);
    }
    // The refused one's token was given back: the next takes the fourth, 3 s after the
    // first on the limiter's clock (which stands still here), not the fifth.
    let next = tokio::time::Instant::now();
    assert_eq!(get_from(&*app, "/patient", CLIENT).await.status(), 200);
    assert!(
        on_time(next.elapsed(), Duration::from_secs(3)),
        "{:?}",
        next.elapsed()
    );
}

/// The 429 of a full queue carries the RateLimit fields of every limit of the handler, as
/// they stand once its units are back: the delaying bucket has nothing left for the wait it
/// would have had, the minute's limit the 3 of the admitted requests counted, not 4.
#[actix_web::test]
async fn a_full_queue_refusal_says_where_every_limit_stands() {
    tokio::time::pause();
    let clock = ManualClock::starting_at(Duration::from_secs(1_770_000_000));
    let limiter = Limiter::builder()
        .clock(clock.clone())
        .most_waiting(2)
        .build();
    let app =
        Rc::new(test::init_service(App::new().app_data(limiter.clone()).configure(routes)).await);
    assert_eq!(get_from(&*app, "/queued", CLIENT).await.status(), 200);
    let waiting: Vec<_> = (0..2)
        .map(|_| {
            let app = Rc::clone(&app);
            tokio::task::spawn_local(
                async move { get_from(&*app, "/queued", CLIENT).await.status() },
            )
        })
        .collect();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let full = get_from(&*app, "/queued", CLIENT).await;
    assert_eq!(full.status(), 429);
    assert_eq!(header(full.headers(), "retry-after"), Some("3"));
    assert_eq!(
        header(full.headers(), "ratelimit-policy"),
        Some("\"queued\";q=1;w=1, \"plenty\";q=100;w=60")
    );
    assert_eq!(
        header(full.headers(), "ratelimit"),
        Some("\"queued\";r=0;t=3, \"plenty\";r=97;t=60")
    );
    for request in waiting {
        assert_eq!(request.await.unwrap(), 200);
    }
    // A rejection like any other: its client is among those the scope rejects.
    let rejected = limiter.rejected_clients("queued");
    assert_eq!(rejected.iter().map(|c| c.rejections).sum::<u64>(), 1);
}

/// `limiter::check` with the queue full: refused at once, its token given back, and its
/// client among those the limit rejected, as a handler's limit would.
#[actix_web::test]
async fn a_limit_checked_in_the_handler_is_refused_when_the_queue_is_full() {
    tokio::time::pause();
    let clock = ManualClock::starting_at(Duration::from_secs(1_770_000_000));
    let limiter = Limiter::builder()
        .clock(clock.clone())
        .most_waiting(1)
        .build();
    let app =
        Rc::new(test::init_service(App::new().app_data(limiter.clone()).configure(routes)).await);
    assert_eq!(get_from(&*app, "/inline", CLIENT).await.status(), 200);
    let waiting = {
        let app = Rc::clone(&app);
        tokio::task::spawn_local(async move { get_from(&*app, "/inline", CLIENT).await.status() })
    };
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let start = tokio::time::Instant::now();
    let full = get_from(&*app, "/inline", CLIENT).await;
    assert_eq!(
        (full.status().as_u16(), start.elapsed()),
        (429, Duration::ZERO)
    );
    assert_eq!(header(full.headers(), "retry-after"), Some("2"));
    assert_eq!(waiting.await.unwrap(), 200);
    let rejected = limiter.rejected_clients("inline-smooth");
    assert_eq!(rejected.iter().map(|c| c.rejections).sum::<u64>(), 1);
    // Its token came back: the next waits 2 s after the first (the clock stands still), not 3.
    let next = tokio::time::Instant::now();
    assert_eq!(get_from(&*app, "/inline", CLIENT).await.status(), 200);
    assert!(
        on_time(next.elapsed(), Duration::from_secs(2)),
        "{:?}",
        next.elapsed()
    );
}

#[cfg(feature = "redis")]
mod on_redis {
    use super::*;
    use common::redis_server::RedisServer;

    /// The same burst over two instances on one Redis: 10 at once, 20 at their instants,
    /// 5 refused.
    #[actix_web::test]
    async fn a_burst_over_two_instances_is_spread_exactly() {
        let server = RedisServer::start();
        let clock = ManualClock::starting_at(Duration::from_secs(1_770_000_000));
        let mut apps = Vec::new();
        for _ in 0..2 {
            let limiter = common::redis_instance(&server.url(), &clock).await;
            apps.push(Rc::new(
                test::init_service(App::new().app_data(limiter).configure(routes)).await,
            ));
        }
        // The check goes to Redis in real time; the waits are then virtual.
        let requests: Vec<_> = (0..35)
            .map(|i| {
                let app = Rc::clone(&apps[i % 2]);
                tokio::task::spawn_local(async move {
                    let res = get_from(&*app, "/smooth", CLIENT).await;
                    let retry = header(res.headers(), "retry-after").map(str::to_owned);
                    (res.status().as_u16(), retry)
                })
            })
            .collect();
        let answers: Vec<(u16, Option<String>)> = futures_util::future::join_all(requests)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        let ran = answers.iter().filter(|(s, _)| *s == 200).count();
        let refused = answers.iter().filter(|(s, _)| *s == 429).count();
        println!(
            "35 at once over two instances at 10/s with delay 2s: {ran} ran, {refused} refused"
        );
        assert_eq!((ran, refused), (30, 5));
    }
}

/// A dry run of a delay waits for nothing: three requests at one instant all run at once;
/// the second and third would have waited 1 s and 2 s, and a `warn` event says so for each.
#[actix_web::test]
async fn a_dry_run_of_a_delay_waits_for_nothing_and_says_what_would_have_waited() {
    common::events::record();
    tokio::time::pause();
    let clock = ManualClock::starting_at(Duration::from_secs(1_770_000_000));
    let limiter = Limiter::builder().clock(clock.clone()).build();
    let app = test::init_service(App::new().app_data(limiter).configure(routes)).await;
    let before = common::events::warnings("patient-on-trial").len();
    let start = tokio::time::Instant::now();
    for _ in 0..3 {
        let res = get_from(&app, "/patient-on-trial", CLIENT).await;
        assert_eq!(res.status(), 200);
    }
    assert_eq!(start.elapsed(), Duration::ZERO);
    let warned = common::events::warnings("patient-on-trial");
    let new = &warned[before..];
    println!("a dry run of a delay, three at once: {new:?}");
    assert_eq!(new.len(), 2, "{new:?}");
    assert!(
        new.iter().all(|w| w.contains("would have waited")),
        "{new:?}"
    );
    assert!(new[0].contains("wait_ms=1000"), "{new:?}");
    assert!(new[1].contains("wait_ms=2000"), "{new:?}");
}

/// The same for a limit checked inside the handler, the limiter in dry run: the second
/// request runs at once, with the `warn` event of the wait it would have had.
#[actix_web::test]
async fn a_dry_run_of_a_delay_checked_in_the_handler_waits_for_nothing() {
    common::events::record();
    tokio::time::pause();
    let clock = ManualClock::starting_at(Duration::from_secs(1_770_000_000));
    let limiter = Limiter::builder()
        .clock(clock.clone())
        .dry_run(true)
        .build();
    let app = test::init_service(App::new().app_data(limiter).configure(routes)).await;
    let before = common::events::warnings("inline-smooth").len();
    let start = tokio::time::Instant::now();
    for _ in 0..2 {
        assert_eq!(get_from(&app, "/inline", CLIENT).await.status(), 200);
    }
    assert_eq!(start.elapsed(), Duration::ZERO);
    let warned = common::events::warnings("inline-smooth");
    let new = &warned[before..];
    assert_eq!(new.len(), 1, "{new:?}");
    assert!(
        new[0].contains("would have waited") && new[0].contains("wait_ms=1000"),
        "{new:?}"
    );
}

/// Places in the line are budgeted per limit: one limit's flood of waiting requests (its
/// clients each holding places ahead) fills the line, and another limit's request still
/// gets a place — it waits its turn, not a 429.
#[actix_web::test]
async fn one_limits_flood_of_waiting_requests_takes_no_other_limits_place() {
    tokio::time::pause();
    let clock = ManualClock::starting_at(Duration::from_secs(1_770_000_000));
    let limiter = Limiter::builder()
        .clock(clock.clone())
        .most_waiting(4)
        .build();
    let app = Rc::new(test::init_service(App::new().app_data(limiter).configure(routes)).await);
    // Eight clients of `smooth` each spend its 10 and queue 2 ahead: the line is full.
    let mut flood = Vec::new();
    for client in 0..8u8 {
        let from = format!("198.51.100.{client}:1");
        for _ in 0..12 {
            let app = Rc::clone(&app);
            let from = from.clone();
            flood.push(tokio::task::spawn_local(async move {
                get_from(&*app, "/smooth", &from).await.status().as_u16()
            }));
        }
    }
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    // `patient`'s client: its first runs, its second waits a second for its token.
    assert_eq!(get_from(&*app, "/patient", CLIENT).await.status(), 200);
    let second = get_from(&*app, "/patient", CLIENT).await;
    let refused = {
        let mut statuses = Vec::new();
        for request in flood {
            statuses.push(request.await.unwrap());
        }
        statuses.iter().filter(|s| **s == 429).count()
    };
    println!(
        "smooth's flood: {refused} of 96 refused for a full line; patient: {}",
        second.status()
    );
    assert!(refused > 0, "the line was full");
    assert_eq!(second.status(), 200, "patient's request took its place");
}
