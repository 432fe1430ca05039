//! Async resolvers: `key = path` and `policy = path` naming an `async fn` (a tenant's key
//! and plan in a database), through real actix services with the manual clock — the
//! attribute, the `RateLimit` middleware, `#[concurrency_limit]` — in memory and on Redis
//! across two instances (feature `redis`); and the timeout: a resolver that does not answer
//! in time counts as `None` (the address, the declared policy), never as a refusal.
#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use actix_web::{test, web, App, HttpRequest, HttpResponse};
use common::CLIENT;
use limiter::{
    concurrency_limit, rate_limit, KeySpec, Limiter, ManualClock, Policy, RateLimit, Resolver,
};

const MINUTE: Duration = Duration::from_secs(60);

/// The "database": which tenant an API key belongs to, and the tenant's plan. Each lookup
/// awaits the runtime's timer, as a query would. (The axum suite asks it too.)
pub(crate) async fn lookup(api_key: &str) -> Option<(&'static str, Option<u32>)> {
    tokio::time::sleep(Duration::from_millis(2)).await;
    match api_key {
        "acme-1" | "acme-2" => Some(("acme", Some(4))),
        "globex-1" => Some(("globex", None)),
        _ => None,
    }
}

fn api_key(req: &HttpRequest) -> Option<&str> {
    req.headers().get("x-api-key")?.to_str().ok()
}

async fn tenant(req: &HttpRequest) -> Option<String> {
    let (tenant, _) = lookup(api_key(req)?).await?;
    Some(tenant.to_string())
}

/// A tenant's plan: acme pays for 4 a minute; the others get the declared 2.
async fn plan(req: &HttpRequest) -> Option<Policy> {
    let (_, per_minute) = lookup(api_key(req)?).await?;
    Policy::new(per_minute?, MINUTE).ok()
}

/// A lookup that never comes back in time.
async fn stuck(_: &HttpRequest) -> Option<String> {
    tokio::time::sleep(Duration::from_secs(3_600)).await;
    Some("never".to_string())
}

#[rate_limit(2, per = "1m", key = tenant, policy = plan, scope = "tenant-api")]
async fn api() -> HttpResponse {
    HttpResponse::Ok().finish()
}

/// A plan that never comes back in time.
async fn stuck_plan(_: &HttpRequest) -> Option<Policy> {
    tokio::time::sleep(Duration::from_secs(3_600)).await;
    Policy::new(1_000, MINUTE).ok()
}

#[rate_limit(2, per = "1m", key = stuck, scope = "stuck-api")]
async fn stuck_api() -> HttpResponse {
    HttpResponse::Ok().finish()
}

/// Both of its resolvers stuck, and a second limit with a stuck key.
#[rate_limit(2, per = "1m", key = stuck, policy = stuck_plan, scope = "stuck-both")]
#[rate_limit(5, per = "1m", key = stuck, scope = "stuck-both-too")]
async fn stuck_both() -> HttpResponse {
    HttpResponse::Ok().finish()
}

/// How many times `tenant_counted` was asked.
static LOOKUPS: AtomicUsize = AtomicUsize::new(0);

async fn tenant_counted(req: &HttpRequest) -> Option<String> {
    LOOKUPS.fetch_add(1, Ordering::SeqCst);
    tenant(req).await
}

/// A short and a long limit of one tenant, and a slot: one lookup serves all three.
#[concurrency_limit(2, key = tenant_counted)]
#[rate_limit(3, per = "1s", key = tenant_counted, scope = "tenant-second")]
#[rate_limit(5, per = "1m", key = tenant_counted, scope = "tenant-minute")]
async fn search() -> HttpResponse {
    HttpResponse::Ok().finish()
}

#[concurrency_limit(1, key = tenant)]
async fn report() -> HttpResponse {
    tokio::time::sleep(Duration::from_millis(50)).await;
    HttpResponse::Ok().finish()
}

fn routes(config: &mut web::ServiceConfig) {
    config
        .route("/api", web::get().to(api))
        .route("/stuck", web::get().to(stuck_api))
        .route("/stuck-both", web::get().to(stuck_both))
        .route("/report", web::get().to(report))
        .route("/search", web::get().to(search));
}

/// A GET of `path` from `peer` with `api_key`: its status.
async fn get<B>(
    app: &impl actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    path: &str,
    peer: &str,
    key: &str,
) -> u16 {
    let req = test::TestRequest::get()
        .uri(path)
        .peer_addr(peer.parse().unwrap())
        .insert_header(("x-api-key", key))
        .to_request();
    test::call_service(app, req).await.status().as_u16()
}

/// Two API keys of one tenant share its budget, from different addresses; the tenant's
/// plan, read by an `async fn`, gives it 4 a minute; another tenant has the declared 2.
#[actix_web::test]
async fn an_async_key_and_policy_count_a_tenant_by_its_plan() {
    let clock = ManualClock::new();
    let limiter = Limiter::builder().clock(clock.clone()).build();
    let app = test::init_service(App::new().app_data(limiter).configure(routes)).await;
    let acme: Vec<u16> = in_turn(&app, "/api", &["acme-1", "acme-2"], 6).await;
    assert_eq!(
        acme,
        [200, 200, 200, 200, 429, 429],
        "acme's plan: 4 a minute"
    );
    let globex: Vec<u16> = in_turn(&app, "/api", &["globex-1"], 3).await;
    assert_eq!(globex, [200, 200, 429], "globex: the declared 2");
    // An unknown key: no tenant, so the address; and no plan, so the declared policy.
    assert_eq!(get(&app, "/api", "198.51.100.9:1", "nobody").await, 200);
    assert_eq!(get(&app, "/api", "198.51.100.9:1", "other").await, 200);
    assert_eq!(get(&app, "/api", "198.51.100.9:1", "again").await, 429);
    clock.advance(MINUTE);
    assert_eq!(get(&app, "/api", "192.0.2.1:1", "acme-2").await, 200);
}

/// `n` requests in turn, cycling through `keys`, each from an address of its own.
async fn in_turn<B>(
    app: &impl actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    path: &str,
    keys: &[&str],
    n: usize,
) -> Vec<u16> {
    let mut statuses = Vec::new();
    for i in 0..n {
        let peer = format!("203.0.113.{}:4000", i + 1);
        statuses.push(get(app, path, &peer, keys[i % keys.len()]).await);
    }
    statuses
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
async fn admitted_after_one_timeout<B>(
    app: &impl actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse<B>,
        Error = actix_web::Error,
    >,
    path: &str,
) {
    let started = tokio::time::Instant::now();
    assert_eq!(get(app, path, CLIENT, "a").await, 200);
    let took = started.elapsed();
    // Tokio's timer rounds a deadline up to its next millisecond.
    assert!(
        took >= Duration::from_millis(30) && took <= Duration::from_millis(31),
        "{path}: given up after one timeout, took {took:?}"
    );
}

/// A resolver that does not answer within the limiter's timeout is given up after it:
/// the request is counted by its address (as for `None`), not refused, not held.
#[actix_web::test]
async fn a_resolver_that_does_not_answer_in_time_counts_as_none() {
    let app = test::init_service(App::new().app_data(impatient()).configure(routes)).await;
    admitted_after_one_timeout(&app, "/stuck").await;
    // Whatever the keys, one address: the declared 2, then 429.
    assert_eq!(get(&app, "/stuck", CLIENT, "b").await, 200);
    assert_eq!(get(&app, "/stuck", CLIENT, "c").await, 429);
    assert_eq!(get(&app, "/stuck", "192.0.2.1:1", "d").await, 200);
}

/// All of a request's resolvers share one timeout: three stuck ones (two keys, a plan)
/// hold the request the timeout once, not three times; the stuck plan leaves the declared
/// 2 a minute, the stuck keys the address.
#[actix_web::test]
async fn a_requests_resolvers_share_one_timeout() {
    let app = test::init_service(App::new().app_data(impatient()).configure(routes)).await;
    admitted_after_one_timeout(&app, "/stuck-both").await;
    assert_eq!(get(&app, "/stuck-both", CLIENT, "b").await, 200);
    assert_eq!(
        get(&app, "/stuck-both", CLIENT, "c").await,
        429,
        "the declared 2, not the late plan's 1,000"
    );
}

/// A request whose limits share one `async` key function asks it once, and all of them
/// count by that one answer.
#[actix_web::test]
async fn one_resolver_is_asked_once_per_request() {
    let clock = ManualClock::new();
    let limiter = Limiter::builder().clock(clock.clone()).build();
    let app = test::init_service(App::new().app_data(limiter).configure(routes)).await;
    let before = LOOKUPS.load(Ordering::SeqCst);
    let statuses = in_turn(&app, "/search", &["acme-1", "acme-2"], 4).await;
    assert_eq!(statuses, [200, 200, 200, 429], "the tenant's 3 a second");
    assert_eq!(
        LOOKUPS.load(Ordering::SeqCst) - before,
        4,
        "one lookup per request"
    );
    clock.advance(Duration::from_secs(1));
    let statuses = in_turn(&app, "/search", &["acme-2"], 3).await;
    assert_eq!(statuses, [200, 200, 429], "then the minute's 5");
}

/// An async key made by a function, reading the header it was made for: every one it
/// makes has the same type.
fn header_key(name: &'static str) -> impl AsyncFn(&HttpRequest) -> Option<String> + Send + Sync {
    async move |req: &HttpRequest| Some(req.headers().get(name)?.to_str().ok()?.to_owned())
}

/// Two resolvers of one type that are different functions (closures capturing different
/// headers) each count by their own answer: only a type that names one function has its
/// answer kept for the request.
#[actix_web::test]
async fn resolvers_of_one_type_but_different_values_are_asked_each() {
    let limiter = Limiter::builder().clock(ManualClock::new()).build();
    let by = |scope: &'static str, name: &'static str| {
        RateLimit::new(Policy::new(1, MINUTE).unwrap())
            .scope(scope)
            .key(KeySpec::Resolved(Resolver::new(header_key(name))))
    };
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .wrap(by("by-a", "x-a"))
            .wrap(by("by-b", "x-b"))
            .route("/", web::get().to(HttpResponse::Ok)),
    )
    .await;
    let mut statuses = Vec::new();
    for (a, b) in [("1", "1"), ("2", "1"), ("1", "3"), ("4", "5")] {
        let req = test::TestRequest::get()
            .uri("/")
            .peer_addr(CLIENT.parse().unwrap())
            .insert_header(("x-a", a))
            .insert_header(("x-b", b))
            .to_request();
        statuses.push(test::call_service(&app, req).await.status().as_u16());
    }
    // b=1 is spent by the first; a=1 too, whichever limit is asked first.
    assert_eq!(statuses, [200, 429, 429, 200]);
}

/// The middleware takes the same resolvers: `KeySpec::Resolved(Resolver::new(async fn))`.
#[actix_web::test]
async fn the_middleware_awaits_an_async_key() {
    let limiter = Limiter::builder().clock(ManualClock::new()).build();
    let limit = RateLimit::new(Policy::new(3, MINUTE).unwrap())
        .scope("tenant-middleware")
        .key(KeySpec::Resolved(Resolver::new(tenant)));
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .wrap(limit)
            .route("/", web::get().to(HttpResponse::Ok)),
    )
    .await;
    let statuses = in_turn(&app, "/", &["acme-1", "acme-2"], 4).await;
    assert_eq!(statuses, [200, 200, 200, 429]);
    assert_eq!(in_turn(&app, "/", &["globex-1"], 1).await, [200]);
}

/// A concurrency limit keyed by an async resolver: one report per tenant at a time,
/// whichever of its keys asks.
#[actix_web::test]
async fn a_concurrency_limit_awaits_an_async_key() {
    let limiter = Limiter::builder().clock(ManualClock::new()).build();
    let app = test::init_service(App::new().app_data(limiter).configure(routes)).await;
    let (first, second, other) = tokio::join!(
        get(&app, "/report", "203.0.113.1:1", "acme-1"),
        get(&app, "/report", "203.0.113.2:1", "acme-2"),
        get(&app, "/report", "203.0.113.3:1", "globex-1"),
    );
    let mut acme = [first, second];
    acme.sort_unstable();
    assert_eq!((acme, other), ([200, 429], 200));
}

/// The route table says which resolvers are async.
#[::std::prelude::v1::test]
fn the_route_table_shows_async_resolvers() {
    let table = limiter::routes().to_string();
    let line = table
        .lines()
        .find(|line| line.starts_with("tenant-api"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(line.contains("async-function"), "{line}");
    assert!(line.contains("policy=async-fn"), "{line}");
}

#[cfg(feature = "redis")]
mod on_redis {
    use super::*;
    use common::redis_server::RedisServer;

    /// Two instances on one Redis: a tenant's keys share one budget of its plan across
    /// both, exactly, under 100 concurrent requests.
    #[actix_web::test]
    async fn a_tenants_budget_is_exact_across_instances() {
        let server = RedisServer::start();
        let clock = ManualClock::starting_at(Duration::from_secs(1_700_000_040));
        let mut apps = Vec::new();
        for _ in 0..2 {
            let limiter = common::redis_instance(&server.url(), &clock).await;
            apps.push(test::init_service(App::new().app_data(limiter).configure(routes)).await);
        }
        let requests = (0..100).map(|i| {
            let app = &apps[i % 2];
            let key = if i % 3 == 0 { "acme-1" } else { "acme-2" };
            let peer = format!("203.0.113.{}:4000", i % 250 + 1);
            async move { get(app, "/api", &peer, key).await }
        });
        let statuses = futures_util::future::join_all(requests).await;
        let admitted = statuses.iter().filter(|&&s| s == 200).count();
        let rejected = statuses.iter().filter(|&&s| s == 429).count();
        println!("100 concurrent over two instances, acme's plan of 4: {admitted} admitted");
        assert_eq!((admitted, rejected), (4, 96));
        // globex's declared 2, through either instance.
        assert_eq!(get(&apps[0], "/api", "192.0.2.1:1", "globex-1").await, 200);
        assert_eq!(get(&apps[1], "/api", "192.0.2.2:1", "globex-1").await, 200);
        assert_eq!(get(&apps[0], "/api", "192.0.2.3:1", "globex-1").await, 429);
    }
}
