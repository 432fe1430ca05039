//! The silent misconfigurations, each reported once, loudly: a `warn` event at its first
//! occurrence that names the mistake and the fix (`tests/no_mistakes.rs`: a correct setup
//! reports none).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

mod common;

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::{test, web, App, HttpServer};
use common::{events, http, peer};
use limiter::{rate_limit, ForwardingHeaders, Limiter};

#[rate_limit(100, per = "1m")]
async fn by_ip() -> &'static str {
    "ok"
}

#[rate_limit(100, per = "1m", key = "user")]
async fn by_user() -> &'static str {
    "ok"
}

async fn get(app_data: Option<Limiter>, path: &str, from: &str, headers: &[(&str, &str)]) -> u16 {
    let mut app = App::new();
    if let Some(limiter) = app_data {
        app = app.app_data(limiter);
    }
    let app = test::init_service(
        app.route("/ip", web::get().to(by_ip))
            .route("/user", web::get().to(by_user)),
    )
    .await;
    let mut req = test::TestRequest::get().uri(path).peer_addr(peer(from));
    for &header in headers {
        req = req.insert_header(header);
    }
    test::call_service(&app, req.to_request())
        .await
        .status()
        .as_u16()
}

#[actix_web::test]
async fn a_built_limiter_that_requests_never_find_is_reported_once() {
    events::record();
    let _forgotten = Limiter::builder().trusted_proxies(["10.0.0.0/8"]).build();
    for _ in 0..3 {
        assert_eq!(get(None, "/ip", "203.0.113.1:1", &[]).await, 200);
    }
    let reported = events::warnings("found none in its app's data");
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert!(reported[0].contains(".app_data(limiter.clone())"));
}

#[rate_limit(1, per = "1m")]
async fn once() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn a_limiter_given_as_an_arc_is_found() {
    events::record();
    // Two apps, each with a limiter of its own behind an `Arc`: each admits its first
    // request. Had the `Arc` not been found, both would count in the global limiter, and
    // the second app's first request would be the second of one budget.
    for _ in 0..2 {
        let app = test::init_service(
            App::new()
                .app_data(Arc::new(Limiter::builder().build()))
                .route("/", web::get().to(once)),
        )
        .await;
        let req = || {
            test::TestRequest::get()
                .uri("/")
                .peer_addr(peer("203.0.113.2:1"))
                .to_request()
        };
        assert_eq!(test::call_service(&app, req()).await.status(), 200);
        assert_eq!(test::call_service(&app, req()).await.status(), 429);
    }
}

#[actix_web::test]
async fn a_user_keyed_handler_without_a_resolver_is_reported_once() {
    events::record();
    let limiter = Limiter::builder().build();
    for _ in 0..3 {
        get(Some(limiter.clone()), "/user", "203.0.113.3:1", &[]).await;
    }
    let reported = events::warnings("key = \"user\"");
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert!(reported[0].contains(".user_key("));
}

#[actix_web::test]
async fn a_proxy_nobody_trusts_is_reported_once() {
    events::record();
    let limiter = Limiter::builder().build();
    for client in ["198.51.100.1", "198.51.100.2"] {
        get(
            Some(limiter.clone()),
            "/ip",
            "10.1.2.3:5000",
            &[("x-forwarded-for", client)],
        )
        .await;
    }
    let reported = events::warnings("no proxy is trusted");
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert!(
        reported[0].contains("trusted_proxies([\"10.1.2.3\"])"),
        "{reported:?}"
    );
}

/// Behind a proxy on loopback the advice is not to trust loopback itself — which would let
/// any process of the host claim any address — but a loopback address of the proxy's own.
#[actix_web::test]
async fn a_proxy_on_loopback_is_not_advised_into_trusting_loopback() {
    events::record();
    let limiter = Limiter::builder().build();
    get(
        Some(limiter.clone()),
        "/ip",
        "127.0.0.1:5000",
        &[("x-forwarded-for", "198.51.100.1")],
    )
    .await;
    let reported = events::warnings("on loopback");
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert!(
        !reported[0].contains("trusted_proxies([\"127.0.0.1\"])")
            && reported[0].contains("trusted_proxies([\"127.0.0.2\"])")
            && reported[0].contains("proxy_bind"),
        "{reported:?}"
    );
}

#[actix_web::test]
async fn a_trusted_proxy_that_never_forwards_is_reported_once() {
    events::record();
    // The proxy writes X-Forwarded-For, the limiter was told to read Forwarded only.
    let limiter = Limiter::builder()
        .trusted_proxies(["10.9.0.0/16"])
        .forwarding_headers(ForwardingHeaders::Forwarded)
        .build();
    // (Other tests' requests through trusted proxies may interleave and restart the count.)
    for i in 0..400 {
        let client = format!("198.51.100.{}", i % 200);
        get(
            Some(limiter.clone()),
            "/ip",
            "10.9.0.1:5000",
            &[("x-forwarded-for", &client)],
        )
        .await;
    }
    let reported = events::warnings("without the forwarding header the limiter reads");
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert!(reported[0].contains(".forwarding_headers("));
}

/// Under `ForwardingHeaders::Both` (strict), contradicting headers get a 400, reported once.
#[actix_web::test]
async fn contradicting_forwarding_headers_are_reported_once() {
    events::record();
    let limiter = Limiter::builder()
        .trusted_proxies(["10.8.0.0/16"])
        .forwarding_headers(ForwardingHeaders::Both)
        .build();
    for forged in ["for=6.6.6.1", "for=6.6.6.2"] {
        let status = get(
            Some(limiter.clone()),
            "/ip",
            "10.8.0.1:5000",
            &[("forwarded", forged), ("x-forwarded-for", "198.51.100.9")],
        )
        .await;
        assert_eq!(status, 400);
    }
    let reported = events::warnings("and got a 400");
    assert_eq!(reported.len(), 1, "{reported:?}");
}

#[actix_web::test]
async fn limiters_built_per_worker_are_reported_once() {
    events::record();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // The mistake: built inside the factory, so each of the two workers has its own store.
    let server = HttpServer::new(|| {
        App::new()
            .app_data(Limiter::builder().build())
            .route("/ip", web::get().to(by_ip))
    })
    .workers(2)
    .listen(listener)
    .unwrap()
    .run();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    // Requests on fresh connections, until both workers have served some: the report comes
    // when a second worker's limiter, with a store of its own, serves one.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while events::warnings("each building a `Limiter`").is_empty() {
        assert!(std::time::Instant::now() < deadline, "no report");
        let requests: Vec<_> = (0..8)
            .map(|_| actix_web::rt::spawn(async move { http(addr, "GET", "/ip", "").await }))
            .collect();
        for request in requests {
            request.await.unwrap();
        }
    }
    handle.stop(true).await;
    let reported = events::warnings("each building a `Limiter`");
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert!(reported[0].contains("outside the closure"));
}
