//! Over real HTTP: a server with several workers sharing one limiter, and the `basic`
//! example run as a process.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

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

/// The basic example on a free port: its address, and the process (killed when dropped).
/// A port is chosen, released and given to the example, so another test's server may take
/// it first: then the example cannot bind it, or what answers is not the example's page,
/// and another port is tried.
async fn basic_example() -> (SocketAddr, Running) {
    for _ in 0..5 {
        let port = {
            let probe = TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let mut server = Running(
            Command::new(example("basic"))
                .env("PORT", port.to_string())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("cargo test builds the basic example"),
        );
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut exited = false;
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            assert!(
                Instant::now() < deadline,
                "the example did not start listening"
            );
            if server.0.try_wait().ok().flatten().is_some() {
                exited = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if exited {
            continue;
        }
        let (status, page) = http(addr, "GET", "/", "").await;
        if status == 200 && page.contains("curl") {
            return (addr, server);
        }
    }
    panic!("the basic example did not serve on any of five free ports");
}

#[actix_web::test]
async fn the_basic_example_answers_five_200s_then_a_429() {
    let (addr, _server) = basic_example().await;
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

#[rate_limit(1, per = "1h")]
async fn sign_in(_form: web::Form<std::collections::HashMap<String, String>>) -> &'static str {
    "ok"
}

/// Sends `count` POSTs with a `size`-byte body on one keep-alive connection; returns each
/// status, and whether the server closed the connection (after which no more are sent).
async fn keep_alive_posts(addr: SocketAddr, count: usize, size: usize) -> (Vec<u16>, bool) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let body = format!("user={}", "a".repeat(size - 5));
        let request = format!(
            "POST /sign-in HTTP/1.1\r\nHost: test\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let mut statuses = Vec::new();
        for _ in 0..count {
            if stream.write_all(request.as_bytes()).await.is_err() {
                return (statuses, true);
            }
            let mut response = Vec::new();
            let mut buf = [0u8; 4096];
            let (head_end, length) = loop {
                let n = stream.read(&mut buf).await.unwrap_or(0);
                if n == 0 {
                    return (statuses, true);
                }
                response.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&response).to_ascii_lowercase();
                if let Some(end) = text.find("\r\n\r\n") {
                    let length: usize = text[..end]
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length: "))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    break (end + 4, length);
                }
            };
            while response.len() < head_end + length {
                let n = stream.read(&mut buf).await.unwrap_or(0);
                if n == 0 {
                    break;
                }
                response.extend_from_slice(&buf[..n]);
            }
            let head = String::from_utf8_lossy(&response[..head_end]).to_ascii_lowercase();
            statuses.push(head.split(' ').nth(1).unwrap().parse().unwrap());
            if head.contains("connection: close") {
                return (statuses, true);
            }
        }
        (statuses, false)
    };
    tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .expect("the server answered within 10 s")
}

async fn sign_in_server(limiter: Limiter) -> (SocketAddr, actix_web::dev::ServerHandle) {
    common::serve(limiter, |routes| {
        routes.route("/sign-in", web::post().to(sign_in));
    })
}

#[actix_web::test]
async fn a_rejected_post_with_a_small_body_keeps_its_connection() {
    let (addr, handle) = sign_in_server(Limiter::builder().build()).await;
    // One admitted, then nine rejected, all on one connection: the small bodies of the
    // rejected ones are read and dropped (not parsed), so the connection stays open.
    let (statuses, closed) = keep_alive_posts(addr, 10, 200).await;
    assert_eq!(statuses[0], 200);
    assert_eq!(&statuses[1..], [429; 9]);
    assert!(!closed);
    // A body above the limit is not read: the connection closes after its 429.
    let (statuses, closed) = keep_alive_posts(addr, 3, 32 * 1024).await;
    assert_eq!((statuses.as_slice(), closed), (&[429u16][..], true));
    handle.stop(true).await;

    // With the drain turned off, every rejected POST costs its connection.
    let (addr, handle) = sign_in_server(Limiter::builder().keep_alive_body_limit(0).build()).await;
    let (statuses, closed) = keep_alive_posts(addr, 3, 200).await;
    assert_eq!((statuses.as_slice(), closed), (&[200u16, 429][..], true));
    handle.stop(true).await;
}
