//! Over real HTTP: a server with several workers sharing one limiter, and the `basic`
//! example run as a process.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

mod common;

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use actix_web::{web, App, HttpServer};
use common::http;
use limiter::{rate_limit, Limiter};

#[rate_limit(100, per = "1m")]
async fn limited() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn three_hundred_concurrent_requests_against_100_admit_exactly_100() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let limiter = Limiter::builder().build();
    let server = HttpServer::new(move || {
        App::new()
            .app_data(limiter.clone())
            .route("/", web::get().to(limited))
    })
    .workers(2)
    .listen(listener)
    .unwrap()
    .run();
    let handle = server.handle();
    actix_web::rt::spawn(server);

    let requests: Vec<_> = (0..300)
        .map(|_| actix_web::rt::spawn(async move { http(addr, "GET", "/", "").await.0 }))
        .collect();
    let mut statuses = Vec::new();
    for request in requests {
        statuses.push(request.await.unwrap());
    }
    handle.stop(true).await;
    assert_eq!(statuses.iter().filter(|&&s| s == 200).count(), 100);
    assert_eq!(statuses.iter().filter(|&&s| s == 429).count(), 200);
}

/// The example binary, which `cargo test` builds next to the test binaries.
fn example(name: &str) -> std::path::PathBuf {
    let mut dir = std::env::current_exe().unwrap();
    dir.pop();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir.join("examples").join(name)
}

/// Kills the example when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[actix_web::test]
async fn the_basic_example_answers_five_200s_then_a_429() {
    let port = {
        let probe = TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port()
    };
    let _server = Running(
        Command::new(example("basic"))
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .spawn()
            .expect("cargo test builds the basic example"),
    );
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        assert!(
            Instant::now() < deadline,
            "the example did not start listening"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (status, page) = http(addr, "GET", "/", "").await;
    assert_eq!(status, 200);
    assert!(page.contains("curl"));
    let mut statuses = Vec::new();
    for _ in 0..6 {
        statuses.push(http(addr, "POST", "/login", "user=ann&password=x").await);
    }
    let codes: Vec<u16> = statuses.iter().map(|(status, _)| *status).collect();
    assert_eq!(codes, [200, 200, 200, 200, 200, 429]);
    let rejected = statuses[5].1.to_ascii_lowercase();
    assert!(rejected.contains("retry-after: "), "{rejected}");
    assert!(rejected.contains("ratelimit: \"login\";r=0;"), "{rejected}");
}
