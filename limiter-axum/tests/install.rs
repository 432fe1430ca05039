//! A limiter installed as the process's own (`limiter_axum::install`): every request with
//! no `Extension(Limiter)` is counted by it, with its settings. Alone in its test binary:
//! the process's limiter is made once.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Request;
use axum::routing::get;
use axum::Router;
use limiter_axum::{rate_limit, Limiter, ManualClock};
use tower::ServiceExt;

#[rate_limit(3, per = "1m", scope = "installed")]
async fn limited() -> &'static str {
    "ok"
}

/// Status and `X-RateLimit-Remaining` of a request from `peer`.
async fn ask(router: &Router, peer: &str) -> (u16, Option<String>) {
    let mut req = Request::get("/").body(Body::empty()).unwrap();
    let peer: SocketAddr = peer.parse().unwrap();
    req.extensions_mut().insert(ConnectInfo(peer));
    let res = router.clone().oneshot(req).await.unwrap();
    let remaining = res
        .headers()
        .get("x-ratelimit-remaining")
        .map(|v| v.to_str().unwrap().to_string());
    (res.status().as_u16(), remaining)
}

#[tokio::test]
async fn requests_without_an_extension_are_counted_by_the_installed_limiter() {
    let clock = ManualClock::new();
    // Legacy fields on, which the default limiter leaves off: they show whose count it is.
    let limiter = Limiter::builder()
        .clock(clock.clone())
        .legacy_headers(true)
        .build();
    limiter_axum::install(limiter.clone()).expect("nothing installed yet");
    assert_eq!(Limiter::global().identity(), limiter.identity());

    let router = Router::new().route("/", get(limited));
    let mut got = Vec::new();
    for _ in 0..4 {
        got.push(ask(&router, "203.0.113.7:1").await);
    }
    let remaining = |n: &str| Some(n.to_string());
    assert_eq!(
        got,
        [
            (200, remaining("2")),
            (200, remaining("1")),
            (200, remaining("0")),
            (429, remaining("0")),
        ]
    );
    // Its clock: a minute later the client is admitted again.
    clock.advance(Duration::from_secs(60));
    assert_eq!(ask(&router, "203.0.113.7:1").await.0, 200);

    // The process has its limiter: another is handed back.
    let other = Limiter::builder().build();
    let refused = limiter_axum::install(other.clone()).expect_err("one installed already");
    assert_eq!(refused.identity(), other.identity());
    assert_eq!(Limiter::global().identity(), limiter.identity());
}
