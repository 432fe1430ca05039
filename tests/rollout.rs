//! Rolling a limit out gradually: `enforce = "10%"` on the attribute, `.enforce(..)` on the
//! middleware, a share configured per scope and raised while serving. Each client is
//! consistently in or out — on every request, and on every instance of a fleet — and the
//! clients outside the share pass their would-be rejections as a dry run does: with the
//! `X-RateLimit-Dry-Run` field and the dry run's `warn` event.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::{Service, ServiceResponse};
use actix_web::{test, web, App};
use common::{events, get_from as get, header, request, serve};
use limiter::{rate_limit, Limiter, ManualClock, MemoryStore, Policy, RateLimit, Share};

#[rate_limit(1, per = "1m", scope = "rollout", enforce = "10%")]
async fn rolled_out() -> &'static str {
    "ok"
}

#[rate_limit(1, per = "1m", scope = "rollout-configured")]
async fn configured() -> &'static str {
    "ok"
}

/// The `n`th client's address: 10,000 distinct IPv4 peers.
fn client(n: u32) -> String {
    format!(
        "10.{}.{}.{}:40000",
        (n >> 16) & 255,
        (n >> 8) & 255,
        n & 255
    )
}

/// What became of a client's request past its budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Past {
    /// Refused: the client is in the share.
    Enforced,
    /// Let through, marked: outside it.
    LetThrough,
}

fn past(res: &ServiceResponse, scope: &str) -> Past {
    match res.status().as_u16() {
        429 => {
            assert_eq!(header(res.headers(), "x-ratelimit-dry-run"), None);
            Past::Enforced
        }
        200 => {
            let marked = format!("\"{scope}\"");
            assert_eq!(
                header(res.headers(), "x-ratelimit-dry-run"),
                Some(marked.as_str())
            );
            // The fields as if enforced: nothing remains.
            assert!(header(res.headers(), "ratelimit")
                .unwrap()
                .contains(";r=0;"));
            Past::LetThrough
        }
        other => panic!("unexpected status {other}"),
    }
}

/// The clients of `0..clients` a limit was enforced on, through `app`, each client's first
/// request admitted and its next `again` all in or all out.
async fn enforced_on(
    app: &impl Service<actix_http::Request, Response = ServiceResponse, Error = actix_web::Error>,
    uri: &str,
    scope: &str,
    clients: std::ops::Range<u32>,
    again: usize,
) -> BTreeSet<u32> {
    let mut enforced = BTreeSet::new();
    for n in clients {
        let from = client(n);
        let first = get(app, uri, &from).await;
        assert_eq!(first.status(), 200);
        assert_eq!(header(first.headers(), "x-ratelimit-dry-run"), None);
        let outcomes: Vec<Past> = futures_collect(app, uri, &from, scope, again).await;
        assert!(
            outcomes.iter().all(|o| *o == outcomes[0]),
            "client {n} flapped: {outcomes:?}"
        );
        if outcomes[0] == Past::Enforced {
            enforced.insert(n);
        }
    }
    enforced
}

async fn futures_collect(
    app: &impl Service<actix_http::Request, Response = ServiceResponse, Error = actix_web::Error>,
    uri: &str,
    from: &str,
    scope: &str,
    again: usize,
) -> Vec<Past> {
    let mut outcomes = Vec::with_capacity(again);
    for _ in 0..again {
        outcomes.push(past(&get(app, uri, from).await, scope));
    }
    outcomes
}

/// 10,000 clients of a limit enforced on 10%: between 8.5% and 11.5% (the binomial's
/// standard deviation is 0.3 points: five of them), the same clients on two instances.
const TOLERANCE: std::ops::RangeInclusive<usize> = 850..=1_150;

#[actix_web::test]
async fn a_tenth_of_ten_thousand_clients_is_enforced_the_same_on_two_instances() {
    let clock = ManualClock::starting_at(Duration::from_secs(600));
    // Two instances, each with a store of its own: the choice of the clients is theirs alone.
    let instance = || async {
        let limiter = Limiter::builder()
            .clock(clock.clone())
            .store(MemoryStore::new())
            .build();
        test::init_service(
            App::new()
                .app_data(limiter)
                .route("/r", web::get().to(rolled_out)),
        )
        .await
    };
    let (a, b) = (instance().await, instance().await);
    let on_a = enforced_on(&a, "/r", "rollout", 0..10_000, 3).await;
    let on_b = enforced_on(&b, "/r", "rollout", 0..10_000, 1).await;
    println!(
        "enforce = \"10%\": {} of 10,000 clients enforced ({:.2}%), tolerance {TOLERANCE:?}",
        on_a.len(),
        on_a.len() as f64 / 100.0
    );
    assert!(TOLERANCE.contains(&on_a.len()), "{}", on_a.len());
    assert_eq!(on_a, on_b, "the two instances chose different clients");
}

#[actix_web::test]
async fn a_share_configured_and_raised_while_serving_only_adds_clients() {
    events::record();
    let clock = ManualClock::starting_at(Duration::from_secs(600));
    let limiter = Limiter::builder()
        .clock(clock.clone())
        .enforcement("rollout-configured", Share::percent(5.0).unwrap())
        .build();
    let app = test::init_service(
        App::new()
            .app_data(limiter.clone())
            .route("/c", web::get().to(configured)),
    )
    .await;
    let warned_before = events::warnings("scope=\"rollout-configured\"").len();
    let five = enforced_on(&app, "/c", "rollout-configured", 0..4_000, 1).await;
    let warned = events::warnings("scope=\"rollout-configured\"").len() - warned_before;
    // Every request let through is a dry run's would-be rejection, reported.
    assert_eq!(warned, 4_000 - five.len());

    limiter.set_enforcement("rollout-configured", Share::percent(50.0).unwrap());
    // Past the window: budgets start afresh, the share is the new one.
    clock.advance(Duration::from_secs(60));
    let half = enforced_on(&app, "/c", "rollout-configured", 0..4_000, 1).await;
    limiter.set_enforcement("rollout-configured", Share::ALL);
    clock.advance(Duration::from_secs(60));
    let all = enforced_on(&app, "/c", "rollout-configured", 0..4_000, 1).await;
    println!(
        "configured 5% -> 50% -> 100% over 4,000 clients: {} -> {} -> {} enforced",
        five.len(),
        half.len(),
        all.len()
    );
    assert!((120..=280).contains(&five.len()), "{}", five.len());
    assert!((1_800..=2_200).contains(&half.len()), "{}", half.len());
    assert!(five.is_subset(&half), "raising the share dropped clients");
    assert_eq!(all.len(), 4_000);
}

#[actix_web::test]
async fn configuration_overrides_the_declared_share_and_a_dry_run_overrides_both() {
    let clock = ManualClock::starting_at(Duration::from_secs(600));
    let limiter = Limiter::builder()
        .clock(clock.clone())
        .enforcement("rollout", Share::ALL)
        .build();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/r", web::get().to(rolled_out)),
    )
    .await;
    assert_eq!(
        enforced_on(&app, "/r", "rollout", 0..500, 1).await.len(),
        500
    );

    let dry = Limiter::builder()
        .clock(clock)
        .enforcement("rollout", Share::ALL)
        .dry_run(true)
        .build();
    let app = test::init_service(
        App::new()
            .app_data(dry)
            .route("/r", web::get().to(rolled_out)),
    )
    .await;
    assert!(enforced_on(&app, "/r", "rollout", 0..500, 1)
        .await
        .is_empty());
}

#[actix_web::test]
async fn the_middleware_rolls_out_too() {
    let clock = ManualClock::starting_at(Duration::from_secs(600));
    let limiter = Limiter::builder().clock(clock).build();
    let policy = Policy::new(1, Duration::from_secs(60)).unwrap();
    let app = test::init_service(
        App::new().app_data(limiter).service(
            web::scope("/api")
                .wrap(
                    RateLimit::new(policy)
                        .scope("rollout-api")
                        .enforce(Share::percent(25.0).unwrap()),
                )
                .route("/items", web::get().to(|| async { "[]" })),
        ),
    )
    .await;
    let enforced = enforced_on(&app, "/api/items", "rollout-api", 0..2_000, 2).await;
    println!("middleware at 25%: {} of 2,000 enforced", enforced.len());
    assert!((400..=600).contains(&enforced.len()), "{}", enforced.len());
}

/// Over real HTTP, two instances behind one budget (a store they share), each client
/// alternating between them: refused by both or let through by both, the field on the wire.
#[actix_web::test]
async fn over_http_two_instances_sharing_a_budget_agree_on_every_client() {
    let store = Arc::new(MemoryStore::new());
    let mut servers = Vec::new();
    let mut addrs = Vec::new();
    for _ in 0..2 {
        let limiter = Limiter::builder()
            .store(Arc::clone(&store))
            .trusted_proxies(["127.0.0.1/32"])
            .build();
        let (addr, server) = serve(limiter, |routes| {
            routes.route("/r", web::get().to(rolled_out));
        });
        addrs.push(addr);
        servers.push(server);
    }
    let mut enforced = 0;
    for n in 0..300u32 {
        let forwarded = format!("198.18.{}.{}", n >> 8, n & 255);
        let statuses = [
            forwarded_get(addrs[0], &forwarded).await,
            forwarded_get(addrs[1], &forwarded).await,
            forwarded_get(addrs[0], &forwarded).await,
        ];
        assert_eq!(statuses[0].0, 200, "client {n}: {statuses:?}");
        let (second, third) = (&statuses[1], &statuses[2]);
        assert_eq!(second.0, third.0, "client {n} flapped between instances");
        match second.0 {
            429 => {
                enforced += 1;
                assert!(!second
                    .1
                    .to_ascii_lowercase()
                    .contains("x-ratelimit-dry-run"));
            }
            200 => assert!(
                second
                    .1
                    .to_ascii_lowercase()
                    .contains("x-ratelimit-dry-run: \"rollout\""),
                "{}",
                second.1
            ),
            other => panic!("status {other}"),
        }
    }
    println!("over HTTP, two instances: {enforced} of 300 clients enforced");
    assert!((10..=60).contains(&enforced), "{enforced}");
    for server in servers {
        server.stop(true).await;
    }
}

/// A GET of `/r` from the trusted proxy, for the client `forwarded`.
async fn forwarded_get(addr: std::net::SocketAddr, forwarded: &str) -> (u16, String) {
    request(
        addr,
        &format!("GET /r HTTP/1.1\r\nX-Forwarded-For: {forwarded}"),
        "",
    )
    .await
}
