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
