//! §4 of the attacks: a rejected request never holds a connection — not with a body sent
//! a few bytes a second, not with a chunked body of ten megabytes, not by waiting for a
//! `100 Continue`. Over real sockets.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use actix_web::{web, HttpResponse};
use limiter::{
    concurrency_limit, rate_limit, ConcurrencyLimit, KeySpec, Limiter, Policy, RateLimit,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::harness::{client, exchange, read_response, Server};

#[rate_limit(1, per = "1h", scope = "bodies-login")]
async fn login(body: web::Bytes) -> HttpResponse {
    HttpResponse::Ok().body(format!("{} bytes", body.len()))
}

/// One upload at a time for everyone, one an hour per user.
#[concurrency_limit(1, key = "global", scope = "bodies-upload-slot")]
#[rate_limit(1, per = "1h", key = "header:x-user", scope = "bodies-upload")]
async fn upload(body: web::Bytes) -> HttpResponse {
    HttpResponse::Ok().body(format!("{} bytes", body.len()))
}

/// The same, with the one slot taken by a middleware around the handler's rate limit.
#[rate_limit(1, per = "1h", key = "header:x-user", scope = "bodies-wrapped-upload")]
async fn wrapped_upload(body: web::Bytes) -> HttpResponse {
    HttpResponse::Ok().body(format!("{} bytes", body.len()))
}

/// The login behind a `RateLimit` middleware instead: refused before any handler runs.
async fn unlimited_login(body: web::Bytes) -> HttpResponse {
    HttpResponse::Ok().body(format!("{} bytes", body.len()))
}

/// The paths of the login, whose one request an hour [`spent`] spends: the handler's own
/// limit, and a middleware's.
const LOGINS: [&str; 2] = ["/login", "/wrapped/login"];

fn routes(config: &mut web::ServiceConfig) {
    let hourly = Policy::new(1, Duration::from_secs(3_600)).unwrap();
    config
        .route("/login", web::post().to(login))
        .service(
            web::scope("/wrapped/login")
                .wrap(RateLimit::new(hourly).scope("bodies-wrapped-login"))
                .route("", web::post().to(unlimited_login)),
        )
        .route("/upload", web::post().to(upload))
        .service(
            web::scope("/wrapped")
                .wrap(
                    ConcurrencyLimit::new(1)
                        .key(KeySpec::Global)
                        .scope("bodies-wrapped-slot"),
                )
                .route("/upload", web::post().to(wrapped_upload)),
        );
}

/// A server whose one login is spent, at each of [`LOGINS`]: every request there from here
/// on is rejected.
fn spent() -> Server {
    let server = Server::start(Limiter::builder().build(), 2, routes);
    client().block_on(async {
        for path in LOGINS {
            let request = format!(
                "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let first = exchange(server.addr, request.as_bytes(), Duration::from_secs(5))
                .await
                .expect("answered");
            assert_eq!(first.status, 200, "{path}");
        }
    });
    server
}

/// The status of the response read from `reader`, once its head is in.
async fn read_half(reader: &mut tokio::net::tcp::OwnedReadHalf) -> Option<u16> {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 1024];
    while !bytes.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = reader.read(&mut buf).await.ok()?;
        if n == 0 {
            return None;
        }
        bytes.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&bytes)
        .split(' ')
        .nth(1)?
        .parse()
        .ok()
}

/// Whether the server closes the connection of `reader` within `limit`.
async fn closed_half_within(reader: &mut tokio::net::tcp::OwnedReadHalf, limit: Duration) -> bool {
    let mut buf = [0u8; 1024];
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, reader.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

/// Whether the server closes `stream` within `limit` (reads reach the end).
async fn closed_within(stream: &mut TcpStream, limit: Duration) -> bool {
    let mut buf = [0u8; 1024];
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

/// `Content-Length: 16000` sent at 5 bytes a second: the 429 comes within about the body
/// allowance (200 ms), and the connection is closed after it. (It got no answer after
/// 20 s: the body was drained first, with no deadline.) Then 200 such connections at once:
/// all answered and closed.
#[test]
fn a_slow_body_gets_its_429_at_once_and_loses_its_connection() {
    let server = spent();
    let rt = client();
    for path in LOGINS {
        slow_body_on(server.addr, &rt, path, "");
    }

    let (answered, closed, took) = rt.block_on(async {
        let started = Instant::now();
        let tasks: Vec<_> = (0..200)
            .map(|_| {
                let addr = server.addr;
                tokio::spawn(async move {
                    let mut stream = TcpStream::connect(addr).await.unwrap();
                    stream
                        .write_all(
                            b"POST /login HTTP/1.1\r\nHost: t\r\nContent-Length: 16000\r\n\r\nhi",
                        )
                        .await
                        .unwrap();
                    let response =
                        tokio::time::timeout(Duration::from_secs(3), read_response(&mut stream))
                            .await
                            .ok()
                            .flatten();
                    let answered = response.is_some_and(|r| r.status == 429);
                    (
                        answered,
                        closed_within(&mut stream, Duration::from_secs(2)).await,
                    )
                })
            })
            .collect();
        let (mut answered, mut closed) = (0, 0);
        for task in tasks {
            let (a, c) = task.await.unwrap();
            answered += usize::from(a);
            closed += usize::from(c);
        }
        (answered, closed, started.elapsed())
    });
    println!("200 slow bodies at once: {answered} answered 429, {closed} closed, in {took:?}");
    assert_eq!((answered, closed), (200, 200));
}

/// A rejected POST to `path` (with the header lines `headers`) with `Content-Length:
/// 16000` sent at 5 bytes a second: its 429 within a second, and its connection closed.
pub(crate) fn slow_body_on(
    addr: SocketAddr,
    rt: &tokio::runtime::Runtime,
    path: &str,
    headers: &str,
) {
    let (took, closed) = rt.block_on(async {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: t\r\n{headers}Content-Length: 16000\r\n\r\nhello"
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let started = Instant::now();
        let (reader, mut writer) = stream.into_split();
        let trickle = tokio::spawn(async move {
            for _ in 0..4 {
                tokio::time::sleep(Duration::from_secs(1)).await;
                if writer.write_all(b"hello").await.is_err() {
                    return;
                }
            }
        });
        let mut reader = reader;
        let response = tokio::time::timeout(Duration::from_secs(3), read_half(&mut reader))
            .await
            .expect("a 429 within 3 s")
            .expect("a response");
        let took = started.elapsed();
        assert_eq!(response, 429);
        let closed = closed_half_within(&mut reader, Duration::from_secs(2)).await;
        trickle.abort();
        (took, closed)
    });
    println!("{path}: a body at 5 bytes/s: 429 after {took:?}, connection closed: {closed}");
    assert!(took < Duration::from_secs(1), "{path}: {took:?}");
    assert!(closed, "{path}");
}

/// A request refused for concurrency — the one slot held by an upload whose body trickles
/// in — sending a slow body of its own: the 429 comes within a second and its connection
/// closes, as for any refusal. Whether the slot is the handler's own
/// (`#[concurrency_limit]`) or a `ConcurrencyLimit` middleware's around it. (The user's
/// first upload: only the slot can refuse it.)
#[test]
fn a_request_refused_for_concurrency_does_not_wait_for_its_body() {
    let server = Server::start(Limiter::builder().build(), 2, routes);
    let rt = client();
    for path in ["/upload", "/wrapped/upload"] {
        let (holder, trickle) = rt.block_on(async {
            let mut stream = TcpStream::connect(server.addr).await.unwrap();
            let head = format!(
                "POST {path} HTTP/1.1\r\nHost: t\r\nX-User: alice\r\n\
                 Content-Length: 16000\r\n\r\nhello"
            );
            stream.write_all(head.as_bytes()).await.unwrap();
            let (reader, mut writer) = stream.into_split();
            let trickle = tokio::spawn(async move {
                for _ in 0..10 {
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    if writer.write_all(b"hello").await.is_err() {
                        return;
                    }
                }
            });
            // Its head read: the slot is taken.
            tokio::time::sleep(Duration::from_millis(200)).await;
            (reader, trickle)
        });
        slow_body_on(server.addr, &rt, path, "X-User: bob\r\n");
        trickle.abort();
        drop(holder);
    }
}

/// A chunked body of 10 MB, sent at about 1.3 MB/s, on a rejected request is not read: the
/// 429 comes at once, and the connection closes within actix's linger after it (its
/// `client_disconnect_timeout`, 1 s by default, during which what arrives is dropped so
/// that the 429 is not lost to a reset), having taken in little of it. (It was read in
/// full: eight seconds of a connection.)
#[test]
fn a_chunked_body_is_not_read() {
    let server = spent();
    let rt = client();
    for path in LOGINS {
        chunked_body_on(server.addr, &rt, path);
    }
}

/// A rejected POST to `path` with a chunked body of 10 MB sent at about 1.3 MB/s: its 429,
/// the connection held under 3 s, and under 4 MiB of it taken in.
pub(crate) fn chunked_body_on(addr: SocketAddr, rt: &tokio::runtime::Runtime, path: &str) {
    let (status, sent) = rt.block_on(async {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let head = format!("POST {path} HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
        stream.write_all(head.as_bytes()).await.unwrap();
        let (mut reader, mut writer) = stream.into_split();
        let chunk = format!("{:x}\r\n{}\r\n", 64 * 1024, "x".repeat(64 * 1024));
        let started = Instant::now();
        let send = async move {
            let mut sent = 0usize;
            while sent < 10 << 20 {
                let write = writer.write_all(chunk.as_bytes());
                match tokio::time::timeout(Duration::from_millis(500), write).await {
                    Ok(Ok(())) => sent += 64 * 1024,
                    _ => break,
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            (sent, started.elapsed())
        };
        let read = async move {
            let mut bytes = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                match tokio::time::timeout(Duration::from_secs(3), reader.read(&mut buf)).await {
                    Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
                    Ok(Ok(n)) => bytes.extend_from_slice(&buf[..n]),
                }
            }
            String::from_utf8_lossy(&bytes)
                .split(' ')
                .nth(1)
                .and_then(|s| s.parse::<u16>().ok())
                .unwrap_or(0)
        };
        let ((sent, held), status) = tokio::join!(send, read);
        (status, (sent, held))
    });
    let (sent, held) = sent;
    println!(
        "{path}: a chunked 10 MB body at 1.3 MB/s: answered {status}; the client got {} KiB \
         out, the connection was held {held:?}",
        sent / 1024
    );
    assert_eq!(status, 429, "{path}");
    assert!(held < Duration::from_secs(3), "{path}: {held:?}");
    assert!(sent < 4 << 20, "{path}: {sent} bytes taken in");
}

/// A small body sent at once is read and dropped, and the connection stays open for the
/// client's next request.
#[test]
fn a_small_quick_body_keeps_the_connection() {
    let server = spent();
    let rt = client();
    let statuses = rt.block_on(async {
        let mut stream = TcpStream::connect(server.addr).await.unwrap();
        let body = "x".repeat(1_000);
        let request = format!(
            "POST /login HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        let mut statuses = Vec::new();
        for _ in 0..2 {
            stream.write_all(request.as_bytes()).await.unwrap();
            let response = read_response(&mut stream).await.expect("answered");
            statuses.push(response.status);
        }
        statuses
    });
    assert_eq!(statuses, [429, 429]);
}

/// `Expect: 100-continue` on a rejected request: actix-web sends `100 Continue` before
/// any handler or middleware runs (its `HttpServer` takes no expect handler), so the client
/// hears it; then the 429 comes at once, the body is not read, and the connection closes.
#[test]
fn an_expect_continue_request_gets_its_429_without_its_body_being_read() {
    let server = spent();
    let rt = client();
    let (response, closed) = rt.block_on(async {
        let mut stream = TcpStream::connect(server.addr).await.unwrap();
        stream
            .write_all(
                b"POST /login HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\
                  Expect: 100-continue\r\n\r\n",
            )
            .await
            .unwrap();
        let response = tokio::time::timeout(Duration::from_secs(2), read_response(&mut stream))
            .await
            .expect("answered within 2 s")
            .expect("a response");
        (
            response,
            closed_within(&mut stream, Duration::from_secs(2)).await,
        )
    });
    println!(
        "Expect: 100-continue: interim {:?}, then {}; connection closed: {closed}",
        response.interim, response.status
    );
    assert_eq!(response.status, 429);
    assert!(closed);
}

/// A user whose upload is spent sends another with a body trickling in: its 429 waits up
/// to the body allowance for that body, and meanwhile the one upload slot everyone shares
/// is free — 15 other users, one every 10 ms from the moment its head is sent, all upload.
/// Whether the slot is the handler's own (`#[concurrency_limit]`) or a `ConcurrencyLimit`
/// middleware's around it. (Each was refused for concurrency: the refused request held the
/// slot while its body was awaited.)
#[test]
fn a_refused_request_does_not_hold_a_shared_slot_while_its_body_is_awaited() {
    let server = Server::start(Limiter::builder().build(), 2, routes);
    for path in ["/upload", "/wrapped/upload"] {
        let (first, statuses, refused) = client().block_on(trickle_beside_others(&server, path));
        let uploaded = statuses.iter().filter(|&&s| s == 200).count();
        println!(
            "{path}: while a refused upload's body trickled in, {uploaded} of 15 other users \
             uploaded ({statuses:?}); the refused one got {refused}"
        );
        assert_eq!(first, 200, "{path}");
        assert_eq!(refused, 429, "{path}");
        assert_eq!(statuses, [200; 15], "{path}");
    }
}

/// Spends mallory's upload at `path`, sends another with a trickling body, and 15 other
/// users' uploads beside it: the first status, the others', and the trickling one's.
async fn trickle_beside_others(server: &Server, path: &str) -> (u16, Vec<u16>, u16) {
    let upload_as = |user: &str| {
        format!(
            "POST {path} HTTP/1.1\r\nHost: t\r\nX-User: {user}\r\nContent-Length: 0\r\n\
             Connection: close\r\n\r\n"
        )
        .into_bytes()
    };
    let first = exchange(server.addr, &upload_as("mallory"), Duration::from_secs(5))
        .await
        .expect("answered")
        .status;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: t\r\nX-User: mallory\r\nContent-Length: 16000\r\n\r\nhello"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut statuses = Vec::new();
    for n in 0..15 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let user = format!("user-{n}");
        let answer = exchange(server.addr, &upload_as(&user), Duration::from_secs(5)).await;
        statuses.push(answer.map_or(0, |a| a.status));
    }
    let refused = tokio::time::timeout(Duration::from_secs(3), read_response(&mut stream))
        .await
        .ok()
        .flatten()
        .map_or(0, |r| r.status);
    (first, statuses, refused)
}
