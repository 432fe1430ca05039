//! Hello-world over HTTP on loopback: bare actix, the same handler under `#[rate_limit]`
//! (limit never reached), under actix-governor's middleware and under limiter's own
//! `RateLimit` middleware, under an attribute with every option on, under a concurrency
//! limit, under a bucket with a `delay` its clients overrun (their requests wait their
//! turn), and a flood of requests that `#[rate_limit]` rejects; then the same on axum, beside
//! tower_governor (`axum_serve.rs`). One server process per variant, all pinned to CPU 0; the load
//! generator pinned to CPU 1; several alternating rounds; medians and ratios printed, and
//! the servers' CPU time per request, read from `/proc/PID/task/*/schedstat` (more stable
//! than requests per second on a shared machine).
//!
//! `cargo bench --manifest-path benches/Cargo.toml --bench http` (about 70 s; `ROUNDS` and `ROUND_MS` change the plan).
//! With `--features redis`, each of the limiter's Redis loads is also measured against
//! Redis's floor for it (`floor.rs`).

#![allow(missing_docs)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark: a panic is a failure

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use actix_governor::{Governor, GovernorConfigBuilder};
use actix_web::{web, App, HttpServer};
use limiter::{rate_limit, Limiter};

mod axum_serve;
#[cfg(feature = "redis")]
mod floor;
#[cfg(feature = "redis")]
#[path = "../tests/common/redis_server.rs"]
#[allow(unreachable_pub)]
mod redis_server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const VARIANTS: [&str; 13] = [
    "bare",
    "limiter",
    "in_flight",
    "delayed",
    "governor",
    "rejecting",
    "quiet",
    "headers",
    "proxied",
    "post_kept",
    "post_closed",
    "middleware",
    "options",
];
/// The body of the `post_*` variants: a login form's size.
const POST_BODY: usize = 512;
const CONNECTIONS: usize = 32;
/// Stops a round early, whatever the machine: every load here is bounded in count and time.
const MAX_REQUESTS_PER_ROUND: u64 = 2_000_000;

/// The key extractor actix-governor's documentation tells a service behind a proxy to write
/// (it ships none): the client address actix reads from `Forwarded` or `X-Forwarded-For`
/// (`ConnectionInfo::realip_remote_addr`, which believes any peer). The peer of a new
/// client per request behind a proxy (`governor_xff`, callgrind with `MANY=1`).
#[derive(Clone)]
struct ForwardedFor;

impl actix_governor::KeyExtractor for ForwardedFor {
    type Key = std::net::IpAddr;
    type KeyExtractionError = actix_governor::SimpleKeyExtractionError<&'static str>;

    fn extract(
        &self,
        req: &actix_web::dev::ServiceRequest,
    ) -> Result<Self::Key, Self::KeyExtractionError> {
        req.connection_info()
            .realip_remote_addr()
            .and_then(|address| address.parse().ok())
            .ok_or_else(|| actix_governor::SimpleKeyExtractionError::new("no client address"))
    }
}

async fn hello() -> &'static str {
    "Hello world!"
}

/// Bare, plus two header fields as long as the limiter's: what sending them costs alone.
async fn hello_with_headers() -> actix_web::HttpResponse {
    actix_web::HttpResponse::Ok()
        .insert_header(("ratelimit-policy", "\"limited_hello\";q=65535;w=1"))
        .insert_header(("ratelimit", format!("\"limited_hello\";r={};t=1", 65534)))
        .content_type("text/plain; charset=utf-8")
        .body("Hello world!")
}

/// A limit this benchmark never reaches: 65,535 per 100 ms from one address.
#[rate_limit(65535, per = "100ms")]
async fn limited_hello() -> &'static str {
    "Hello world!"
}

/// The same limit counted in fixed windows: the algorithm actix-extensible-rate-limit has.
#[rate_limit(65535, per = "100ms", algorithm = "fixed_window")]
async fn fixed_hello() -> &'static str {
    "Hello world!"
}

fn never_exempt(req: &actix_web::HttpRequest) -> bool {
    req.headers().contains_key("x-exempt")
}

fn default_plan(req: &actix_web::HttpRequest) -> Option<limiter::Policy> {
    req.headers().get("x-plan").and(None)
}

/// A minute's fixed window, for a new client per request (the `*_many` variants).
#[rate_limit(100, per = "1m", algorithm = "fixed_window")]
async fn many_fixed_hello() -> &'static str {
    "Hello world!"
}

/// The same with the default sliding log.
#[rate_limit(100, per = "1m")]
async fn many_log_hello() -> &'static str {
    "Hello world!"
}

/// Every option on: a cost, failures only (each success is taken back), an exemption rule
/// and a per-request policy that both decline, and a second limit in dry run.
#[rate_limit(65535, per = "100ms", cost = 2, count = "failures", exempt = never_exempt, policy = default_plan)]
#[rate_limit(65535, per = "100ms", dry_run = true, scope = "trial")]
async fn options_hello() -> &'static str {
    "Hello world!"
}

/// A concurrency limit this benchmark never reaches (one request of a client at a time on
/// each connection): what taking and giving back a slot costs.
#[limiter::concurrency_limit(64)]
async fn in_flight_hello() -> &'static str {
    "Hello world!"
}

/// A bucket a client overruns, each request past it waiting its turn (`delay`): 2,000 a
/// second, a burst of 10, at most a second ahead. Every connection comes from loopback, so
/// they are one client sending as fast as they can: the throughput is the bucket's rate,
/// and most requests wait on the timer.
#[rate_limit(2000, per = "1s", algorithm = "token_bucket", burst = 10, delay = "1s")]
async fn delayed_hello() -> &'static str {
    "Hello world!"
}

/// Rejects every request but the first.
#[rate_limit(1, per = "1h")]
async fn rejecting_hello() -> &'static str {
    "Hello world!"
}

/// Rejects every POST but the first; its body is never parsed.
#[rate_limit(1, per = "1h")]
async fn rejecting_post(_body: web::Bytes) -> &'static str {
    "Hello world!"
}

#[allow(unsafe_code)]
fn pin_to_cpu(cpu: usize) {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the calls only read and write it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn serve(variant: &str, listener: TcpListener) -> std::io::Result<()> {
    pin_to_cpu(0);
    if axum_serve::VARIANTS.contains(&variant) {
        return axum_serve::serve(variant, listener);
    }
    let variant = variant.to_string();
    #[cfg(feature = "metrics")]
    if variant == "metrics" {
        // A real exporter's recorder, so that every decision is counted as in production.
        let handle = metrics_exporter_prometheus::PrometheusBuilder::new()
            .install_recorder()
            .expect("the only recorder");
        std::mem::forget(handle);
    }
    actix_web::rt::System::new().block_on(async move {
        let limiter = match variant.as_str() {
            #[cfg(feature = "redis")]
            "redis" | "redis_rejecting" | "redis_fixed" => {
                let url = std::env::var("LIMITER_BENCH_REDIS").expect("the driver passes the URL");
                let store = limiter::RedisStore::connect_lazily(&url).expect("a Redis URL");
                Limiter::builder().store(store).build()
            }
            // A new client per request, named by the trusted proxy (loopback).
            #[cfg(feature = "redis")]
            "redis_many" | "redis_many_log" => {
                let url = std::env::var("LIMITER_BENCH_REDIS").expect("the driver passes the URL");
                let store = limiter::RedisStore::connect_lazily(&url).expect("a Redis URL");
                Limiter::builder()
                    .store(store)
                    .trusted_proxies(["127.0.0.1"])
                    .build()
            }
            "quiet" => Limiter::builder().ietf_headers(false).build(),
            // The rejected flood without the summary of who is rejected (callgrind.sh only).
            "rejecting_untracked" => Limiter::builder().track_rejected_clients(false).build(),
            // A rejected body left unread closes its connection.
            "post_closed" => Limiter::builder().keep_alive_body_limit(0).build(),
            // Loopback plays the proxy: the client is read from X-Forwarded-For.
            "proxied" => Limiter::builder().trusted_proxies(["127.0.0.1"]).build(),
            _ => Limiter::builder().build(),
        };
        #[cfg(feature = "redis")]
        if variant == "aerl_redis" || variant == "aerl_many" {
            // actix-extensible-rate-limit's Redis backend (a fixed window), the same limit.
            use actix_extensible_rate_limit::backend::redis::RedisBackend;
            use actix_extensible_rate_limit::backend::SimpleInputFunctionBuilder;
            use actix_extensible_rate_limit::RateLimiter;
            let url = std::env::var("LIMITER_BENCH_REDIS").expect("the driver passes the URL");
            let client = redis_for_aerl::Client::open(url).expect("a Redis URL");
            let manager = redis_for_aerl::aio::ConnectionManager::new(client)
                .await
                .expect("Redis answers");
            let backend = RedisBackend::builder(manager).build();
            return HttpServer::new(move || {
                // The many-client variant: a minute's window of 100, keyed on the address
                // X-Forwarded-For names, as ours.
                let input = if variant == "aerl_many" {
                    SimpleInputFunctionBuilder::new(Duration::from_secs(60), 100)
                        .real_ip_key()
                        .build()
                } else {
                    SimpleInputFunctionBuilder::new(Duration::from_millis(100), 65535)
                        .peer_ip_key()
                        .build()
                };
                App::new()
                    .wrap(
                        RateLimiter::builder(backend.clone(), input)
                            .add_headers()
                            .build(),
                    )
                    .route("/", web::get().to(hello))
            })
            .workers(1)
            .listen(listener)?
            .run()
            .await;
        }
        if variant == "middleware" {
            let policy = limiter::Policy::new(65535, Duration::from_millis(100)).unwrap();
            return HttpServer::new(move || {
                App::new()
                    .app_data(limiter.clone())
                    .wrap(limiter::RateLimit::new(policy))
                    .route("/", web::get().to(hello))
            })
            .workers(1)
            .listen(listener)?
            .run()
            .await;
        }
        if variant == "governor" {
            // Made here only: governor's clock (quanta) calibrates itself against the
            // system's for a time, which made every other variant's instructions move by up
            // to 3% from run to run (callgrind counts the calibration's loop).
            let governor = GovernorConfigBuilder::default()
                .nanoseconds_per_request(1)
                .burst_size(u32::MAX)
                .finish()
                .expect("governor config");
            return HttpServer::new(move || {
                App::new()
                    .wrap(Governor::new(&governor))
                    .route("/", web::get().to(hello))
            })
            .workers(1)
            .listen(listener)?
            .run()
            .await;
        }
        if variant == "governor_xff" {
            let governor = GovernorConfigBuilder::default()
                .nanoseconds_per_request(1)
                .burst_size(u32::MAX)
                .key_extractor(ForwardedFor)
                .finish()
                .expect("governor config");
            return HttpServer::new(move || {
                App::new()
                    .wrap(Governor::new(&governor))
                    .route("/", web::get().to(hello))
            })
            .workers(1)
            .listen(listener)?
            .run()
            .await;
        }
        HttpServer::new(move || {
            let app = App::new().app_data(limiter.clone());
            match variant.as_str() {
                "limiter" | "quiet" | "proxied" | "redis" | "metrics" => {
                    app.route("/", web::get().to(limited_hello))
                }
                "rejecting" | "redis_rejecting" | "rejecting_untracked" => {
                    app.route("/", web::get().to(rejecting_hello))
                }
                "redis_fixed" => app.route("/", web::get().to(fixed_hello)),
                "redis_many" => app.route("/", web::get().to(many_fixed_hello)),
                "redis_many_log" => app.route("/", web::get().to(many_log_hello)),
                "options" => app.route("/", web::get().to(options_hello)),
                "in_flight" => app.route("/", web::get().to(in_flight_hello)),
                "delayed" => app.route("/", web::get().to(delayed_hello)),
                "post_kept" | "post_closed" => app.route("/", web::post().to(rejecting_post)),
                "headers" => app.route("/", web::get().to(hello_with_headers)),
                _ => app.route("/", web::get().to(hello)),
            }
        })
        .workers(1)
        .listen(listener)?
        .run()
        .await
    })
}

/// Nanoseconds the process has spent on a CPU, over all its threads.
fn cpu_ns(pid: u32) -> u64 {
    let mut total = 0;
    for task in std::fs::read_dir(format!("/proc/{pid}/task")).unwrap() {
        let stat =
            std::fs::read_to_string(task.unwrap().path().join("schedstat")).unwrap_or_default();
        total += stat
            .split(' ')
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    total
}

/// Sends keep-alive GETs on one connection until `deadline`; returns (responses, 429s).
/// Every variant gets the same requests: each connection speaks for one client, named in
/// `X-Forwarded-For` (only the `proxied` server believes it).
/// The `post_*` variants send a form body, and reconnect when the server closes.
async fn connection(
    addr: SocketAddr,
    client: usize,
    deadline: Instant,
    budget: u64,
    (post, many): (bool, bool),
) -> (u64, u64) {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let request = if post {
        format!(
            "POST / HTTP/1.1\r\nHost: bench\r\nContent-Type: application/x-www-form-urlencoded\r\n\
             Content-Length: {POST_BODY}\r\n\r\n{}",
            "a".repeat(POST_BODY)
        )
    } else {
        format!(
            "GET / HTTP/1.1\r\nHost: bench\r\nX-Forwarded-For: 198.51.100.3, 203.0.113.{client}\r\n\r\n"
        )
    };
    let mut request = request.into_bytes();
    let mut buf = vec![0u8; 8192];
    let (mut done, mut rejected) = (0, 0);
    // The `*_many` variants: every request from one of 2^20 addresses, at random (a
    // generator per connection, seeded apart).
    let mut seed = 0x9E37_79B9_7F4A_7C15_u64 ^ (client as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    while Instant::now() < deadline && done < budget {
        if many {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let x = (seed >> 40) & 0xF_FFFF;
            request = format!(
                "GET / HTTP/1.1\r\nHost: bench\r\nX-Forwarded-For: 10.{}.{}.{}\r\n\r\n",
                x >> 16,
                (x >> 8) & 0xFF,
                x & 0xFF
            )
            .into_bytes();
        }
        if stream.write_all(&request).await.is_err() {
            assert!(post, "the server closed the connection");
            stream = TcpStream::connect(addr).await.unwrap();
            stream.set_nodelay(true).unwrap();
            continue;
        }
        let mut filled = 0;
        loop {
            let n = stream.read(&mut buf[filled..]).await.unwrap_or(0);
            if n == 0 {
                assert!(post, "the server closed the connection");
                break;
            }
            filled += n;
            if let Some(end) = find(&buf[..filled], b"\r\n\r\n") {
                let head = std::str::from_utf8(&buf[..end])
                    .unwrap()
                    .to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length: "))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                if filled >= end + 4 + length {
                    if head.starts_with("http/1.1 429") {
                        rejected += 1;
                    }
                    if head.contains("connection: close") {
                        stream = TcpStream::connect(addr).await.unwrap();
                        stream.set_nodelay(true).unwrap();
                    }
                    break;
                }
            }
        }
        done += 1;
    }
    (done, rejected)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

struct Round {
    per_second: f64,
    cpu_us_per_request: f64,
    rejected: u64,
}

fn round(
    runtime: &tokio::runtime::Runtime,
    addr: SocketAddr,
    pid: u32,
    length: Duration,
    kind: (bool, bool),
) -> Round {
    let cpu_before = cpu_ns(pid);
    let start = Instant::now();
    let deadline = start + length;
    let budget = MAX_REQUESTS_PER_ROUND / CONNECTIONS as u64;
    let (done, rejected) = runtime.block_on(async {
        let tasks: Vec<_> = (0..CONNECTIONS)
            .map(|client| tokio::spawn(connection(addr, client, deadline, budget, kind)))
            .collect();
        let mut totals = (0, 0);
        for task in tasks {
            let (d, r) = task.await.unwrap();
            totals = (totals.0 + d, totals.1 + r);
        }
        totals
    });
    let elapsed = start.elapsed().as_secs_f64();
    let cpu = (cpu_ns(pid) - cpu_before) as f64 / 1_000.0;
    Round {
        per_second: done as f64 / elapsed,
        cpu_us_per_request: cpu / done as f64,
        rejected,
    }
}

/// Whether a variant's requests are POSTs with a body, and whether each comes from a new
/// client (`*_many*`).
fn kind(variant: &str) -> (bool, bool) {
    (variant.starts_with("post_"), variant.contains("_many"))
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The commands Redis ran between two readings of `INFO commandstats`, per request: those
/// called at least once per 100 requests, by the time they took, as `name calls/µs`.
#[cfg(feature = "redis")]
fn mix_per_request(
    before: &[(String, u64, u64)],
    after: &[(String, u64, u64)],
    done: f64,
) -> String {
    let mut mix: Vec<(String, f64, f64)> = after
        .iter()
        .map(|(name, calls, usec)| {
            let (c0, u0) = before
                .iter()
                .find(|(n, _, _)| n == name)
                .map_or((0, 0), |(_, c, u)| (*c, *u));
            (
                name.clone(),
                (calls - c0) as f64 / done,
                (usec - u0) as f64 / done,
            )
        })
        .filter(|(_, calls, _)| *calls >= 0.01)
        .collect();
    mix.sort_by(|a, b| b.2.total_cmp(&a.2));
    mix.iter()
        .map(|(name, calls, usec)| format!("{name} {calls:.3}/{usec:.2}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--serve") {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        println!("{}", listener.local_addr().unwrap());
        serve(&args[at + 1], listener).unwrap();
        return;
    }
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let length = Duration::from_millis(
        std::env::var("ROUND_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1_500),
    );
    let exe = std::env::current_exe().unwrap();
    #[cfg(feature = "redis")]
    let redis = {
        let server = redis_server::RedisServer::start();
        // As if on another machine: off the measured server's CPU, beside the load.
        server.pin_to_cpu(1);
        std::env::set_var("LIMITER_BENCH_REDIS", server.url());
        server
    };
    let only: Option<Vec<String>> = std::env::var("ONLY")
        .ok()
        .map(|v| v.split(',').map(str::to_string).collect());
    let variants: Vec<&str> = VARIANTS
        .iter()
        .copied()
        .chain(axum_serve::VARIANTS)
        .chain(cfg!(feature = "redis").then_some("redis"))
        .chain(cfg!(feature = "redis").then_some("redis_rejecting"))
        .chain(cfg!(feature = "redis").then_some("aerl_redis"))
        .chain(cfg!(feature = "redis").then_some("redis_fixed"))
        .chain(cfg!(feature = "metrics").then_some("metrics"))
        .chain(cfg!(feature = "redis").then_some("redis_many"))
        .chain(cfg!(feature = "redis").then_some("redis_many_log"))
        .chain(cfg!(feature = "redis").then_some("aerl_many"))
        // `ONLY=bare,redis_many,...`: a run of some variants (the ratios between the others
        // are then left out).
        .filter(|v| only.as_ref().is_none_or(|only| only.iter().any(|o| o == v)))
        .collect();
    let at = |name: &str| variants.iter().position(|v| *v == name);
    let servers: Vec<Server> = variants
        .iter()
        .map(|variant| {
            let mut child = Command::new(&exe)
                .args(["--serve", variant])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut line = String::new();
            use std::io::BufRead;
            std::io::BufReader::new(child.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            Server {
                child,
                addr: line.trim().parse().unwrap(),
            }
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));

    pin_to_cpu(1);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Warm-up: connections, caches, the limiter's first state.
    for (i, server) in servers.iter().enumerate() {
        round(
            &runtime,
            server.addr,
            server.child.id(),
            Duration::from_millis(300),
            kind(variants[i]),
        );
    }
    let mut results: Vec<Vec<Round>> = variants.iter().map(|_| Vec::new()).collect();
    // Redis's own CPU per request, for the variants that use it.
    let mut redis_us: Vec<Vec<f64>> = variants.iter().map(|_| Vec::new()).collect();
    // Calls (FCALL or EVALSHA, or MULTI ... EXEC transactions) per request: what batching
    // saves.
    let mut redis_calls: Vec<Vec<f64>> = variants.iter().map(|_| Vec::new()).collect();
    #[cfg(feature = "redis")]
    let redis_pid = redis.pid();
    #[cfg(not(feature = "redis"))]
    let redis_pid = 0;
    #[cfg(feature = "redis")]
    let calls = || redis.check_calls() + redis.calls("exec");
    #[cfg(not(feature = "redis"))]
    let calls = || 0;
    // Redis's time in the calls per request (`INFO commandstats`), and for a new client per
    // request its bytes per key (`used_memory` over `DBSIZE`, from an empty Redis).
    let mut redis_command_us: Vec<Vec<f64>> = variants.iter().map(|_| Vec::new()).collect();
    let mut redis_key_bytes: Vec<Vec<f64>> = variants.iter().map(|_| Vec::new()).collect();
    // And its keys: a hash table's buckets per key depend on how many there are, so the
    // floor writes as many.
    let mut redis_keys: Vec<Vec<f64>> = variants.iter().map(|_| Vec::new()).collect();
    // Round trips per request (Redis's reads of its connections): what batching shares.
    #[allow(unused_mut)]
    let mut redis_reads: Vec<Vec<f64>> = variants.iter().map(|_| Vec::new()).collect();
    // What Redis ran per request in the last round: each command's calls and µs.
    #[allow(unused_mut)]
    let mut redis_mix: Vec<String> = variants.iter().map(|_| String::new()).collect();
    for r in 0..rounds {
        for (i, server) in servers.iter().enumerate() {
            #[cfg(feature = "redis")]
            let empty = variants[i].contains("_many").then(|| {
                // `SYNC`: Valkey 8 frees a flushed database in the background by default, and its
                // memory would still count as the empty server's.
                redis.command(&["FLUSHALL", "SYNC"]);
                redis.used_memory()
            });
            #[cfg(feature = "redis")]
            let usec_before = redis.usec_of_calls();
            #[cfg(feature = "redis")]
            let mix_before = redis.command_mix();
            #[cfg(feature = "redis")]
            let reads_before = redis.reads_processed();
            let redis_before = (redis_pid != 0).then(|| (cpu_ns(redis_pid), calls()));
            let result = round(
                &runtime,
                server.addr,
                server.child.id(),
                length,
                kind(variants[i]),
            );
            if let Some((cpu, called)) = redis_before {
                let done = result.per_second * length.as_secs_f64();
                redis_us[i].push((cpu_ns(redis_pid) - cpu) as f64 / 1_000.0 / done);
                redis_calls[i].push((calls() - called) as f64 / done);
                #[cfg(feature = "redis")]
                redis_command_us[i].push((redis.usec_of_calls() - usec_before) as f64 / done);
                #[cfg(feature = "redis")]
                {
                    redis_mix[i] = mix_per_request(&mix_before, &redis.command_mix(), done);
                    let reads = redis.reads_processed().saturating_sub(reads_before);
                    redis_reads[i].push(reads as f64 / done);
                }
                #[cfg(feature = "redis")]
                if let Some(empty) = empty {
                    let keys = redis.integer(&["DBSIZE"]).max(1) as f64;
                    redis_key_bytes[i].push((redis.used_memory() as f64 - empty as f64) / keys);
                    redis_keys[i].push(keys);
                }
            }
            eprintln!(
                "round {r} {:>9}: {:>8.0} req/s, {:>5.2} µs CPU/req, {} rejected",
                variants[i], result.per_second, result.cpu_us_per_request, result.rejected
            );
            results[i].push(result);
        }
    }
    let rps: Vec<f64> = results
        .iter()
        .map(|r| median(r.iter().map(|x| x.per_second).collect()))
        .collect();
    let cpu: Vec<f64> = results
        .iter()
        .map(|r| median(r.iter().map(|x| x.cpu_us_per_request).collect()))
        .collect();
    println!(
        "medians of {rounds} rounds of {} ms, {CONNECTIONS} keep-alive connections, server on CPU 0, load on CPU 1",
        length.as_millis()
    );
    println!(
        "{:<10} {:>10} {:>12} {:>14} {:>16}",
        "variant", "req/s", "x bare", "µs CPU/req", "vs bare (µs)"
    );
    // Each variant beside its own framework's bare server: axum's beside axum's.
    let bare_of = |variant: &str| {
        let bare = if axum_serve::VARIANTS.contains(&variant) {
            "axum_bare"
        } else {
            "bare"
        };
        at(bare).unwrap_or(0)
    };
    for (i, variant) in variants.iter().enumerate() {
        let bare = bare_of(variant);
        println!(
            "{:<10} {:>10.0} {:>12.3} {:>14.2} {:>+16.2}",
            variant,
            rps[i],
            rps[i] / rps[bare],
            cpu[i],
            cpu[i] - cpu[bare]
        );
    }
    // What two variants add to their bare server's CPU per request, one over the other.
    let added = |label: &str, a: &str, b: &str| {
        if let (Some(a), Some(b)) = (at(a), at(b)) {
            let bare = cpu[bare_of(variants[a])];
            println!(
                "{label}: {:+.2} / {:+.2} µs = {:.3}",
                cpu[a] - bare,
                cpu[b] - bare,
                (cpu[a] - bare) / (cpu[b] - bare)
            );
        }
    };
    added(
        "axum, CPU added per request, limiter attribute / tower_governor",
        "axum_limiter",
        "tower_governor",
    );
    added(
        "axum, CPU added per request, limiter attribute with its fields off / tower_governor",
        "axum_quiet",
        "tower_governor",
    );
    added(
        "axum, CPU added per request, limiter attribute handed over as Extension(limiter) / tower_governor",
        "axum_limiter_configured",
        "tower_governor",
    );
    added(
        "axum, CPU added per request, limiter attribute / tower_governor with its header fields",
        "axum_limiter",
        "tower_governor_headers",
    );
    added(
        "axum, CPU added per request, limiter layer / tower_governor",
        "axum_layer",
        "tower_governor",
    );
    added(
        "axum, CPU added per request, rejected flood, limiter / tower_governor",
        "axum_rejecting",
        "tower_governor_rejecting",
    );
    added(
        "axum, CPU added per request, a new client per request, limiter / tower_governor",
        "axum_many",
        "tower_governor_many",
    );
    // Ratios of two variants of this run, where both ran.
    let ratio = |label: &str, a: &str, b: &str| {
        if let (Some(a), Some(b)) = (at(a), at(b)) {
            println!("{label}: {:.3}", rps[a] / rps[b]);
        }
    };
    ratio("limiter / governor throughput", "limiter", "governor");
    ratio(
        "limiter middleware / governor middleware throughput",
        "middleware",
        "governor",
    );
    ratio(
        "limiter middleware / attribute throughput",
        "middleware",
        "limiter",
    );
    ratio(
        "every option on / attribute throughput",
        "options",
        "limiter",
    );
    ratio(
        "concurrency limit / attribute throughput",
        "in_flight",
        "limiter",
    );
    // A bucket's delay: its throughput is the bucket's rate; what each waiting request
    // costs the server is its CPU.
    if let (Some(d), Some(l)) = (at("delayed"), at("limiter")) {
        println!(
            "delayed requests (waiting their turn) / attribute CPU per request: {:.3} ({:.0} req/s: one client at 2,000/s at most)",
            cpu[d] / cpu[l],
            rps[d]
        );
    }
    ratio("rejected flood / bare throughput", "rejecting", "bare");
    ratio(
        "rejected flood / limiter allowed throughput",
        "rejecting",
        "limiter",
    );
    ratio("with trusted proxies / without", "proxied", "limiter");
    ratio(
        "rejected POSTs, body read and connection kept / connection closed",
        "post_kept",
        "post_closed",
    );
    ratio("redis store / bare throughput", "redis", "bare");
    ratio(
        "rejected flood, redis store / memory store throughput",
        "redis_rejecting",
        "rejecting",
    );
    ratio(
        "redis store / actix-extensible-rate-limit on redis throughput",
        "redis",
        "aerl_redis",
    );
    ratio(
        "redis store, fixed window / actix-extensible-rate-limit on redis throughput",
        "redis_fixed",
        "aerl_redis",
    );
    ratio(
        "a new client per request, fixed window / actix-extensible-rate-limit",
        "redis_many",
        "aerl_many",
    );
    ratio(
        "a new client per request, sliding log / actix-extensible-rate-limit",
        "redis_many_log",
        "aerl_many",
    );
    for (i, variant) in variants
        .iter()
        .enumerate()
        .filter(|(_, v)| v.contains("redis") || v.contains("aerl"))
    {
        print!(
            "{variant}: Redis CPU per request {:.2} µs, calls per request {:.3}, Redis time in the calls per request {:.2} µs",
            median(redis_us[i].clone()),
            median(redis_calls[i].clone()),
            median(redis_command_us[i].clone()),
        );
        if !redis_key_bytes[i].is_empty() {
            print!(", {:.0} bytes per key", median(redis_key_bytes[i].clone()));
        }
        if !redis_reads[i].is_empty() {
            print!(
                ", round trips per request {:.3}",
                median(redis_reads[i].clone())
            );
        }
        println!();
        if !redis_mix[i].is_empty() {
            println!("  per request (calls, µs): {}", redis_mix[i]);
        }
    }
    // Redis's floor for each of the limiter's Redis loads, at the batch size its calls had.
    #[cfg(feature = "redis")]
    for (i, variant) in variants.iter().enumerate().filter(|(_, v)| {
        matches!(
            **v,
            "redis" | "redis_fixed" | "redis_many" | "redis_many_log"
        )
    }) {
        let new_clients = variant.contains("_many");
        // The checks a round trip carried: a batch of new clients only calls no script, so
        // its script calls undercount them.
        let trips = median(redis_reads[i].clone());
        let batch = (1.0 / trips.max(1e-3)).round() as usize;
        let keys = (!redis_keys[i].is_empty()).then(|| median(redis_keys[i].clone()) as usize);
        // Beside the same load against bare actix, as the limiter's rounds had.
        let bare = at("bare").map(|b| servers[b].addr);
        let beside = || {
            let deadline = Instant::now() + Duration::from_secs(120);
            let budget = MAX_REQUESTS_PER_ROUND / CONNECTIONS as u64;
            bare.into_iter()
                .flat_map(|addr| {
                    (0..CONNECTIONS).map(move |client| {
                        tokio::spawn(async move {
                            connection(addr, client, deadline, budget, (false, false)).await;
                        })
                    })
                })
                .collect()
        };
        let floor = floor::floor(
            &runtime,
            &redis,
            new_clients.then_some(keys).flatten(),
            batch,
            cpu_ns,
            beside,
        );
        let ours = median(redis_us[i].clone());
        print!(
            "{variant}: Redis's floor ({}, pipelines of {}): {:.2} µs Redis CPU a check ({:.2} in its commands); ours {:.2} ({:.2}) = {:.2}x the floor",
            if new_clients { "SET NX PX" } else { "INCR + PEXPIRE" },
            floor.batch,
            floor.redis_us,
            floor.command_us,
            ours,
            median(redis_command_us[i].clone()),
            ours / floor.redis_us,
        );
        if let (Some(bytes), false) = (floor.key_bytes, redis_key_bytes[i].is_empty()) {
            let ours = median(redis_key_bytes[i].clone());
            print!(
                "; {bytes:.0} bytes a key over {} keys, ours {ours:.0} = {:.2}x",
                floor.keys,
                ours / bytes
            );
        }
        println!();
    }
    #[cfg(feature = "redis")]
    drop(redis);
    if let (Some(on), Some(off)) = (at("metrics"), at("limiter")) {
        println!("metrics on / off throughput: {:.3}", rps[on] / rps[off]);
        println!(
            "metrics on, µs CPU per request more: {:+.2}",
            cpu[on] - cpu[off]
        );
    }
}
