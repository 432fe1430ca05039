//! §2 of the attacks, over real HTTP: a flood of keys the attacker chooses on two routes
//! must not reset the blocked clients of a third.

use std::time::Instant;

use actix_web::{web, HttpResponse};
use limiter::{rate_limit, Limiter, MemoryStore};

use crate::harness::{client, get_as, rss, Connection, Server};
use crate::load::count;

#[rate_limit(5, per = "15m", scope = "isolation-login")]
async fn login() -> HttpResponse {
    HttpResponse::Unauthorized().finish()
}

#[rate_limit(30, per = "1m", key = "header:x-api-key", scope = "isolation-search")]
async fn search() -> HttpResponse {
    HttpResponse::Ok().finish()
}

#[rate_limit(
    10,
    per = "1m",
    key = "header:x-session",
    algorithm = "fixed_window",
    scope = "isolation-export"
)]
async fn export() -> HttpResponse {
    HttpResponse::Ok().finish()
}

fn routes(config: &mut web::ServiceConfig) {
    config
        .route("/login", web::get().to(login))
        .route("/search", web::get().to(search))
        .route("/export", web::get().to(export));
}

/// The attack's size: the figures in a release build, a tenth of them in a debug
/// one (the README's test command), where they would take minutes.
struct Size {
    store_bytes: usize,
    blocked: u32,
    flood: u32,
    newcomers: u32,
}

fn size() -> Size {
    if cfg!(debug_assertions) {
        Size {
            store_bytes: 512 << 10,
            blocked: 50,
            flood: 60_000,
            newcomers: 2_000,
        }
    } else {
        Size {
            store_bytes: 8 << 20,
            blocked: 50,
            flood: 600_000,
            newcomers: 20_000,
        }
    }
}

/// Runs the attack against a fresh server; returns how many blocked clients got a fresh
/// budget.
fn attack(flood: u32) -> u32 {
    let size = size();
    let store = MemoryStore::with_max_bytes(size.store_bytes);
    let limiter = Limiter::builder()
        .store(store.clone())
        .trusted_proxies(["127.0.0.1"])
        .build();
    let server = Server::start(limiter, 2, routes);
    let rt = client();
    let started = Instant::now();
    let rss_before = rss();
    let reset = rt.block_on(async {
        let blocked = |i: u32| format!("198.51.{}.{}", i / 250, i % 250 + 1);
        for i in 0..size.blocked {
            for _ in 0..5 {
                assert_eq!(get_as(server.addr, "/login", &blocked(i)).await.status, 401);
            }
            assert_eq!(get_as(server.addr, "/login", &blocked(i)).await.status, 429);
        }
        // The flood: four connections, pipelined, a chosen key per request.
        let per_connection = flood / 4;
        let tasks: Vec<_> = (0..4u32)
            .map(|c| {
                let addr = server.addr;
                tokio::spawn(async move {
                    let mut connection = Connection::open(addr).await;
                    let mut sent = 0;
                    while sent < per_connection {
                        // Every other key searches thrice (its log takes a ring); the
                        // others export once.
                        let batch: Vec<(String, Vec<(String, String)>)> = (sent..(sent + 500)
                            .min(per_connection))
                            .map(|i| {
                                let key = u64::from(c * per_connection + i / 4 * 4)
                                    .wrapping_mul(0x9e37_79b9_7f4a_7c15);
                                if i % 4 < 3 {
                                    let key = format!("{key:x}");
                                    ("/search".into(), vec![("x-api-key".into(), key)])
                                } else {
                                    let key = format!("{:x}", key ^ 1);
                                    ("/export".into(), vec![("x-session".into(), key)])
                                }
                            })
                            .collect();
                        let statuses = connection.pipeline(&batch).await;
                        assert_eq!(statuses.len(), batch.len());
                        sent += batch.len() as u32;
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.unwrap();
        }
        // Honest newcomers on the login page.
        for i in 0..size.newcomers {
            let address = format!("203.0.{}.{}", i / 250, i % 250 + 1);
            assert_eq!(get_as(server.addr, "/login", &address).await.status, 401);
        }
        let mut statuses = Vec::new();
        for i in 0..size.blocked {
            statuses.push(get_as(server.addr, "/login", &blocked(i)).await.status);
        }
        (size.blocked as usize - count(&statuses, 429)) as u32
    });
    println!(
        "HTTP, {} KiB store, {flood} chosen keys on two routes, {} newcomers: {reset} of {} \
         blocked clients reset; the store holds {} keys in {} bytes ({} evicted); RSS {} → {} \
         MiB; {:?}",
        size.store_bytes >> 10,
        size.newcomers,
        size.blocked,
        store.len(),
        store.bytes(),
        store.evictions(),
        rss_before >> 20,
        rss() >> 20,
        started.elapsed()
    );
    assert!(store.bytes() <= size.store_bytes, "{}", store.bytes());
    reset
}

/// A brute-forcer floods the search and export routes with chosen keys to reset their own
/// login block. The login limit stays within its share: its blocked clients stay blocked.
/// (Over HTTP with an 8 MiB store and 600k requests, 50 of 50 were reset.) And the
/// control: without the flood, none is.
#[test]
fn a_flood_of_chosen_keys_never_resets_another_routes_blocked_clients() {
    let _alone = crate::harness::alone();
    assert_eq!(attack(size().flood), 0, "with the flood");
    assert_eq!(attack(0), 0, "without it");
}
