//! `jitter = "5s"`: clients refused at one instant are told to come back at different
//! instants, never earlier than the limit admits them.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use actix_web::{test, web, App, HttpResponse};
use common::{get_from, header};
use limiter::{rate_limit, Limiter, ManualClock, Policy, RateLimit};

#[rate_limit(1, per = "10s", jitter = "5s")]
async fn jittered() -> HttpResponse {
    HttpResponse::Ok().finish()
}

/// 200 clients refused at the same instant: their Retry-After spread over 10 to 15 s, each
/// with `t` equal to it, and every client that waits it out admitted.
#[actix_web::test]
async fn rejections_at_one_instant_come_back_apart() {
    let clock = ManualClock::new();
    let limiter = Limiter::builder().clock(clock.clone()).build();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/", web::get().to(jittered))
            .service(
                web::scope("/api")
                    .wrap(
                        RateLimit::new(Policy::new(1, Duration::from_secs(10)).unwrap())
                            .scope("jittered-api")
                            .jitter(Duration::from_secs(5)),
                    )
                    .route("", web::get().to(HttpResponse::Ok)),
            ),
    )
    .await;
    for path in ["/", "/api"] {
        let mut spread = BTreeMap::new();
        for client in 0..200u32 {
            let from = format!("10.1.{}.{}:1", client / 256, client % 256);
            assert_eq!(get_from(&app, path, &from).await.status(), 200);
            let refused = get_from(&app, path, &from).await;
            assert_eq!(refused.status(), 429);
            let retry: u64 = header(refused.headers(), "retry-after")
                .unwrap()
                .parse()
                .unwrap();
            let fields = header(refused.headers(), "ratelimit").unwrap();
            assert!(
                fields.ends_with(&format!(";t={retry}")),
                "{fields} vs {retry}"
            );
            *spread.entry(retry).or_insert(0) += 1;
        }
        println!("{path}: Retry-After of 200 clients refused at one instant: {spread:?}");
        assert!(spread.keys().all(|s| (10..=15).contains(s)), "{spread:?}");
        assert!(spread.len() >= 4, "{spread:?}");
    }
    // The route table says so.
    let table = limiter::routes().to_string();
    assert!(table.contains("jitter=5000ms"), "{table}");
}
