//! A correct setup reports nothing: every check of `tests/mistakes.rs` stays silent on it.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

mod common;

use std::net::TcpListener;

use actix_web::{web, App, HttpServer};
use common::{events, http};
use limiter::{rate_limit, Limiter};

#[rate_limit(100, per = "1m")]
async fn by_ip() -> &'static str {
    "ok"
}

#[rate_limit(100, per = "1m", key = "user")]
async fn by_user() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn a_correct_setup_reports_nothing() {
    events::record();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    // Built once, outside the factory; a user resolver; loopback is the trusted proxy.
    let limiter = Limiter::builder()
        .user_key(|req| {
            req.headers()
                .get("x-user")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })
        .trusted_proxies(["127.0.0.1"])
        .build();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(limiter.clone())
            .route("/ip", web::get().to(by_ip))
            .route("/user", web::get().to(by_user))
    })
    .workers(2)
    .listen(listener)
    .unwrap()
    .run();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    for path in ["/ip", "/user", "/ip", "/user"] {
        assert_eq!(http(addr, "GET", path, "").await.0, 200);
    }
    handle.stop(true).await;
    assert_eq!(events::all_warnings(), Vec::<String>::new());
}
