//! Helpers shared by the integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::Duration;

use actix_web::dev::ServiceResponse;
use actix_web::http::header::HeaderMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub(crate) const CLIENT: &str = "203.0.113.7:40000";

pub(crate) fn peer(addr: &str) -> SocketAddr {
    addr.parse().unwrap()
}

pub(crate) fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).map(|v| v.to_str().unwrap())
}

/// Status, `Retry-After` and `RateLimit` of a response, for compact assertions.
pub(crate) fn summary(res: &ServiceResponse) -> (u16, Option<String>, Option<String>) {
    (
        res.status().as_u16(),
        header(res.headers(), "retry-after").map(str::to_owned),
        header(res.headers(), "ratelimit").map(str::to_owned),
    )
}

pub(crate) fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// A GET of `uri` from the client address `from`, through an actix test service.
pub(crate) async fn get_from(
    app: &impl actix_web::dev::Service<
        actix_http::Request,
        Response = ServiceResponse,
        Error = actix_web::Error,
    >,
    uri: &str,
    from: &str,
) -> ServiceResponse {
    let req = actix_web::test::TestRequest::get()
        .uri(uri)
        .peer_addr(peer(from));
    actix_web::test::call_service(app, req.to_request()).await
}

/// A minimal HTTP/1.1 request over a fresh connection, bounded in time; returns the status
/// and the raw response.
pub(crate) async fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    let head =
        format!("{method} {path} HTTP/1.1\r\nContent-Type: application/x-www-form-urlencoded");
    request(addr, &head, body).await
}

/// A request whose request line and header lines are `head` (without `Host`,
/// `Content-Length` and `Connection`, which it adds) over a fresh connection, bounded in
/// time; the status and the raw response.
pub(crate) async fn request(addr: SocketAddr, head: &str, body: &str) -> (u16, String) {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let request = format!(
            "{head}\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.unwrap();
        let text = String::from_utf8_lossy(&response).into_owned();
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        (status, text)
    };
    tokio::time::timeout(Duration::from_secs(10), exchange)
        .await
        .expect("the server answered within 10 s")
}

/// A server of one worker on loopback serving `routes` with `limiter`; its address and
/// handle.
pub(crate) fn serve(
    limiter: limiter::Limiter,
    routes: fn(&mut actix_web::web::ServiceConfig),
) -> (SocketAddr, actix_web::dev::ServerHandle) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = actix_web::HttpServer::new(move || {
        actix_web::App::new()
            .app_data(limiter.clone())
            .configure(routes)
    })
    .workers(1)
    .listen(listener)
    .unwrap()
    .run();
    let handle = server.handle();
    actix_web::rt::spawn(server);
    (addr, handle)
}

/// A limiter over the Redis at `url` on the caller's clock (`clock`, a test's manual
/// one), with a store timeout of 2 s: one of the instances a test runs on one Redis.
#[cfg(feature = "redis")]
pub(crate) async fn redis_instance(url: &str, clock: &limiter::ManualClock) -> limiter::Limiter {
    let store = limiter::RedisStore::connect(url)
        .await
        .unwrap()
        .use_caller_clock();
    limiter::Limiter::builder()
        .store(store)
        .clock(clock.clone())
        .store_timeout(Duration::from_secs(2))
        .build()
}

/// A store whose every operation fails with `message` (which clients must never see).
pub(crate) struct Failing(pub(crate) &'static str);

impl limiter::Store for Failing {
    fn check<'a>(&'a self, _: &'a limiter::Limit, _: &'a [u8], _: Duration) -> limiter::Check<'a> {
        limiter::Check::ready(Err(limiter::StoreError::msg(self.0)))
    }

    fn check_all<'a>(
        &'a self,
        _: &'a [limiter::Charge<'a>],
        _: Duration,
    ) -> limiter::Check<'a, limiter::Checked> {
        limiter::Check::ready(Err(limiter::StoreError::msg(self.0)))
    }

    fn refund<'a>(
        &'a self,
        _: &'a [limiter::Charge<'a>],
        _: &'a limiter::Receipt,
        _: Duration,
    ) -> limiter::Check<'a, ()> {
        limiter::Check::ready(Err(limiter::StoreError::msg(self.0)))
    }

    fn reset<'a>(&'a self, _: &'a limiter::Limit, _: &'a [u8]) -> limiter::Check<'a, ()> {
        limiter::Check::ready(Err(limiter::StoreError::msg(self.0)))
    }
}

/// A lock the tests of one binary that must not overlap take for their whole run (the
/// caller says why); a test that panicked does not poison it for the others.
pub(crate) fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

pub(crate) mod events;
#[cfg(feature = "redis")]
pub(crate) mod redis_cluster;
#[cfg(feature = "redis")]
pub(crate) mod redis_server;
#[cfg(feature = "redis")]
pub(crate) mod replays;

/// The open TCP sockets of this process connected to `port` on loopback, and whether each
/// sends at once (`TCP_NODELAY`).
#[allow(unsafe_code)]
pub(crate) fn sockets_to(port: u16) -> Vec<bool> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let Ok(fd) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        // SAFETY: getpeername(2) and getsockopt(2) write only into the buffers given, of
        // the sizes given; on a descriptor that is not a TCP socket they fail.
        unsafe {
            let mut addr: libc::sockaddr_in = std::mem::zeroed();
            let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
            if libc::getpeername(fd, (&raw mut addr).cast(), &mut len) != 0
                || i32::from(addr.sin_family) != libc::AF_INET
                || u16::from_be(addr.sin_port) != port
            {
                continue;
            }
            let mut on: libc::c_int = 0;
            let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
            if libc::getsockopt(
                fd,
                libc::IPPROTO_TCP,
                libc::TCP_NODELAY,
                (&raw mut on).cast(),
                &mut len,
            ) == 0
            {
                found.push(on != 0);
            }
        }
    }
    found
}

/// Bytes in unpadded base64url (RFC 4648 §5), as the Redis store writes a key's name: a
/// definition apart from the store's, so that a test of the layout checks it.
pub(crate) fn base64url(bytes: &[u8]) -> String {
    const DIGITS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let bits: Vec<u8> = bytes
        .iter()
        .flat_map(|b| (0..8).rev().map(move |i| b >> i & 1))
        .collect();
    bits.chunks(6)
        .map(|six| {
            let n = (0..6).fold(0, |n, i| n << 1 | usize::from(six.get(i) == Some(&1)));
            char::from(DIGITS[n])
        })
        .collect()
}
