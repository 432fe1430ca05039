//! A restart is not an amnesty, over real HTTP: a server blocks a client, stops gracefully,
//! saves its memory store, and a new process (its clock started again, ten minutes later)
//! restores it — the client is still refused, with the Retry-After of the time left; a
//! damaged file, one of another format version and a missing one start empty, reported.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use actix_web::web;
use common::{events, http};
use limiter::{rate_limit, Clock, Limiter, ManualClock, MemoryStore};

#[rate_limit(3, per = "15m", scope = "restart-login")]
async fn login() -> &'static str {
    "ok"
}

fn serve(store: MemoryStore, clock: ManualClock) -> (SocketAddr, actix_web::dev::ServerHandle) {
    let limiter = Limiter::builder().store(store).clock(clock).build();
    common::serve(limiter, |routes| {
        routes.route("/login", web::post().to(login));
    })
}

fn retry_after(response: &str) -> Option<&str> {
    response
        .lines()
        .find_map(|l| l.strip_prefix("retry-after: "))
        .map(str::trim)
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Blocks a client on a first server, stops it gracefully and saves its store; returns the
/// file and the wall time of the save.
async fn block_and_stop(name: &str) -> (Scratch, SystemTime) {
    let file = Scratch(std::env::temp_dir().join(format!(
        "limiter-restart-{name}-{}.state",
        std::process::id()
    )));
    let store = MemoryStore::new();
    let clock = ManualClock::starting_at(Duration::from_secs(7_200));
    let (addr, server) = serve(store.clone(), clock.clone());
    for _ in 0..3 {
        assert_eq!(http(addr, "POST", "/login", "").await.0, 200);
    }
    let (status, response) = http(addr, "POST", "/login", "").await;
    assert_eq!(status, 429);
    assert_eq!(retry_after(&response), Some("900"));
    // A graceful stop, then the save: what `HttpServer::run().await` returning allows.
    server.stop(true).await;
    let saved_at = SystemTime::now();
    assert_eq!(store.save_at(&file.0, clock.now(), saved_at).unwrap(), 1);
    (file, saved_at)
}

/// A new process ten minutes after the save, its clock started again at 5 s.
async fn start_again(file: &Scratch, saved_at: SystemTime) -> SocketAddr {
    let clock = ManualClock::starting_at(ms(5_000));
    let store =
        MemoryStore::new().restore_or_empty_at(&file.0, clock.now(), saved_at + ms(600_000));
    serve(store, clock).0
}

#[actix_web::test]
async fn a_blocked_client_is_still_blocked_after_a_restart_with_the_time_left() {
    let (file, saved_at) = block_and_stop("blocked").await;
    let addr = start_again(&file, saved_at).await;
    let (status, response) = http(addr, "POST", "/login", "").await;
    println!(
        "after 10 minutes down: {status}, Retry-After {:?}",
        retry_after(&response)
    );
    assert_eq!(status, 429);
    assert_eq!(retry_after(&response), Some("300"));
}

#[actix_web::test]
async fn a_damaged_a_foreign_version_and_a_missing_file_start_empty_and_say_why() {
    events::record();
    let (file, saved_at) = block_and_stop("damaged").await;
    let good = std::fs::read(&file.0).unwrap();
    let mut damaged = good.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0xFF;
    let mut other_version = good.clone();
    other_version[16..20].copy_from_slice(&7u32.to_le_bytes());
    for (case, contents, says) in [
        ("damaged", Some(damaged), "damaged"),
        ("another version", Some(other_version), "format 7"),
        ("missing", None, "no saved memory store"),
    ] {
        match &contents {
            Some(bytes) => std::fs::write(&file.0, bytes).unwrap(),
            None => std::fs::remove_file(&file.0).unwrap(),
        }
        let addr = start_again(&file, saved_at).await;
        let (status, _) = http(addr, "POST", "/login", "").await;
        assert_eq!(status, 200, "{case}: the store starts empty");
        let reported = match contents {
            Some(_) => events::warnings(says),
            None => events::infos(says),
        };
        assert!(!reported.is_empty(), "{case}: nothing said {says:?}");
        println!("{case}: {}", reported.last().unwrap());
    }
}
