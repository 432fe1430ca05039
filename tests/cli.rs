//! `limiter-cli` (feature `cli`) against a real `redis-server` with two instances of a
//! service running over real HTTP: it lists the limits they use, shows a blocked client's
//! state, resets the client so that both instances admit it again, and sets a policy both
//! pick up, then takes it back.
#![cfg(feature = "cli")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::net::SocketAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use actix_web::web;
use common::redis_server::RedisServer;
use common::serve;
use limiter::{concurrency_limit, rate_limit, Limiter, RedisStore};
use tokio::sync::Notify;

#[rate_limit(3, per = "15m", scope = "cli-login")]
async fn login() -> &'static str {
    "ok"
}

#[rate_limit(
    10,
    per = "1m",
    algorithm = "fixed_window",
    key = "header:x-api-key",
    scope = "cli-api"
)]
async fn api() -> &'static str {
    "ok"
}

/// One per 20 s, and a client over it blocked for two minutes: its block outlasts its
/// window's wait.
#[rate_limit(1, per = "20s", block = "2m", scope = "cli-guarded")]
async fn guarded() -> &'static str {
    "ok"
}

/// A search that queues: a bucket with a delay.
#[rate_limit(
    2,
    per = "1s",
    algorithm = "token_bucket",
    delay = "2s",
    scope = "cli-search"
)]
async fn search() -> &'static str {
    "ok"
}

/// A monthly quota per API key.
#[rate_limit(1, per = "month", key = "header:x-api-key", scope = "cli-monthly")]
async fn monthly() -> &'static str {
    "ok"
}

/// Lets the uploads in flight finish.
static UPLOADS_END: Notify = Notify::const_new();

/// Uploads, two at once per client, each in flight until the test lets it end.
#[concurrency_limit(2, scope = "cli-uploads")]
async fn upload() -> &'static str {
    UPLOADS_END.notified().await;
    "ok"
}

async fn instance(redis: &RedisServer) -> SocketAddr {
    let store = RedisStore::connect(&redis.url())
        .await
        .unwrap()
        .with_prefix("cli")
        .overrides_every(Some(Duration::from_millis(100)));
    let limiter = Limiter::builder().store(store).build();
    serve(limiter, |routes| {
        routes
            .route("/login", web::post().to(login))
            .route("/api", web::get().to(api))
            .route("/guarded", web::get().to(guarded))
            .route("/search", web::get().to(search))
            .route("/monthly", web::get().to(monthly))
            .route("/upload", web::post().to(upload));
    })
    .0
}

/// A request on a fresh connection; the status and the raw response.
async fn request(addr: SocketAddr, head: &str) -> (u16, String) {
    common::request(addr, head, "").await
}

/// `limiter-cli --redis URL --prefix cli ARGS`: its output, and whether it succeeded.
fn cli(redis: &RedisServer, args: &[&str]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_limiter-cli"))
        .args(["--redis", &redis.url(), "--prefix", "cli"])
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    // A usage mistake exits with status 2, a failure with 1, as documented (a script
    // tells either from a crash).
    assert!(
        output.status.success() || matches!(output.status.code(), Some(1 | 2)),
        "{args:?}: {:?}",
        output.status
    );
    // The usage is for usage mistakes alone.
    assert_eq!(
        text.contains("usage:"),
        output.status.code() == Some(2),
        "{args:?}: {text}"
    );
    (output.status.success(), text)
}

/// Waits, at most two seconds, until `done`.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < Duration::from_secs(2), "{what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[actix_web::test]
async fn an_operator_lists_inspects_resets_and_sets_limits_on_a_running_fleet() {
    let redis = RedisServer::start();
    let (one, two) = (instance(&redis).await, instance(&redis).await);
    // A client blocked on login over both instances; an API key that used 2 of 10.
    let mut statuses = Vec::new();
    for i in 0..4 {
        statuses.push(request([one, two][i % 2], "POST /login HTTP/1.1").await.0);
    }
    assert_eq!(statuses, [200, 200, 200, 429]);
    for _ in 0..2 {
        assert_eq!(
            request(two, "GET /api HTTP/1.1\r\nX-Api-Key: k1").await.0,
            200
        );
    }

    // The limits in use: each instance wrote what it counts with.
    until("both limits listed", || {
        let (ok, out) = cli(&redis, &["limits"]);
        ok && out.contains("cli-login\t3 per 15m, sliding_window")
            && out.contains("cli-api\t10 per 1m, fixed_window")
    })
    .await;

    // The blocked client's state, as the limiter keys it (its address).
    let (ok, shown) = cli(&redis, &["show", "ip:127.0.0.1"]);
    println!("limiter-cli show ip:127.0.0.1\n{shown}");
    assert!(ok, "{shown}");
    let login = shown.lines().find(|l| l.starts_with("cli-login")).unwrap();
    // Used up, not blocked: its quota comes back as the window moves on.
    assert!(
        login.contains("remaining 0 of 3") && login.contains("used up: admitted again in 9"),
        "{login}"
    );
    let api = shown.lines().find(|l| l.starts_with("cli-api")).unwrap();
    assert!(
        api.contains("remaining 10 of 10") && api.contains("not blocked"),
        "{api}"
    );
    let (_, key) = cli(&redis, &["show", "header:k1"]);
    assert!(key.contains("remaining 8 of 10"), "{key}");

    // A block that outlasts its window's wait is shown as the service answers it: blocked
    // for two minutes, not for the window's 20 s (then "not blocked" while it held).
    let (first, _) = request(one, "GET /guarded HTTP/1.1").await;
    let (second, refused) = request(one, "GET /guarded HTTP/1.1").await;
    assert_eq!((first, second), (200, 429));
    let retry_after = refused
        .lines()
        .find_map(|l| l.strip_prefix("retry-after: "))
        .map(|v| v.trim().to_string())
        .unwrap();
    until("the guarded limit listed", || {
        cli(&redis, &["limits"]).1.contains("cli-guarded")
    })
    .await;
    let (_, shown) = cli(&redis, &["show", "ip:127.0.0.1"]);
    let guarded = shown
        .lines()
        .find(|l| l.starts_with("cli-guarded"))
        .unwrap();
    println!("{guarded} (the service answered Retry-After: {retry_after})");
    let blocked_for: u64 = guarded
        .split("blocked for ")
        .nth(1)
        .and_then(|rest| rest.split('s').next())
        .and_then(|secs| secs.parse().ok())
        .unwrap_or_else(|| panic!("{guarded}"));
    assert!((100..=120).contains(&blocked_for), "{guarded}");

    // A used-up monthly quota is told from a block: admitted again at the month's turn.
    let key = "GET /monthly HTTP/1.1\r\nX-Api-Key: k2";
    assert_eq!(request(two, key).await.0, 200);
    let (status, refused) = request(one, key).await;
    assert_eq!(status, 429, "{refused}");
    until("the monthly quota listed", || {
        cli(&redis, &["limits"])
            .1
            .contains("cli-monthly\t1 per month")
    })
    .await;
    let (_, shown) = cli(&redis, &["show", "header:k2"]);
    let month = shown
        .lines()
        .find(|l| l.starts_with("cli-monthly"))
        .unwrap();
    println!("{month}");
    assert!(
        month.contains("remaining 0 of 1")
            && month.contains("used up: admitted again in")
            && !month.contains("blocked for"),
        "{month}"
    );

    // A concurrency limit is listed, and a client's uploads in flight shown.
    let upload = tokio::spawn(request(one, "POST /upload HTTP/1.1"));
    until("the upload's slot listed and shown", || {
        let (_, listed) = cli(&redis, &["limits"]);
        let (_, shown) = cli(&redis, &["show", "ip:127.0.0.1"]);
        listed.contains("cli-uploads\t2 in flight\t")
            && shown.contains("cli-uploads\t2 in flight\t1 in flight now")
    })
    .await;
    UPLOADS_END.notify_waiters();
    assert_eq!(upload.await.unwrap().0, 200);
    until("the upload's slot given back", || {
        cli(&redis, &["show", "ip:127.0.0.1"])
            .1
            .contains("cli-uploads\t2 in flight\t0 in flight now")
    })
    .await;

    // Support unblocks the customer: both instances admit it within their reading interval,
    // the one that remembered its rejection included.
    let (ok, out) = cli(&redis, &["reset", "ip:127.0.0.1", "cli-login"]);
    assert!(ok && out.contains("forgotten"), "{out}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(request(one, "POST /login HTTP/1.1").await.0, 200);
    assert_eq!(request(two, "POST /login HTTP/1.1").await.0, 200);

    // A policy both instances apply, and take back.
    let (ok, out) = cli(&redis, &["set", "cli-api", "1 per 1m"]);
    assert!(ok, "{out}");
    let quota = |addr| async move {
        let (_, response) = request(addr, "GET /api HTTP/1.1\r\nX-Api-Key: probe").await;
        response.contains("ratelimit-policy: \"cli-api\";q=1;w=60")
    };
    let started = Instant::now();
    while !(quota(one).await && quota(two).await) {
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the override did not arrive"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (_, listed) = cli(&redis, &["limits"]);
    // As stored (naming no algorithm: the declared fixed window is kept), and in use.
    assert!(
        listed.contains("cli-api\t1 per 1m\tstored override"),
        "{listed}"
    );
    assert!(
        listed.contains("cli-api\t1 per 1m, fixed_window\t"),
        "{listed}"
    );
    assert!(cli(&redis, &["unset", "cli-api"]).0);

    // A policy without an algorithm or a delay, set on a delayed bucket, keeps both: the
    // tool says what the instances apply, not only what it stored.
    assert_eq!(request(one, "GET /search HTTP/1.1").await.0, 200);
    until("the search limit listed", || {
        cli(&redis, &["limits"]).1.contains("cli-search")
    })
    .await;
    let (ok, out) = cli(&redis, &["set", "cli-search", "1 per 1s"]);
    println!("limiter-cli set cli-search \"1 per 1s\"\n{out}");
    assert!(
        ok && out
            .contains("cli-search\t1 per 1s, token_bucket, delay 2s\tas the instances apply it"),
        "{out}"
    );
    assert!(cli(&redis, &["unset", "cli-search"]).0);

    // Mistakes get their reason, and a failing exit.
    for (args, says) in [
        (&["show", "ip:nowhere"][..], "not an IP address"),
        (&["set", "cli-api", "lots"][..], "not a policy"),
        (&["dance"][..], "cannot do"),
        (&["show", "mac:00:11"][..], "names no client"),
    ] {
        let (ok, out) = cli(&redis, args);
        assert!(!ok && out.contains(says), "{args:?}: {out}");
    }
}

#[test]
fn an_unreachable_redis_is_a_clear_error() {
    let output = Command::new(env!("CARGO_BIN_EXE_limiter-cli"))
        .args(["--redis", "redis://127.0.0.1:1", "limits"])
        .output()
        .unwrap();
    // A failure, not a usage mistake: status 1, its cause and a one-line hint.
    assert_eq!(output.status.code(), Some(1));
    let error = String::from_utf8_lossy(&output.stderr);
    println!("{error}");
    assert!(
        error.contains("cannot reach Redis at redis://127.0.0.1:1") && error.contains("hint:"),
        "{error}"
    );
    // A failure is said alone: the usage is for a command line that asks nothing it can do.
    assert!(!error.contains("usage:"), "{error}");
}
