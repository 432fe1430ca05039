//! Acting without a deploy (feature `redis`): a policy an operator stores in Redis
//! (`HSET PREFIX:overrides SCOPE "2 per 1m"`) reaches two running instances within their
//! reading interval, over real HTTP and a real `redis-server`; removing it takes it back;
//! a text that is not a policy is reported and left out. And what tools read: a client's
//! state under each algorithm and representation, without counting.
#![cfg(feature = "redis")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use actix_web::web;
use common::redis_server::RedisServer;
use common::{events, request, serve};
use limiter::{rate_limit, Algorithm, Limit, Limiter, Policy, RedisStore, Store};

#[rate_limit(5, per = "1m", key = "header:x-client", scope = "ops-login")]
async fn login() -> &'static str {
    "ok"
}

/// How often the instances read the overrides here.
const EVERY: Duration = Duration::from_millis(100);

/// An instance whose configuration gives the login 4 per minute (over the declared 5).
async fn instance(redis: &RedisServer) -> (SocketAddr, Limiter) {
    let store = RedisStore::connect(&redis.url())
        .await
        .unwrap()
        .with_prefix("ops")
        .overrides_every(Some(EVERY));
    let limiter = Limiter::builder()
        .store(store)
        .policy(
            "ops-login",
            Policy::new(4, Duration::from_secs(60)).unwrap(),
        )
        .build();
    let addr = serve(limiter.clone(), |routes| {
        routes.route("/login", web::post().to(login));
    })
    .0;
    (addr, limiter)
}

/// A login from `client` at the instance at `addr`: the status and the raw response.
async fn post(addr: SocketAddr, client: &str) -> (u16, String) {
    request(
        addr,
        &format!("POST /login HTTP/1.1\r\nX-Client: {client}"),
        "",
    )
    .await
}

/// The quota the instance at `addr` announces for its limit now (to a client of its own).
async fn quota(addr: SocketAddr) -> String {
    let (_, response) = post(addr, "probe").await;
    response
        .lines()
        .find_map(|l| l.strip_prefix("ratelimit-policy: "))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Waits, at most two seconds, until both instances announce `want`; how long it took.
async fn until_both(addrs: &[SocketAddr], want: &str) -> Duration {
    let started = Instant::now();
    loop {
        let mut seen = Vec::new();
        for &addr in addrs {
            seen.push(quota(addr).await);
        }
        if seen.iter().all(|q| q == want) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "still {seen:?}, not {want}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[actix_web::test]
async fn a_policy_stored_in_redis_reaches_every_instance_and_goes_when_removed() {
    events::record();
    let redis = RedisServer::start();
    let ((one, limiter), (two, _)) = (instance(&redis).await, instance(&redis).await);
    let addrs = [one, two];
    until_both(&addrs, "\"ops-login\";q=4;w=60").await;

    redis.command(&["HSET", "ops:overrides", "ops-login", "2 per 1m"]);
    let took = until_both(&addrs, "\"ops-login\";q=2;w=60").await;
    println!("an override stored in Redis reached both instances within {took:?} (reading every {EVERY:?})");
    // One budget of 2 over both instances.
    let mut statuses = Vec::new();
    for i in 0..6 {
        statuses.push(post(addrs[i % 2], "ann").await.0);
    }
    assert_eq!(statuses, [200, 200, 429, 429, 429, 429]);

    // Naming the algorithm is a change of its own (the declared sliding window either way,
    // here, but a fixed-window route would turn into a sliding one).
    redis.command(&[
        "HSET",
        "ops:overrides",
        "ops-login",
        "2 per 1m, fixed_window",
    ]);
    let started = Instant::now();
    while limiter.policy("ops-login").unwrap().algorithm() != Algorithm::FixedWindow {
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the algorithm did not change"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    redis.command(&["HSET", "ops:overrides", "ops-login", "two a minute"]);
    let started = Instant::now();
    while events::warnings("two a minute").is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "the bad text was not reported"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Left out: what was applied stays.
    assert_eq!(quota(addrs[0]).await, "\"ops-login\";q=2;w=60");

    // Removed: the policy the configuration gave, not the declared one.
    redis.command(&["HDEL", "ops:overrides", "ops-login"]);
    let took = until_both(&addrs, "\"ops-login\";q=4;w=60").await;
    println!("removed from Redis, the configured limit was back on both within {took:?}");
}

#[actix_web::test]
async fn a_clients_state_is_read_without_counting_under_every_algorithm() {
    let redis = RedisServer::start();
    let store = RedisStore::connect(&redis.url())
        .await
        .unwrap()
        .with_prefix("status");
    let hour = Duration::from_secs(3_600);
    for (algorithm, max) in [
        (Algorithm::SlidingWindow, 5),
        // Above 128: a long log, kept as a list.
        (Algorithm::SlidingWindow, 200),
        (Algorithm::FixedWindow, 5),
        (Algorithm::SlidingWindowCounter, 5),
        (Algorithm::TokenBucket, 5),
    ] {
        let limit = Limit::new(
            format!("status-{algorithm}-{max}"),
            Policy::for_algorithm(algorithm, max, hour).unwrap(),
        );
        let fresh = store.status(&limit, b"k").await.unwrap();
        assert_eq!(fresh.remaining(), limit.policy().capacity(), "{algorithm}");
        let mut last = None;
        for _ in 0..3 {
            last = Some(store.check(&limit, b"k", Duration::ZERO).await.unwrap());
        }
        let last = last.unwrap();
        for _ in 0..2 {
            let status = store.status(&limit, b"k").await.unwrap();
            assert_eq!(status.remaining(), last.remaining(), "{algorithm} {max}");
            assert!(status.allowed(), "{algorithm}");
            let apart = status.reset_after().abs_diff(last.reset_after());
            assert!(apart < Duration::from_secs(2), "{algorithm}: {apart:?}");
        }
        // Used up: blocked, with the wait the next check gets.
        while store
            .check(&limit, b"k", Duration::ZERO)
            .await
            .unwrap()
            .allowed()
        {}
        let status = store.status(&limit, b"k").await.unwrap();
        let refused = store.check(&limit, b"k", Duration::ZERO).await.unwrap();
        assert_eq!(status.remaining(), 0, "{algorithm}");
        let apart = status
            .reset_after()
            .abs_diff(refused.retry_after().unwrap());
        assert!(
            apart < Duration::from_secs(2),
            "{algorithm} {max}: {apart:?}"
        );
    }
}

#[actix_web::test]
async fn a_deleted_registry_of_limits_is_written_again_by_the_running_instances() {
    let redis = RedisServer::start();
    let store = RedisStore::connect(&redis.url())
        .await
        .unwrap()
        .with_prefix("registry")
        .overrides_every(Some(Duration::from_millis(10)));
    let limiter = Limiter::builder().store(store.clone()).build();
    let limit = Limit::new(
        "registry-login",
        Policy::new(5, Duration::from_secs(60)).unwrap(),
    );
    limiter.check(&limit, b"ann").await.unwrap();
    let listed = || async { store.limits().await.unwrap() };
    let started = Instant::now();
    while listed().await.is_empty() {
        assert!(started.elapsed() < Duration::from_secs(2), "not registered");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // An operator prunes the registry: the running instance writes its limits back (every
    // 60 readings, here 10 ms each).
    redis.command(&["DEL", "registry:limits"]);
    let started = Instant::now();
    loop {
        let limits = listed().await;
        if let [only] = limits.as_slice() {
            assert_eq!((only.scope(), only.id()), ("registry-login", limit.id()));
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "not written again"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!(
        "a deleted registry was written again within {:?}",
        started.elapsed()
    );
}

/// A server that refuses Lua scripts (here an ACL without `@scripting`, as some managed
/// plans have) is an error when the store connects, naming the cause and the fix — not an
/// outage of every check answered by the fault policy.
#[actix_web::test]
async fn a_server_without_scripting_is_an_error_at_connect() {
    let redis = server_without_scripting();
    let error = refusal_at_connect(&redis.url()).await;
    println!("{error}");
    assert!(
        error.contains("does not run Lua scripts") && error.contains("+@scripting"),
        "{error}"
    );
    // The same server with scripting allowed connects.
    let allowed = RedisServer::start();
    assert!(RedisStore::connect(&allowed.url()).await.is_ok());
}

/// A store made with `connect_lazily` meets a refused login or refused scripts at its checks,
/// not when it is made: each check's failure says so as `connect` does, with the fix (and so
/// does the limiter's event when it finds the store lost), not only Redis's bare words —
/// for an operator the difference between "Redis is down" and "Redis refuses us". (A wrong
/// password: `a_store_refused_its_login_counts_again_once_let_in`.)
#[actix_web::test]
async fn a_lazy_store_names_a_refused_login_or_refused_scripts_at_its_checks() {
    let without_scripts = server_without_scripting();
    let with_password = RedisServer::start();
    with_password.command(&["CONFIG", "SET", "requirepass", "s3cret"]);
    let port = with_password.port();
    let limit = Limit::new("lazy", Policy::new(5, Duration::from_secs(60)).unwrap());
    for (url, says) in [
        (without_scripts.url(), "+@scripting"),
        (
            format!("redis://127.0.0.1:{port}"),
            "redis://user:password@",
        ),
    ] {
        let store = RedisStore::connect_lazily(&url).unwrap();
        let error = store
            .check(&limit, b"client", Duration::ZERO)
            .await
            .expect_err("a refused store decides nothing")
            .to_string();
        println!("{url}: {error}");
        assert!(error.contains(says), "{url}: {error}");
    }
}

/// A server with a password, reached without it or with a wrong one, is an error when the
/// store connects that says the login was refused and where the password goes (not an
/// outage of every check); with it in the URL, the store connects and counts.
#[actix_web::test]
async fn a_server_that_wants_a_password_says_so_at_connect() {
    let redis = RedisServer::start();
    // Set once the harness knows the server is up (it asks without a password).
    redis.command(&["CONFIG", "SET", "requirepass", "s3cret"]);
    let port = redis.port();
    for url in [
        format!("redis://127.0.0.1:{port}"),
        format!("redis://:wrong@127.0.0.1:{port}"),
    ] {
        let error = refusal_at_connect(&url).await;
        println!("{url}: {error}");
        assert!(
            error.contains("the store's login") && error.contains("redis://user:password@"),
            "{error}"
        );
    }
    let store = RedisStore::connect(&format!("redis://:s3cret@127.0.0.1:{port}"))
        .await
        .unwrap();
    let limit = limiter::Limit::new(
        "with-a-password",
        limiter::Policy::new(2, std::time::Duration::from_secs(60)).unwrap(),
    );
    let decision = limiter::Store::check(&store, &limit, b"client", std::time::Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(decision.remaining(), 1);
}

/// A store refused its login when it connects again (a password changed and changed back, a
/// server that restarted with another, a full one that answers the login with an error)
/// counts again once the server lets it in: redis's connection manager keeps a failed
/// connection that was not an I/O error for good, which would fail every check until the
/// process restarts. Meanwhile each check's failure names the refused login. A store made
/// lazily with the wrong password recovers the same way.
#[actix_web::test]
async fn a_store_refused_its_login_counts_again_once_let_in() {
    let redis = RedisServer::start();
    let user = |password: &str| {
        redis.command(&[
            "ACL",
            "SETUSER",
            "limiter",
            "on",
            "resetpass",
            password,
            "~*",
            "&*",
            "+@all",
        ]);
    };
    let url = format!("redis://limiter:s3cret@127.0.0.1:{}", redis.port());
    let limit = Limit::new(
        "relogin",
        Policy::new(1000, Duration::from_secs(60)).unwrap(),
    );
    for lazily in [false, true] {
        user(">s3cret");
        let store = match lazily {
            false => RedisStore::connect(&url).await.unwrap(),
            true => {
                user(">changed");
                RedisStore::connect_lazily(&url).unwrap()
            }
        };
        if !lazily {
            store.check(&limit, b"c", Duration::ZERO).await.unwrap();
            user(">changed");
            redis.command(&["CLIENT", "KILL", "USER", "limiter"]);
        }
        // Refused: every check fails (the limiter's fault policy answers it), and once the
        // refusal is known (redis's manager first retries the login, 300 to 600 ms), says
        // why.
        let (mut said, mut checks, mut named) = (String::new(), 0, 0);
        let refused = Instant::now();
        while named < 3 && refused.elapsed() < Duration::from_secs(5) {
            let error = store
                .check(&limit, b"c", Duration::ZERO)
                .await
                .expect_err("a refused store decides nothing");
            said = error.to_string();
            checks += 1;
            named += usize::from(said.contains("the store's login"));
            actix_web::rt::time::sleep(Duration::from_millis(20)).await;
        }
        println!(
            "lazily {lazily}: {named} of {checks} refused checks named it by {:?}: {said}",
            refused.elapsed()
        );
        assert!(said.contains("the store's login"), "{said}");
        assert!(said.contains("redis://user:password@"), "{said}");
        user(">s3cret");
        let recovered = counting_again(&store, &limit).await;
        println!("lazily {lazily}: counting again after {recovered:?}");
        // Documented: 0.2 s (a renewal at most every 250 ms).
        assert!(
            recovered.is_some_and(|after| after < Duration::from_secs(1)),
            "still refused {recovered:?} after the login was let in"
        );
    }
}

/// How long `store` takes to decide a check of `limit` again, checking every 20 ms; none
/// within 5 s.
async fn counting_again(store: &RedisStore, limit: &Limit) -> Option<Duration> {
    let since = Instant::now();
    while since.elapsed() < Duration::from_secs(5) {
        if store.check(limit, b"c", Duration::ZERO).await.is_ok() {
            return Some(since.elapsed());
        }
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// A server at its `maxclients` (every client connecting again after a restart) turns away
/// the connections of a store that logs in: each check fails meanwhile (the fault policy
/// answers it), and the store counts again once there is room.
#[actix_web::test]
async fn a_store_turned_away_by_a_full_server_counts_again_once_there_is_room() {
    let redis = RedisServer::start();
    redis.command(&[
        "ACL", "SETUSER", "limiter", "on", ">s3cret", "~*", "&*", "+@all",
    ]);
    let url = format!("redis://limiter:s3cret@127.0.0.1:{}", redis.port());
    let store = RedisStore::connect(&url).await.unwrap();
    let limit = Limit::new("full", Policy::new(1000, Duration::from_secs(60)).unwrap());
    store.check(&limit, b"c", Duration::ZERO).await.unwrap();
    // Room for four clients, taken by connections that say nothing, once the store's are
    // gone.
    redis.command(&["CONFIG", "SET", "maxclients", "4"]);
    redis.command(&["CLIENT", "KILL", "USER", "limiter"]);
    let fillers: Vec<std::net::TcpStream> = (0..4)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", redis.port())).unwrap())
        .collect();
    let full = Instant::now();
    while redis.try_command(&["PING"]).is_some() {
        assert!(
            full.elapsed() < Duration::from_secs(2),
            "the server never filled"
        );
    }
    let mut said = String::new();
    let turned_away = Instant::now();
    while turned_away.elapsed() < Duration::from_millis(600) {
        said = store
            .check(&limit, b"c", Duration::ZERO)
            .await
            .expect_err("a store turned away decides nothing")
            .to_string();
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
    println!("turned away: {said}");
    drop(fillers);
    let recovered = counting_again(&store, &limit).await;
    println!("counting again after {recovered:?}");
    assert!(
        recovered.is_some(),
        "still turned away 5 s after there was room"
    );
}

/// A server that refuses Lua scripts: an ACL without `@scripting`, as some managed plans
/// have.
fn server_without_scripting() -> RedisServer {
    let acl = [
        "default",
        "on",
        "nopass",
        "~*",
        "&*",
        "+@all",
        "-@scripting",
    ];
    let options = std::iter::once("--user").chain(acl).map(String::from);
    RedisServer::start_on(common::redis_server::free_port(), options.collect())
}

/// Why `RedisStore::connect` refuses `url` (it must).
async fn refusal_at_connect(url: &str) -> String {
    match RedisStore::connect(url).await {
        Ok(_) => panic!("connected to {url}, which the store must refuse"),
        Err(error) => error.to_string(),
    }
}
