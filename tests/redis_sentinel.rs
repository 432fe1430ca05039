//! The Redis store behind Redis Sentinel: a master, a replica and one sentinel that these
//! tests start on free ports (`redis-server CONFIG --sentinel`, or Valkey's). Run with
//! `cargo test --features redis`.
#![cfg(feature = "redis")]
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::redis_server::{free_port, server_binary, RedisServer};
use common::replays::runtime;
use limiter::{Limit, Policy, RedisStore, Store};
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};

/// A sentinel watching the master at `master_port` as the service `limits`, which it calls
/// down after half a second.
struct Sentinel {
    port: u16,
    child: Child,
    _dir: std::path::PathBuf,
}

impl Sentinel {
    fn start(master_port: u16) -> Sentinel {
        Sentinel::start_with(master_port, "")
    }

    /// A sentinel with more lines of configuration.
    fn start_with(master_port: u16, more: &str) -> Sentinel {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("limiter-sentinel-{port}"));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("sentinel.conf");
        std::fs::write(
            &config,
            format!(
                "port {port}\nbind 127.0.0.1\ndir {}\n\
                 sentinel monitor limits 127.0.0.1 {master_port} 1\n\
                 sentinel down-after-milliseconds limits 500\n\
                 sentinel failover-timeout limits 3000\n{more}",
                dir.display()
            ),
        )
        .unwrap();
        let child = Command::new(server_binary())
            .arg(&config)
            .arg("--sentinel")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the Redis server binary runs as a sentinel");
        let sentinel = Sentinel {
            port,
            child,
            _dir: dir,
        };
        sentinel.wait_for(
            |s| s.text(&["PING"]).as_deref() == Some("PONG"),
            "to answer",
        );
        sentinel
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// A command's reply, flattened to text, or its error as text (`None` if the sentinel
    /// cannot be reached).
    fn text(&self, args: &[&str]) -> Option<String> {
        let client = redis::Client::open(self.url()).ok()?;
        let mut connection = client
            .get_connection_with_timeout(Duration::from_millis(500))
            .ok()?;
        let mut cmd = redis::cmd(args[0]);
        for arg in &args[1..] {
            cmd.arg(*arg);
        }
        Some(match cmd.query::<redis::Value>(&mut connection) {
            Ok(value) => flatten(&value),
            Err(e) => format!("error: {e}"),
        })
    }

    fn wait_for(&self, ready: impl Fn(&Sentinel) -> bool, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !ready(self) {
            assert!(
                Instant::now() < deadline,
                "the sentinel did not come {what}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn flatten(value: &redis::Value) -> String {
    match value {
        redis::Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        redis::Value::SimpleString(text) => text.clone(),
        redis::Value::Okay => "OK".into(),
        redis::Value::Int(n) => n.to_string(),
        redis::Value::Array(items) => items.iter().map(flatten).collect::<Vec<_>>().join(" "),
        redis::Value::Map(pairs) => pairs
            .iter()
            .map(|(k, v)| format!("{} {}", flatten(k), flatten(v)))
            .collect::<Vec<_>>()
            .join(" "),
        other => format!("{other:?}"),
    }
}

/// The store finds the master through the sentinel and counts there; after a failover it
/// asks the sentinel again and counts on the new master, the budget replicated: 5 a minute
/// give 3 before the failover and exactly 2 after it. The checks while the master changes
/// get errors (the limiter's fault policy), never a count past the limit.
#[::std::prelude::v1::test]
fn a_failover_moves_the_store_to_the_new_master_with_the_budget() {
    // Replication writes an RDB file: into a directory of the test's own.
    let dir = std::env::temp_dir().join(format!("limiter-sentinel-data-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dir = dir.display().to_string();
    let master = RedisServer::start_on(free_port(), vec!["--dir".into(), dir.clone()]);
    let replica = RedisServer::start_on(
        free_port(),
        [
            "--replicaof",
            "127.0.0.1",
            &master.port().to_string(),
            "--dir",
            &dir,
        ]
        .map(String::from)
        .to_vec(),
    );
    let sentinel = Sentinel::start(master.port());
    // The sentinel learns of the replica from the master's INFO.
    sentinel.wait_for(
        |s| {
            s.text(&["SENTINEL", "REPLICAS", "limits"])
                .is_some_and(|r| r.contains(&replica.port().to_string()))
        },
        "to know the replica",
    );
    let rt = runtime();
    let store = rt
        .block_on(RedisStore::connect_sentinel(&[&sentinel.url()], "limits"))
        .unwrap();
    let limit = Limit::new("sentinel", Policy::new(5, Duration::from_secs(60)).unwrap());
    for expected in [4, 3, 2] {
        let decision = rt
            .block_on(store.check(&limit, b"client", Duration::ZERO))
            .unwrap();
        assert_eq!(decision.remaining(), expected);
    }
    // Counted on the master, and copied to the replica before it takes over.
    let name = store.key_name(&limit, b"client");
    let deadline = Instant::now() + Duration::from_secs(5);
    // (Asked again while the replica is still loading its first copy and answers LOADING.)
    while replica.try_command(&["EXISTS", &name]) != Some(redis::Value::Int(1)) {
        assert!(Instant::now() < deadline, "replicated");
        std::thread::sleep(Duration::from_millis(20));
    }
    // A failover needs a replica the sentinel finds in sync (link up, seen lately): it
    // answers NOGOODSLAVE until then.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !replica
        .try_text(&["INFO", "replication"])
        .is_some_and(|info| info.contains("master_link_status:up"))
    {
        assert!(Instant::now() < deadline, "the replica synced");
        std::thread::sleep(Duration::from_millis(50));
    }
    loop {
        let answer = sentinel.text(&["SENTINEL", "FAILOVER", "limits"]);
        if answer.as_deref() == Some("OK") {
            break;
        }
        assert!(Instant::now() < deadline, "no failover: {answer:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let new_master = replica.port().to_string();
    sentinel.wait_for(
        |s| {
            s.text(&["SENTINEL", "GET-MASTER-ADDR-BY-NAME", "limits"])
                .is_some_and(|r| r.ends_with(&new_master))
        },
        "to promote the replica",
    );
    // And the old master made its replica (writes it took in between would be lost: Redis
    // Sentinel's own model).
    // A server being reconfigured may not answer for a moment (a connection refused while
    // it switches roles, LOADING while a new replica reads the master's data): that is a
    // role not known yet, not a failure.
    let role = |server: &RedisServer| match server.try_command(&["ROLE"]) {
        Some(redis::Value::Array(items)) => flatten(&items[0]),
        Some(other) => flatten(&other),
        None => String::from("unknown"),
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while role(&master) != "slave" {
        assert!(
            Instant::now() < deadline,
            "the old master was made a replica"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let started = Instant::now();
    let (mut errors, mut admitted, mut rejected) = (0, 0, 0);
    while admitted + rejected < 4 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the store followed"
        );
        match rt.block_on(store.check(&limit, b"client", Duration::ZERO)) {
            Ok(decision) if decision.allowed() => admitted += 1,
            Ok(_) => rejected += 1,
            Err(_) => {
                errors += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
    println!(
        "after the failover: {errors} checks failed, then {admitted} admitted and {rejected} \
         rejected, within {:?}",
        started.elapsed()
    );
    assert_eq!((admitted, rejected), (2, 2));
    // They counted on the new master.
    assert_eq!(role(&replica), "master");
    assert!(replica.integer(&["EXISTS", &name]) == 1);
}

/// A master that wants a password: without one, `connect_sentinel` fails at start, saying
/// that the login was refused and where the password goes; with the password in the
/// client's `SentinelNodeConnectionInfo`, `from_sentinel` counts on the master.
#[::std::prelude::v1::test]
fn a_master_with_a_password_is_reached_with_it_and_refused_clearly_without() {
    let master = RedisServer::start_on(free_port(), Vec::new());
    let sentinel = Sentinel::start_with(master.port(), "sentinel auth-pass limits s3cret\n");
    // The password is set once the harness knows the server is up (it asks unauthenticated).
    master.command(&["CONFIG", "SET", "requirepass", "s3cret"]);
    let rt = runtime();
    let refused = rt
        .block_on(RedisStore::connect_sentinel(&[&sentinel.url()], "limits"))
        .map(|_| ())
        .unwrap_err()
        .to_string();
    println!("without the password: {refused}");
    assert!(
        refused.contains("the store's login") && refused.contains("from_sentinel"),
        "{refused}"
    );
    let login = redis::RedisConnectionInfo::default().set_password("s3cret");
    // A `String` without redis's `tls-rustls` feature (redis-tls), any `AsRef<str>` with it.
    #[allow(clippy::unnecessary_to_owned)]
    let sentinels = SentinelClient::build(
        vec![sentinel.url()],
        "limits".to_string(),
        Some(SentinelNodeConnectionInfo::default().set_redis_connection_info(login)),
        SentinelServerType::Master,
    )
    .unwrap();
    let store = rt.block_on(RedisStore::from_sentinel(sentinels)).unwrap();
    let limit = Limit::new(
        "sentinel-auth",
        Policy::new(5, Duration::from_secs(60)).unwrap(),
    );
    for expected in [4, 3, 2] {
        let decision = rt
            .block_on(store.check(&limit, b"client", Duration::ZERO))
            .unwrap();
        assert_eq!(decision.remaining(), expected);
    }
    // Counted on the master.
    let client =
        redis::Client::open(format!("redis://:s3cret@127.0.0.1:{}", master.port())).unwrap();
    let mut connection = client.get_connection().unwrap();
    let exists: i64 = redis::cmd("EXISTS")
        .arg(store.key_name(&limit, b"client"))
        .query(&mut connection)
        .unwrap();
    assert_eq!(exists, 1);
}
