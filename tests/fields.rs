//! What the RateLimit fields promise a client, checked against what it can send. For a token
//! bucket (60 per minute, burst 10): the policy advertises its rate, `r` the tokens in the
//! bucket; the client can send `r` at once, then one per second — up to `q + burst − 1` in a
//! window of `w` seconds.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::time::Duration;

use actix_web::{test, web, App};
use common::{header, peer};
use limiter::{rate_limit, Limiter, ManualClock};

#[rate_limit(
    60,
    per = "1m",
    algorithm = "token_bucket",
    burst = 10,
    scope = "bucket"
)]
async fn bucket() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn a_token_bucket_advertises_its_rate_and_its_tokens() {
    let clock = ManualClock::new();
    let app = test::init_service(
        App::new()
            .app_data(Limiter::builder().clock(clock.clone()).build())
            .route("/", web::get().to(bucket)),
    )
    .await;
    let call = || {
        test::TestRequest::get()
            .uri("/")
            .peer_addr(peer("203.0.113.7:1"))
            .to_request()
    };
    let first = test::call_service(&app, call()).await;
    assert_eq!(
        header(first.headers(), "ratelimit-policy"),
        Some("\"bucket\";q=60;w=60")
    );
    // Nine tokens left, the next back within a second.
    assert_eq!(
        header(first.headers(), "ratelimit"),
        Some("\"bucket\";r=9;t=1")
    );
    let mut admitted = 1;
    // `r` is what can be sent at once: nine more, then a 429 for one second.
    for _ in 0..9 {
        assert_eq!(test::call_service(&app, call()).await.status(), 200);
        admitted += 1;
    }
    let refused = test::call_service(&app, call()).await;
    assert_eq!(refused.status(), 429);
    assert_eq!(header(refused.headers(), "retry-after"), Some("1"));
    // Then one per second: 10 + 59 = 69 within the first 60 seconds, q + burst − 1.
    for _ in 1..60 {
        clock.advance(Duration::from_secs(1));
        assert_eq!(test::call_service(&app, call()).await.status(), 200);
        admitted += 1;
        assert_eq!(test::call_service(&app, call()).await.status(), 429);
    }
    assert_eq!(admitted, 60 + 10 - 1);
}

#[rate_limit(1, per = "1h", scope = "flood_a")]
async fn flood_a() -> &'static str {
    "ok"
}

#[rate_limit(2, per = "1h", scope = "flood_b")]
async fn flood_b() -> &'static str {
    "ok"
}

/// A flood's 429s are copied from the last one a worker built when they would be written
/// the same (`last_rejection.rs`): each is still the one its request would get. On one
/// thread, interleaved: two handlers of one limiter, a limiter with another message and the
/// IETF problem type over the same handler, and the same client a second later.
#[actix_web::test]
async fn a_floods_copied_rejections_are_each_the_one_it_would_get() {
    let clock = ManualClock::new();
    let plain = Limiter::builder().clock(clock.clone()).build();
    let other = Limiter::builder()
        .clock(clock.clone())
        .rejection_message("Slow down.")
        .quota_exceeded_problems(true)
        .legacy_headers(true)
        .build();
    let app = test::init_service(
        App::new()
            .app_data(plain)
            .route("/a", web::get().to(flood_a))
            .route("/b", web::get().to(flood_b)),
    )
    .await;
    let other_app = test::init_service(
        App::new()
            .app_data(other)
            .route("/a", web::get().to(flood_a)),
    )
    .await;
    // Status, every header field sorted, and the body.
    type Seen = (u16, Vec<(String, String)>, String);
    async fn get<S>(app: &S, uri: &str) -> Seen
    where
        S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse,
            Error = actix_web::Error,
        >,
    {
        let req = test::TestRequest::get()
            .uri(uri)
            .peer_addr(peer("203.0.113.9:1"))
            .to_request();
        let res = test::call_service(app, req).await;
        let status = res.status().as_u16();
        let mut headers: Vec<(String, String)> = res
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap().to_string()))
            .collect();
        headers.sort();
        let body = String::from_utf8(test::read_body(res).await.to_vec()).unwrap();
        (status, headers, body)
    }
    let field = |seen: &Seen, name: &str| {
        seen.1
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    assert_eq!(get(&app, "/a").await.0, 200);
    assert_eq!(get(&app, "/b").await.0, 200);
    assert_eq!(get(&app, "/b").await.0, 200);
    assert_eq!(get(&other_app, "/a").await.0, 200);
    // Built, then built and kept, then copied: all one response.
    let a: Vec<Seen> = vec![
        get(&app, "/a").await,
        get(&app, "/a").await,
        get(&app, "/a").await,
    ];
    assert_eq!(a[0].0, 429);
    assert!(a.iter().all(|seen| *seen == a[0]), "{a:#?}");
    assert_eq!(field(&a[0], "retry-after"), "3600");
    assert_eq!(field(&a[0], "ratelimit"), "\"flood_a\";r=0;t=3600");
    // Another handler's, then the first again (copied while it is the one kept).
    let b = [
        get(&app, "/b").await,
        get(&app, "/b").await,
        get(&app, "/b").await,
    ];
    assert!(b.iter().all(|seen| *seen == b[0]), "{b:#?}");
    assert_eq!(field(&b[0], "ratelimit-policy"), "\"flood_b\";q=2;w=3600");
    assert_eq!(field(&b[0], "ratelimit"), "\"flood_b\";r=0;t=3600");
    assert_eq!(get(&app, "/a").await, a[0]);
    // Another limiter over the same handler, with the same numbers: its own message, type
    // and legacy fields, never the first limiter's response.
    let other: Vec<Seen> = vec![
        get(&other_app, "/a").await,
        get(&other_app, "/a").await,
        get(&other_app, "/a").await,
    ];
    assert!(other.iter().all(|seen| *seen == other[0]), "{other:#?}");
    assert!(other[0].2.contains("Slow down.") && other[0].2.contains("quota-exceeded"));
    assert_eq!(field(&other[0], "x-ratelimit-remaining"), "0");
    assert_ne!(other[0], a[0]);
    assert_eq!(get(&app, "/a").await, a[0]);
    // A second later: one second less to wait, in the field and in the body.
    clock.advance(Duration::from_secs(1));
    let later = [
        get(&app, "/a").await,
        get(&app, "/a").await,
        get(&app, "/a").await,
    ];
    assert!(later.iter().all(|seen| *seen == later[0]), "{later:#?}");
    assert_eq!(field(&later[0], "retry-after"), "3599");
    assert_eq!(field(&later[0], "ratelimit"), "\"flood_a\";r=0;t=3599");
    assert!(
        later[0].2.contains("\"retry_after\":3599"),
        "{}",
        later[0].2
    );
}
