//! One budget across frameworks: an actix instance and an axum instance of one service, on
//! one Redis, over real HTTP on loopback, count one limit — a service migrating from one to
//! the other, or running both, keeps its clients' budgets. Each instance has its own
//! runtime and its own connection to Redis, as two processes would.
#![cfg(feature = "redis")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use actix_web::{web, HttpResponse};
use common::redis_server::RedisServer;

/// The same limit on both front ends: 100 an hour per client, by address; a token bucket
/// and a fixed window beside it.
mod on_actix {
    #[limiter::rate_limit(100, per = "1h", scope = "migrating")]
    pub(crate) async fn sliding() -> actix_web::HttpResponse {
        actix_web::HttpResponse::Ok().body("actix")
    }

    #[limiter::rate_limit(100, per = "1h", algorithm = "fixed_window", scope = "migrating_fixed")]
    pub(crate) async fn fixed() -> actix_web::HttpResponse {
        actix_web::HttpResponse::Ok().body("actix")
    }

    #[limiter::rate_limit(
        3600,
        per = "1h",
        algorithm = "token_bucket",
        burst = 100,
        scope = "migrating_bucket"
    )]
    pub(crate) async fn bucket() -> actix_web::HttpResponse {
        actix_web::HttpResponse::Ok().body("actix")
    }
}

mod on_axum {
    #[limiter_axum::rate_limit(100, per = "1h", scope = "migrating")]
    pub(crate) async fn sliding() -> &'static str {
        "axum"
    }

    #[limiter_axum::rate_limit(
        100,
        per = "1h",
        algorithm = "fixed_window",
        scope = "migrating_fixed"
    )]
    pub(crate) async fn fixed() -> &'static str {
        "axum"
    }

    #[limiter_axum::rate_limit(
        3600,
        per = "1h",
        algorithm = "token_bucket",
        burst = 100,
        scope = "migrating_bucket"
    )]
    pub(crate) async fn bucket() -> &'static str {
        "axum"
    }
}

fn actix_routes(config: &mut web::ServiceConfig) {
    config
        .route("/sliding", web::get().to(on_actix::sliding))
        .route("/fixed", web::get().to(on_actix::fixed))
        .route("/bucket", web::get().to(on_actix::bucket))
        .route("/", web::get().to(|| async { HttpResponse::Ok().finish() }));
}

/// An axum instance on a runtime and thread of its own, counting on the Redis at `url`;
/// its address. It serves until the process ends.
fn axum_instance(url: String) -> SocketAddr {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let store = limiter::RedisStore::connect(&url).await.unwrap();
            let limiter = limiter_axum::Limiter::builder()
                .store(store)
                .store_timeout(Duration::from_secs(2))
                .build();
            let app = axum::Router::new()
                .route("/sliding", axum::routing::get(on_axum::sliding))
                .route("/fixed", axum::routing::get(on_axum::fixed))
                .route("/bucket", axum::routing::get(on_axum::bucket))
                .layer(axum::Extension(limiter));
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            sender.send(listener.local_addr().unwrap()).unwrap();
            let app = app.into_make_service_with_connect_info::<SocketAddr>();
            axum::serve(listener, app).await.unwrap();
        });
    });
    receiver.recv_timeout(Duration::from_secs(20)).unwrap()
}

/// An actix instance of two workers counting on the Redis at `url`; its address.
async fn actix_instance(url: &str) -> (SocketAddr, actix_web::dev::ServerHandle) {
    let store = limiter::RedisStore::connect(url).await.unwrap();
    let limiter = limiter::Limiter::builder()
        .store(store)
        .store_timeout(Duration::from_secs(2))
        .build();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = actix_web::HttpServer::new(move || {
        actix_web::App::new()
            .app_data(limiter.clone())
            .configure(actix_routes)
    })
    .workers(2)
    .listen(listener)
    .unwrap()
    .run();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    (addr, handle)
}

/// `n` requests for `path`, all at once, the `i`th to `instances[i % 2]`; how many each
/// instance admitted, and the statuses seen.
async fn flood(instances: [SocketAddr; 2], path: &str, n: usize) -> ([usize; 2], Vec<u16>) {
    let requests = (0..n).map(|i| {
        let addr = instances[i % 2];
        let head = format!("GET {path} HTTP/1.1");
        async move { (i % 2, common::request(addr, &head, "").await.0) }
    });
    let answers = futures_util::future::join_all(requests).await;
    let mut admitted = [0, 0];
    let mut statuses = Vec::new();
    for (instance, status) in answers {
        assert!(status == 200 || status == 429, "{path}: {status}");
        admitted[instance] += usize::from(status == 200);
        statuses.push(status);
    }
    (admitted, statuses)
}

#[actix_web::test]
async fn an_actix_and_an_axum_instance_count_one_budget() {
    let server = RedisServer::start();
    let (actix, handle) = actix_instance(&server.url()).await;
    let axum = axum_instance(server.url());
    for path in ["/sliding", "/fixed", "/bucket"] {
        let (admitted, _) = flood([actix, axum], path, 400).await;
        println!(
            "{path}: 400 at once over actix and axum on one Redis: {} admitted ({} by actix, {} by axum), of 100",
            admitted[0] + admitted[1],
            admitted[0],
            admitted[1]
        );
        // One budget: each instance alone would admit 100 of its 200. How the 100 fall
        // between them is the machine's timing (on a busy host one instance may answer
        // first and take them all; the other's 200 refusals are then the shared budget's).
        assert_eq!(admitted[0] + admitted[1], 100, "{path}");
    }
    handle.stop(false).await;
}

#[actix_web::test]
async fn a_client_keeps_its_budget_when_the_service_moves_to_axum() {
    let server = RedisServer::start();
    let (actix, handle) = actix_instance(&server.url()).await;
    // 60 on actix, one after another, then the service moves: 40 left on axum.
    for _ in 0..60 {
        assert_eq!(
            common::request(actix, "GET /sliding HTTP/1.1", "").await.0,
            200
        );
    }
    handle.stop(false).await;
    let axum = axum_instance(server.url());
    let mut admitted = 0;
    let mut last = String::new();
    for _ in 0..60 {
        let (status, raw) = common::request(axum, "GET /sliding HTTP/1.1", "").await;
        admitted += usize::from(status == 200);
        last = raw;
    }
    println!("after 60 on actix, axum admitted {admitted} of 60 (the budget is 100)");
    assert_eq!(admitted, 40);
    let last = last.to_ascii_lowercase();
    assert!(last.contains("ratelimit: \"migrating\";r=0;"), "{last}");
    assert!(last.contains("retry-after: "), "{last}");
}
