//! Hello-world over HTTP on loopback: bare actix, the same handler under `#[rate_limit]`
//! (limit never reached), under actix-governor's middleware and under limiter's own
//! `RateLimit` middleware, under an attribute with every option on, and a flood of
//! requests that `#[rate_limit]` rejects. One server process per variant, all pinned to CPU 0; the load
//! generator pinned to CPU 1; several alternating rounds; medians and ratios printed, and
//! the servers' CPU time per request, read from `/proc/PID/task/*/schedstat` (more stable
//! than requests per second on a shared machine).
//!
//! `cargo bench --manifest-path benches/Cargo.toml --bench http` (about 40 s; `ROUNDS` and `ROUND_MS` change the plan)

#![allow(missing_docs)]
#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark: a panic is a failure

use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use actix_governor::{Governor, GovernorConfigBuilder};
use actix_web::{web, App, HttpServer};
use limiter::{rate_limit, Limiter};

#[cfg(feature = "redis")]
#[path = "../tests/common/redis_server.rs"]
#[allow(unreachable_pub)]
mod redis_server;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const VARIANTS: [&str; 11] = [
    "bare",
    "limiter",
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

/// Every option on: a cost, failures only (each success is taken back), an exemption rule
/// and a per-request policy that both decline, and a second limit in dry run.
#[rate_limit(65535, per = "100ms", cost = 2, count = "failures", exempt = never_exempt, policy = default_plan)]
#[rate_limit(65535, per = "100ms", dry_run = true, scope = "trial")]
async fn options_hello() -> &'static str {
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
    let variant = variant.to_string();
    let governor = GovernorConfigBuilder::default()
        .nanoseconds_per_request(1)
        .burst_size(u32::MAX)
        .finish()
        .expect("governor config");
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
            "quiet" => Limiter::builder().ietf_headers(false).build(),
            // A rejected body left unread closes its connection.
            "post_closed" => Limiter::builder().keep_alive_body_limit(0).build(),
            // Loopback plays the proxy: the client is read from X-Forwarded-For.
            "proxied" => Limiter::builder().trusted_proxies(["127.0.0.1"]).build(),
            _ => Limiter::builder().build(),
        };
        #[cfg(feature = "redis")]
        if variant == "aerl_redis" {
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
                let input = SimpleInputFunctionBuilder::new(Duration::from_millis(100), 65535)
                    .peer_ip_key()
                    .build();
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
                "rejecting" | "redis_rejecting" => app.route("/", web::get().to(rejecting_hello)),
                "redis_fixed" => app.route("/", web::get().to(fixed_hello)),
                "options" => app.route("/", web::get().to(options_hello)),
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
    post: bool,
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
    let request = request.as_bytes();
    let mut buf = vec![0u8; 8192];
    let (mut done, mut rejected) = (0, 0);
    while Instant::now() < deadline && done < budget {
        if stream.write_all(request).await.is_err() {
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
    post: bool,
) -> Round {
    let cpu_before = cpu_ns(pid);
    let start = Instant::now();
    let deadline = start + length;
    let budget = MAX_REQUESTS_PER_ROUND / CONNECTIONS as u64;
    let (done, rejected) = runtime.block_on(async {
        let tasks: Vec<_> = (0..CONNECTIONS)
            .map(|client| tokio::spawn(connection(addr, client, deadline, budget, post)))
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
    let variants: Vec<&str> = VARIANTS
        .iter()
        .copied()
        .chain(cfg!(feature = "redis").then_some("redis"))
        .chain(cfg!(feature = "redis").then_some("redis_rejecting"))
        .chain(cfg!(feature = "redis").then_some("aerl_redis"))
        .chain(cfg!(feature = "redis").then_some("redis_fixed"))
        .chain(cfg!(feature = "metrics").then_some("metrics"))
        .collect();
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
        let post = variants[i].starts_with("post_");
        round(
            &runtime,
            server.addr,
            server.child.id(),
            Duration::from_millis(300),
            post,
        );
    }
    let mut results: Vec<Vec<Round>> = variants.iter().map(|_| Vec::new()).collect();
    // Redis's own CPU per request, for the variants that use it.
    let mut redis_us: Vec<Vec<f64>> = variants.iter().map(|_| Vec::new()).collect();
    // Calls (EVALSHA, or MULTI ... EXEC transactions) per request: what batching saves.
    let mut redis_calls: Vec<Vec<f64>> = variants.iter().map(|_| Vec::new()).collect();
    #[cfg(feature = "redis")]
    let redis_pid = redis.pid();
    #[cfg(not(feature = "redis"))]
    let redis_pid = 0;
    #[cfg(feature = "redis")]
    let calls = || redis.calls("evalsha") + redis.calls("exec");
    #[cfg(not(feature = "redis"))]
    let calls = || 0;
    for r in 0..rounds {
        for (i, server) in servers.iter().enumerate() {
            let post = variants[i].starts_with("post_");
            let redis_before = (redis_pid != 0).then(|| (cpu_ns(redis_pid), calls()));
            let result = round(&runtime, server.addr, server.child.id(), length, post);
            if let Some((cpu, called)) = redis_before {
                let done = result.per_second * length.as_secs_f64();
                redis_us[i].push((cpu_ns(redis_pid) - cpu) as f64 / 1_000.0 / done);
                redis_calls[i].push((calls() - called) as f64 / done);
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
    for (i, variant) in variants.iter().enumerate() {
        println!(
            "{:<10} {:>10.0} {:>12.3} {:>14.2} {:>+16.2}",
            variant,
            rps[i],
            rps[i] / rps[0],
            cpu[i],
            cpu[i] - cpu[0]
        );
    }
    println!("limiter / governor throughput: {:.3}", rps[1] / rps[2]);
    println!(
        "limiter middleware / governor middleware throughput: {:.3}",
        rps[9] / rps[2]
    );
    println!(
        "limiter middleware / attribute throughput: {:.3}",
        rps[9] / rps[1]
    );
    println!(
        "every option on / attribute throughput: {:.3}",
        rps[10] / rps[1]
    );
    println!("rejected flood / bare throughput: {:.3}", rps[3] / rps[0]);
    println!(
        "rejected flood / limiter allowed throughput: {:.3}",
        rps[3] / rps[1]
    );
    println!("with trusted proxies / without: {:.3}", rps[6] / rps[1]);
    println!(
        "rejected POSTs, body read and connection kept / connection closed: {:.3}",
        rps[7] / rps[8]
    );
    #[cfg(feature = "redis")]
    {
        println!("redis store / bare throughput: {:.3}", rps[11] / rps[0]);
        println!(
            "rejected flood, redis store / memory store throughput: {:.3}",
            rps[12] / rps[3]
        );
        println!(
            "redis store / actix-extensible-rate-limit on redis throughput: {:.3}",
            rps[11] / rps[13]
        );
        println!(
            "redis store, fixed window / actix-extensible-rate-limit on redis throughput: {:.3}",
            rps[14] / rps[13]
        );
        for (i, variant) in variants
            .iter()
            .enumerate()
            .filter(|(_, v)| v.contains("redis"))
        {
            println!(
                "{variant}: Redis CPU per request {:.2} µs, Redis calls per request {:.3}",
                median(redis_us[i].clone()),
                median(redis_calls[i].clone())
            );
        }
        drop(redis);
    }
    if let Some(at) = variants.iter().position(|v| *v == "metrics") {
        println!("metrics on / off throughput: {:.3}", rps[at] / rps[1]);
        println!(
            "metrics on, µs CPU per request more: {:+.2}",
            cpu[at] - cpu[1]
        );
    }
}
