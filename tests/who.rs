//! Who is being limited right now, over real HTTP: a flood of three heavy clients among many
//! light ones names the three, in order, on the routes page (its JSON and its HTML), and a
//! client keyed by a header value (an API key) is shown as a digest unless configured.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use actix_web::web;
use limiter::{rate_limit, Limiter, RejectedClient};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[rate_limit(1, per = "1m", scope = "who-login")]
async fn login() -> &'static str {
    "ok"
}

#[rate_limit(1, per = "1m", key = "header:x-api-key", scope = "who-api")]
async fn api() -> &'static str {
    "ok"
}

/// A server of one worker on loopback; its address.
fn serve(limiter: Limiter) -> (SocketAddr, actix_web::dev::ServerHandle) {
    common::serve(limiter, |routes| {
        routes
            .route("/login", web::get().to(login))
            .route("/api", web::get().to(api))
            .service(limiter::routes_service("/limits"));
    })
}

/// `count` GETs of `path` on one keep-alive connection, with `header` (a line, or empty);
/// the statuses.
async fn gets(addr: SocketAddr, path: &str, header: &str, count: usize) -> Vec<u16> {
    let exchange = async {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut statuses = Vec::with_capacity(count);
        let mut buffer = Vec::new();
        for _ in 0..count {
            let request = format!("GET {path} HTTP/1.1\r\nHost: t\r\n{header}\r\n");
            stream.write_all(request.as_bytes()).await.unwrap();
            loop {
                if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .map_or(0, |v| v.trim().parse().unwrap());
                    if buffer.len() >= end + 4 + length {
                        statuses.push(head[9..12].parse().unwrap());
                        buffer.drain(..end + 4 + length);
                        break;
                    }
                }
                let mut chunk = [0; 16 * 1024];
                let n = stream.read(&mut chunk).await.unwrap();
                assert!(n > 0, "the server closed the connection");
                buffer.extend_from_slice(&chunk[..n]);
            }
        }
        statuses
    };
    tokio::time::timeout(Duration::from_secs(60), exchange)
        .await
        .expect("answered within 60 s")
}

/// The routes page's body, as `query` asks.
async fn page(addr: SocketAddr, query: &str) -> String {
    let (_, response) = common::request(addr, &format!("GET /limits{query} HTTP/1.1"), "").await;
    response.split_once("\r\n\r\n").unwrap().1.to_string()
}

fn forwarded(client: &str) -> String {
    format!("X-Forwarded-For: {client}\r\n")
}

#[actix_web::test]
async fn a_flood_of_three_heavy_clients_among_many_light_ones_names_the_three_in_order() {
    let limiter = Limiter::builder().trusted_proxies(["127.0.0.1"]).build();
    let (addr, server) = serve(limiter.clone());
    // 2,000 light clients, two requests each (one admitted, one rejected), and three heavy
    // ones, interleaved in 20 rounds: 400, 250 and 150 rejections.
    let heavy = [
        ("198.51.100.1", 401),
        ("198.51.100.2", 251),
        ("198.51.100.3", 151),
    ];
    for round in 0..20usize {
        for n in round * 100..(round + 1) * 100 {
            let light = format!("10.1.{}.{}", n / 256, n % 256);
            assert_eq!(
                gets(addr, "/login", &forwarded(&light), 2).await,
                [200, 429]
            );
        }
        for (client, requests) in heavy {
            let share = requests / 20 + usize::from(round < requests % 20);
            gets(addr, "/login", &forwarded(client), share).await;
        }
    }
    let top = limiter.rejected_clients("who-login");
    let named: Vec<&str> = top.iter().take(3).map(|c| c.client.as_str()).collect();
    println!(
        "who is limited: {:?} (of 2,800 rejections, 2,000 of them one per client)",
        top.iter()
            .take(4)
            .map(|c| (&c.client, c.rejections, c.overcount))
            .collect::<Vec<_>>()
    );
    assert_eq!(named, ["198.51.100.1", "198.51.100.2", "198.51.100.3"]);
    for (client, truly) in top.iter().zip([400, 250, 150]) {
        assert!(
            client.rejections >= truly && client.rejections - client.overcount <= truly,
            "{client:?} for {truly}"
        );
    }
    // The page says the same, as JSON and as HTML.
    let json: serde_json::Value = serde_json::from_str(&page(addr, "?format=json").await).unwrap();
    let scope = json["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["scope"] == "who-login")
        .expect("the scope is listed");
    let listed: Vec<&str> = scope["clients"]
        .as_array()
        .unwrap()
        .iter()
        .take(3)
        .map(|c| c["client"].as_str().unwrap())
        .collect();
    assert_eq!(listed, named);
    assert_eq!(
        scope["clients"][0]["rejections"].as_u64(),
        Some(top[0].rejections)
    );
    assert!(scope["clients"].as_array().unwrap().len() <= 10);
    let html = page(addr, "").await;
    assert!(html.contains("<code>198.51.100.1</code>"), "{html}");
    server.stop(true).await;
}

#[actix_web::test]
async fn an_api_key_is_shown_as_a_digest_unless_configured() {
    for reveal in [false, true] {
        let limiter = Limiter::builder().trace_keys(reveal).build();
        let (addr, server) = serve(limiter.clone());
        let statuses = gets(addr, "/api", "X-Api-Key: sk_live_4242\r\n", 3).await;
        assert_eq!(statuses, [200, 429, 429]);
        let top: Vec<RejectedClient> = limiter.rejected_clients("who-api");
        let shown = &top[0].client;
        assert_eq!(top[0].rejections, 2);
        if reveal {
            assert_eq!(shown, "header:sk_live_4242");
        } else {
            assert!(
                shown.starts_with("header:sha1:") && shown.len() == 28,
                "{shown}"
            );
            assert!(!page(addr, "?format=json").await.contains("sk_live"));
        }
        server.stop(true).await;
    }
}

#[actix_web::test]
async fn tracking_can_be_turned_off() {
    let limiter = Limiter::builder().track_rejected_clients(false).build();
    let (addr, server) = serve(limiter.clone());
    assert_eq!(gets(addr, "/login", "", 3).await, [200, 429, 429]);
    assert!(limiter.rejected_clients("who-login").is_empty());
    let json: serde_json::Value = serde_json::from_str(&page(addr, "?format=json").await).unwrap();
    assert_eq!(json["rejected"], serde_json::json!([]));
    server.stop(true).await;
}
