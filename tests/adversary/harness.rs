//! Real servers on loopback and a raw HTTP client: what the attacks run against.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use actix_web::dev::ServerHandle;
use actix_web::{web, App, HttpServer};
use limiter::Limiter;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// An actix server on a loopback port of its own, with its own threads (a `System` and
/// `workers` workers), serving what `configure` routes under `limiter`. Stopped when
/// dropped.
pub(crate) struct Server {
    pub(crate) addr: SocketAddr,
    handle: ServerHandle,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    pub(crate) fn start(
        limiter: Limiter,
        workers: usize,
        configure: impl Fn(&mut web::ServiceConfig) + Send + Sync + Clone + 'static,
    ) -> Server {
        let (sender, receiver) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let server = HttpServer::new(move || {
                    App::new()
                        .app_data(limiter.clone())
                        .configure(configure.clone())
                })
                .workers(workers)
                // A thousand connections at once must not overflow the queue of the
                // listening socket (std's default holds 128: the rest retry after 1 s).
                .backlog(4_096)
                .disable_signals()
                .shutdown_timeout(1)
                .bind(("127.0.0.1", 0))
                .expect("a loopback port");
                let addr = server.addrs()[0];
                let server = server.run();
                let _ = sender.send((server.handle(), addr));
                let _ = server.await;
            });
        });
        let (handle, addr) = receiver.recv().expect("the server started");
        Server {
            addr,
            handle,
            thread: Some(thread),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let handle = self.handle.clone();
        // The server's own runtime stops it; this thread only waits.
        let stopping = std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(handle.stop(false));
        });
        let _ = stopping.join();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A response as the client saw it.
#[derive(Debug, Clone)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) head: String,
    pub(crate) body: String,
    /// Interim responses before it (`100 Continue`).
    pub(crate) interim: Vec<u16>,
}

impl Response {
    /// A header's value (names compared without case).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|line| {
            let (n, v) = line.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// Sends `raw` (a whole request, head and body) over a fresh connection and reads the
/// response. `None` when nothing whole came back within `limit`.
pub(crate) async fn exchange(addr: SocketAddr, raw: &[u8], limit: Duration) -> Option<Response> {
    let attempt = async {
        let mut stream = TcpStream::connect(addr).await.ok()?;
        stream.write_all(raw).await.ok()?;
        read_response(&mut stream).await
    };
    tokio::time::timeout(limit, attempt).await.ok().flatten()
}

/// Reads one final response (after any interim ones) from `stream`: its head, and a body
/// of `Content-Length` bytes.
pub(crate) async fn read_response(stream: &mut TcpStream) -> Option<Response> {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    let mut interim = Vec::new();
    loop {
        let head_end = loop {
            if let Some(end) = find(&bytes, b"\r\n\r\n") {
                break end;
            }
            let n = stream.read(&mut buf).await.ok()?;
            if n == 0 {
                return None;
            }
            bytes.extend_from_slice(&buf[..n]);
        };
        let head = String::from_utf8_lossy(&bytes[..head_end]).into_owned();
        let status: u16 = head.split(' ').nth(1)?.parse().ok()?;
        bytes.drain(..head_end + 4);
        if (100..200).contains(&status) {
            interim.push(status);
            continue;
        }
        let mut response = Response {
            status,
            head,
            body: String::new(),
            interim,
        };
        let length: usize = response
            .header("content-length")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        while bytes.len() < length {
            let n = stream.read(&mut buf).await.ok()?;
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&buf[..n]);
        }
        response.body = String::from_utf8_lossy(&bytes[..length.min(bytes.len())]).into_owned();
        return Some(response);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A `GET path` with `headers` (`Name: value` lines), `Connection: close`.
pub(crate) fn get(path: &str, headers: &[String]) -> Vec<u8> {
    let mut raw = format!("GET {path} HTTP/1.1\r\nHost: limiter.test\r\nConnection: close\r\n");
    for header in headers {
        raw.push_str(header);
        raw.push_str("\r\n");
    }
    raw.push_str("\r\n");
    raw.into_bytes()
}

/// `GET path` from the client `ip`, as a trusted proxy on loopback reports it.
pub(crate) async fn get_as(addr: SocketAddr, path: &str, ip: &str) -> Response {
    exchange(
        addr,
        &get(path, &[format!("X-Forwarded-For: {ip}")]),
        Duration::from_secs(10),
    )
    .await
    .expect("answered within 10 s")
}

/// A keep-alive connection that sends requests one after the other.
pub(crate) struct Connection {
    stream: TcpStream,
}

impl Connection {
    pub(crate) async fn open(addr: SocketAddr) -> Connection {
        Connection {
            stream: TcpStream::connect(addr).await.expect("connects"),
        }
    }

    /// Sends `GET path` with `headers` and reads its response.
    pub(crate) async fn get(&mut self, path: &str, headers: &[(&str, &str)]) -> Option<Response> {
        let mut raw = format!("GET {path} HTTP/1.1\r\nHost: limiter.test\r\n");
        for (name, value) in headers {
            raw.push_str(&format!("{name}: {value}\r\n"));
        }
        raw.push_str("\r\n");
        self.stream.write_all(raw.as_bytes()).await.ok()?;
        read_response(&mut self.stream).await
    }

    /// Sends many requests at once (pipelined) and reads every response: `requests` each a
    /// path and headers.
    pub(crate) async fn pipeline(
        &mut self,
        requests: &[(String, Vec<(String, String)>)],
    ) -> Vec<u16> {
        let mut raw = String::new();
        for (path, headers) in requests {
            raw.push_str(&format!("GET {path} HTTP/1.1\r\nHost: limiter.test\r\n"));
            for (name, value) in headers {
                raw.push_str(&format!("{name}: {value}\r\n"));
            }
            raw.push_str("\r\n");
        }
        let (mut reader, mut writer) = self.stream.split();
        let write = async {
            writer.write_all(raw.as_bytes()).await.expect("sent");
        };
        let read = async {
            let mut statuses = Vec::with_capacity(requests.len());
            let mut bytes: Vec<u8> = Vec::new();
            let mut buf = vec![0u8; 64 * 1024];
            let mut at = 0;
            while statuses.len() < requests.len() {
                // Whole responses in what was read: head, then `content-length` bytes.
                while let Some(end) = find(&bytes[at..], b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&bytes[at..at + end]).to_ascii_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    if bytes.len() < at + end + 4 + length {
                        break;
                    }
                    let status = head
                        .split(' ')
                        .nth(1)
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0);
                    statuses.push(status);
                    at += end + 4 + length;
                }
                if statuses.len() == requests.len() {
                    break;
                }
                let n = reader.read(&mut buf).await.expect("reads");
                if n == 0 {
                    break;
                }
                bytes.extend_from_slice(&buf[..n]);
                if at > 1 << 20 {
                    bytes.drain(..at);
                    at = 0;
                }
            }
            statuses
        };
        let ((), statuses) = tokio::join!(write, read);
        statuses
    }
}

/// A runtime for a test's client side.
pub(crate) fn client() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// The resident memory of this process, in bytes (Linux).
pub(crate) fn rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Milliseconds since `started`, for the figures.
pub(crate) fn ms_since(started: Instant) -> u128 {
    started.elapsed().as_millis()
}

/// A TCP proxy in front of a server (Redis), on a loopback port of its own, that delays
/// every chunk of the answers by what it is told: latency injected without `tc netem`.
pub(crate) struct Proxy {
    pub(crate) port: u16,
    delay_ms: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// More delay on the first connection only (see [`Proxy::hold_first`]).
    first_ms: std::sync::Arc<std::sync::atomic::AtomicU64>,
    /// Its Redis gone while it answers `PING` itself (see [`Proxy::lose_redis`]).
    lost: std::sync::Arc<std::sync::atomic::AtomicBool>,
    _runtime: tokio::runtime::Runtime,
}

impl Proxy {
    pub(crate) fn start(upstream: u16) -> Proxy {
        use std::sync::atomic::{AtomicU64, Ordering};
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a runtime");
        let delay_ms = std::sync::Arc::new(AtomicU64::new(0));
        let first_ms = std::sync::Arc::new(AtomicU64::new(0));
        let lost = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let lost_flag = std::sync::Arc::clone(&lost);
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("a loopback port");
        let port = listener.local_addr().expect("its address").port();
        let (delay, first) = (
            std::sync::Arc::clone(&delay_ms),
            std::sync::Arc::clone(&first_ms),
        );
        runtime.spawn(async move {
            let mut accepted = 0;
            while let Ok((client, _)) = listener.accept().await {
                let delay = std::sync::Arc::clone(&delay);
                let lost = std::sync::Arc::clone(&lost_flag);
                let first = (accepted == 0).then(|| std::sync::Arc::clone(&first));
                accepted += 1;
                tokio::spawn(async move {
                    let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)).await else {
                        return;
                    };
                    // Small writes go out at once (Nagle's delay would look like a slow
                    // Redis).
                    let _ = client.set_nodelay(true);
                    let _ = server.set_nodelay(true);
                    let (mut client_read, mut client_write) = client.into_split();
                    let (mut server_read, mut server_write) = server.into_split();
                    // Each chunk is read as soon as it comes and sent on `delay` after
                    // that: latency, as a network adds it, and not a delay per chunk one
                    // after the other (an answer Redis writes in two pieces would come
                    // twice as late).
                    let (chunks, mut due) = tokio::sync::mpsc::unbounded_channel();
                    // (Weak: the answers end, and the client hears the connection close,
                    // when Redis's side ends.)
                    let pongs = chunks.downgrade();
                    let up = async move {
                        let mut buf = vec![0u8; 16 * 1024];
                        // Commands read since Redis was lost, not yet whole.
                        let mut held = Vec::new();
                        loop {
                            let n = match client_read.read(&mut buf).await {
                                Ok(0) | Err(_) => break,
                                Ok(n) => n,
                            };
                            if !lost.load(Ordering::Relaxed) {
                                if server_write.write_all(&buf[..n]).await.is_err() {
                                    break;
                                }
                                continue;
                            }
                            // Redis gone: a `PING` is answered here, as such proxies do,
                            // and every other command waits for ever.
                            held.extend_from_slice(&buf[..n]);
                            while let Some((length, ping)) = resp_command(&held) {
                                held.drain(..length);
                                if let (true, Some(pongs)) = (ping, pongs.upgrade()) {
                                    let now = tokio::time::Instant::now();
                                    let _ = pongs.send((now, b"+PONG\r\n".to_vec()));
                                }
                            }
                        }
                        let _ = server_write.shutdown().await;
                    };
                    let read = async move {
                        let mut buf = vec![0u8; 16 * 1024];
                        loop {
                            let n = match server_read.read(&mut buf).await {
                                Ok(0) | Err(_) => break,
                                Ok(n) => n,
                            };
                            let ms = delay.load(Ordering::Relaxed)
                                + first.as_ref().map_or(0, |f| f.load(Ordering::Relaxed));
                            let at = tokio::time::Instant::now() + Duration::from_millis(ms);
                            if chunks.send((at, buf[..n].to_vec())).is_err() {
                                break;
                            }
                        }
                    };
                    let write = async move {
                        while let Some((at, chunk)) = due.recv().await {
                            tokio::time::sleep_until(at).await;
                            if client_write.write_all(&chunk).await.is_err() {
                                break;
                            }
                        }
                        let _ = client_write.shutdown().await;
                    };
                    tokio::join!(up, read, write);
                });
            }
        });
        Proxy {
            port,
            delay_ms,
            first_ms,
            lost,
            _runtime: runtime,
        }
    }

    /// From now on the proxy's Redis is gone, and the proxy answers `PING` itself (as
    /// twemproxy or Envoy may): every other command, on every connection, waits unanswered.
    pub(crate) fn lose_redis(&self) {
        self.lost.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Every answer from now on comes `delay` late.
    pub(crate) fn delay(&self, delay: Duration) {
        self.delay_ms.store(
            delay.as_millis() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// The answers on the first connection made through the proxy (a store's calls) come
    /// `delay` late from now on, the other connections' as before: one connection held up
    /// (a segment lost and sent again) while Redis answers.
    pub(crate) fn hold_first(&self, delay: Duration) {
        self.first_ms.store(
            delay.as_millis() as u64,
            std::sync::atomic::Ordering::Relaxed,
        );
    }
}

/// The length of the first whole command in `bytes` (a RESP array of bulk strings, as
/// clients send them) and whether it is a `PING`; `None` until one is whole.
fn resp_command(bytes: &[u8]) -> Option<(usize, bool)> {
    fn line(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
        let end = at + bytes.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
        let number = std::str::from_utf8(bytes.get(at + 1..end)?)
            .ok()?
            .parse()
            .ok()?;
        Some((number, end + 2))
    }
    let (count, mut at) = line(bytes, 0)?;
    let mut first = None;
    for _ in 0..count {
        let (length, start) = line(bytes, at)?;
        at = start + length + 2;
        if at > bytes.len() {
            return None;
        }
        first.get_or_insert_with(|| bytes[start..start + length].to_ascii_uppercase());
    }
    Some((at, first.as_deref() == Some(b"PING")))
}

/// The tests that bring load of their own (a burst on a busy host, a flood of keys) or time
/// Redis's faults run one at a time: each measures the load it states, not its neighbours'
/// (beside the flood and the other tests of a debug build, Redis itself went past the 50 ms
/// timeout now and then, and the burst's fallback counted on both instances).
pub(crate) fn alone() -> std::sync::MutexGuard<'static, ()> {
    crate::common::one_at_a_time()
}
