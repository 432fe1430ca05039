//! Async resolvers on axum: `key = path` and `policy = path` naming an `async fn` over
//! `&http::request::Parts` (its future `Send`, as an axum handler's must be), through the
//! attribute, `RateLimitLayer` and `#[concurrency_limit]`, with the manual clock; and the
//! timeout, one for all of a request's resolvers, after which a resolver counts as `None`
//! (the address, the declared policy), never as a refusal. The actix suite's cases
//! (`resolvers.rs`), on the axum front end.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::request::Parts;
use axum::http::{Request, StatusCode};
use axum::routing::get;
use axum::{Extension, Router};
use limiter_axum::{
    concurrency_limit, rate_limit, KeySpec, Limiter, ManualClock, Policy, RateLimitLayer, Resolver,
};
use tower::ServiceExt;

// The "database" the actix suite asks: the same tenants and plans.
use crate::resolvers::lookup;

const MINUTE: Duration = Duration::from_secs(60);
const CLIENT: &str = "203.0.113.7:4000";

fn api_key(req: &Parts) -> Option<&str> {
    req.headers.get("x-api-key")?.to_str().ok()
}

async fn tenant(req: &Parts) -> Option<String> {
    let (tenant, _) = lookup(api_key(req)?).await?;
    Some(tenant.to_string())
}

/// A tenant's plan: acme pays for 4 a minute; the others get the declared 2.
async fn plan(req: &Parts) -> Option<Policy> {
    let (_, per_minute) = lookup(api_key(req)?).await?;
    Policy::new(per_minute?, MINUTE).ok()
}

/// A lookup that never comes back in time.
async fn stuck(_: &Parts) -> Option<String> {
    tokio::time::sleep(Duration::from_secs(3_600)).await;
    Some("never".to_string())
}

/// A plan that never comes back in time.
async fn stuck_plan(_: &Parts) -> Option<Policy> {
    tokio::time::sleep(Duration::from_secs(3_600)).await;
    Policy::new(1_000, MINUTE).ok()
}

#[rate_limit(2, per = "1m", key = tenant, policy = plan, scope = "axum-tenant-api")]
async fn api() -> StatusCode {
    StatusCode::OK
}

#[rate_limit(2, per = "1m", key = stuck, scope = "axum-stuck-api")]
async fn stuck_api() -> StatusCode {
    StatusCode::OK
}

/// Both of its resolvers stuck, and a second limit with a stuck key.
#[rate_limit(2, per = "1m", key = stuck, policy = stuck_plan, scope = "axum-stuck-both")]
#[rate_limit(5, per = "1m", key = stuck, scope = "axum-stuck-both-too")]
async fn stuck_both() -> StatusCode {
    StatusCode::OK
}

/// How many times `tenant_counted` was asked.
static LOOKUPS: AtomicUsize = AtomicUsize::new(0);

async fn tenant_counted(req: &Parts) -> Option<String> {
    LOOKUPS.fetch_add(1, Ordering::SeqCst);
    tenant(req).await
}

/// A short and a long limit of one tenant, and a slot: one lookup serves all three.
#[concurrency_limit(2, key = tenant_counted)]
#[rate_limit(3, per = "1s", key = tenant_counted, scope = "axum-tenant-second")]
#[rate_limit(5, per = "1m", key = tenant_counted, scope = "axum-tenant-minute")]
async fn search() -> StatusCode {
    StatusCode::OK
}

#[concurrency_limit(1, key = tenant)]
async fn report() -> StatusCode {
    tokio::time::sleep(Duration::from_millis(50)).await;
    StatusCode::OK
}

fn routes(limiter: Limiter) -> Router {
    Router::new()
        .route("/api", get(api))
        .route("/stuck", get(stuck_api))
        .route("/stuck-both", get(stuck_both))
        .route("/report", get(report))
        .route("/search", get(search))
        .layer(Extension(limiter))
}

/// A GET of `path` from `peer` with `key`: its status.
async fn ask(router: &Router, path: &str, peer: &str, key: &str) -> u16 {
    let mut req = Request::get(path)
        .header("x-api-key", key)
        .body(Body::empty())
        .unwrap();
    let peer: SocketAddr = peer.parse().unwrap();
    req.extensions_mut().insert(ConnectInfo(peer));
    router.clone().oneshot(req).await.unwrap().status().as_u16()
}

/// `n` requests to `path` in turn, each from an address of its own, with `keys` in turn.
async fn in_turn(router: &Router, path: &str, keys: &[&str], n: usize) -> Vec<u16> {
    let mut statuses = Vec::new();
    for i in 0..n {
        let peer = format!("203.0.113.{}:4000", i + 1);
        statuses.push(ask(router, path, &peer, keys[i % keys.len()]).await);
    }
    statuses
}

/// Two API keys of one tenant share its budget, from different addresses; the tenant's
/// plan, read by an `async fn`, gives it 4 a minute; another tenant has the declared 2.
#[tokio::test]
async fn axum_an_async_key_and_policy_count_a_tenant_by_its_plan() {
    let clock = ManualClock::new();
    let router = routes(Limiter::builder().clock(clock.clone()).build());
    let acme = in_turn(&router, "/api", &["acme-1", "acme-2"], 5).await;
    assert_eq!(acme, [200, 200, 200, 200, 429], "acme's plan: 4 a minute");
    let globex = in_turn(&router, "/api", &["globex-1"], 3).await;
    assert_eq!(globex, [200, 200, 429], "the declared 2");
    clock.advance(MINUTE);
    assert_eq!(in_turn(&router, "/api", &["acme-2"], 1).await, [200]);
}

/// A limiter on paused time (tokio's, for the resolvers) that gives resolvers 30 ms.
fn impatient() -> Limiter {
    tokio::time::pause();
    Limiter::builder()
        .clock(ManualClock::new())
        .resolver_timeout(Duration::from_millis(30))
        .build()
}

/// A first request to `path` is admitted once its resolvers' one timeout has passed.
async fn admitted_after_one_timeout(router: &Router, path: &str) {
    let started = tokio::time::Instant::now();
    assert_eq!(ask(router, path, CLIENT, "a").await, 200);
    let took = started.elapsed();
    // Tokio's timer rounds a deadline up to its next millisecond.
    assert!(
        took >= Duration::from_millis(30) && took <= Duration::from_millis(31),
        "{path}: given up after one timeout, took {took:?}"
    );
}

/// A resolver that does not answer within the limiter's timeout is given up after it:
/// the request is counted by its address (as for `None`), not refused, not held.
#[tokio::test]
async fn axum_a_resolver_that_does_not_answer_in_time_counts_as_none() {
    let router = routes(impatient());
    admitted_after_one_timeout(&router, "/stuck").await;
    assert_eq!(ask(&router, "/stuck", CLIENT, "b").await, 200);
    assert_eq!(ask(&router, "/stuck", CLIENT, "c").await, 429);
    assert_eq!(ask(&router, "/stuck", "192.0.2.1:1", "d").await, 200);
}

/// All of a request's resolvers share one timeout: three stuck ones (two keys, a plan)
/// hold the request the timeout once, not three times; the stuck plan leaves the declared
/// 2 a minute, the stuck keys the address.
#[tokio::test]
async fn axum_a_requests_resolvers_share_one_timeout() {
    let router = routes(impatient());
    admitted_after_one_timeout(&router, "/stuck-both").await;
    assert_eq!(ask(&router, "/stuck-both", CLIENT, "b").await, 200);
    assert_eq!(
        ask(&router, "/stuck-both", CLIENT, "c").await,
        429,
        "the declared 2, not the late plan's 1,000"
    );
}

/// A request whose limits (two rates and a slot) share one `async` key function asks it
/// once, and all of them count by that one answer.
#[tokio::test]
async fn axum_one_resolver_is_asked_once_per_request() {
    let clock = ManualClock::new();
    let router = routes(Limiter::builder().clock(clock.clone()).build());
    let before = LOOKUPS.load(Ordering::SeqCst);
    let statuses = in_turn(&router, "/search", &["acme-1", "acme-2"], 4).await;
    assert_eq!(statuses, [200, 200, 200, 429], "the tenant's 3 a second");
    assert_eq!(
        LOOKUPS.load(Ordering::SeqCst) - before,
        4,
        "one lookup per request"
    );
    clock.advance(Duration::from_secs(1));
    let statuses = in_turn(&router, "/search", &["acme-2"], 3).await;
    assert_eq!(statuses, [200, 200, 429], "then the minute's 5");
}

/// The layer takes the same resolvers: `KeySpec::Resolved(Resolver::new(async fn))`.
#[tokio::test]
async fn axum_the_layer_awaits_an_async_key() {
    let limiter = Limiter::builder().clock(ManualClock::new()).build();
    let layer = RateLimitLayer::new(Policy::new(3, MINUTE).unwrap())
        .scope("axum-tenant-layer")
        .key(KeySpec::Resolved(Resolver::new(tenant)));
    let router = Router::new()
        .route("/", get(|| async { StatusCode::OK }))
        .layer(layer)
        .layer(Extension(limiter));
    let statuses = in_turn(&router, "/", &["acme-1", "acme-2"], 4).await;
    assert_eq!(statuses, [200, 200, 200, 429]);
    assert_eq!(in_turn(&router, "/", &["globex-1"], 1).await, [200]);
}

/// A concurrency limit keyed by an async resolver: one report per tenant at a time,
/// whichever of its keys asks.
#[tokio::test]
async fn axum_a_concurrency_limit_awaits_an_async_key() {
    let router = routes(Limiter::builder().clock(ManualClock::new()).build());
    let (first, second, other) = tokio::join!(
        ask(&router, "/report", "203.0.113.1:1", "acme-1"),
        ask(&router, "/report", "203.0.113.2:1", "acme-2"),
        ask(&router, "/report", "203.0.113.3:1", "globex-1"),
    );
    let mut acme = [first, second];
    acme.sort_unstable();
    assert_eq!((acme, other), ([200, 429], 200));
}
