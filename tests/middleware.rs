//! `RateLimit`, the middleware: one limit over a whole scope, through real actix services
//! driven by the manual clock.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use actix_web::{test, web, App, HttpRequest, HttpResponse};
use common::{get_from as call, header, peer, summary};
use limiter::{rate_limit, KeySpec, Limiter, ManualClock, Policy, RateLimit, Resolver};

fn limiter() -> (ManualClock, Limiter) {
    let clock = ManualClock::starting_at(Duration::from_secs(600));
    (clock.clone(), Limiter::builder().clock(clock).build())
}

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

#[rate_limit(2, per = "1m", scope = "search")]
async fn search() -> &'static str {
    "found"
}

#[actix_web::test]
async fn one_budget_over_a_whole_scope() {
    let (clock, limiter) = limiter();
    let api = RateLimit::new(Policy::new(3, Duration::from_secs(60)).unwrap()).scope("api");
    let app = test::init_service(
        App::new().app_data(limiter).service(
            web::scope("/api")
                .wrap(api)
                .route("/a", web::get().to(HttpResponse::Ok))
                .route("/b", web::get().to(HttpResponse::Ok)),
        ),
    )
    .await;
    let from = "203.0.113.7:1";
    for (path, r) in [("/api/a", 2), ("/api/b", 1), ("/api/a", 0)] {
        let res = call(&app, path, from).await;
        assert_eq!(res.status(), 200);
        assert_eq!(
            header(res.headers(), "ratelimit-policy"),
            Some("\"api\";q=3;w=60")
        );
        let expected = format!("\"api\";r={r};t=60");
        assert_eq!(header(res.headers(), "ratelimit"), Some(expected.as_str()));
    }
    let res = call(&app, "/api/b", from).await;
    assert_eq!(summary(&res), (429, s("60"), s("\"api\";r=0;t=60")));
    // Another client has its own budget; time frees the first one's.
    assert_eq!(call(&app, "/api/a", "203.0.113.8:1").await.status(), 200);
    clock.advance(Duration::from_secs(60));
    assert_eq!(call(&app, "/api/a", from).await.status(), 200);
}

#[actix_web::test]
async fn a_limited_handler_under_a_wrapped_scope_is_checked_by_both() {
    let (_, limiter) = limiter();
    let api = RateLimit::new(Policy::new(10, Duration::from_secs(60)).unwrap())
        .key(KeySpec::Global)
        .scope("api-global");
    let app = test::init_service(
        App::new().app_data(limiter).service(
            web::scope("/api")
                .wrap(api)
                .route("/search", web::get().to(search)),
        ),
    )
    .await;
    let from = "203.0.113.7:1";
    let res = call(&app, "/api/search", from).await;
    assert_eq!(
        header(res.headers(), "ratelimit-policy"),
        Some("\"api-global\";q=10;w=60, \"search\";q=2;w=60")
    );
    assert_eq!(
        header(res.headers(), "ratelimit"),
        Some("\"api-global\";r=9;t=60, \"search\";r=1;t=60")
    );
    call(&app, "/api/search", from).await;
    // The handler's limit rejects; the middleware's counted the request (two budgets).
    let res = call(&app, "/api/search", from).await;
    assert_eq!(
        summary(&res),
        (
            429,
            s("60"),
            s("\"api-global\";r=7;t=60, \"search\";r=0;t=60")
        )
    );
}

static READ: AtomicUsize = AtomicUsize::new(0);

async fn reads_its_body(body: web::Bytes) -> HttpResponse {
    READ.fetch_add(1, Ordering::SeqCst);
    HttpResponse::Ok().body(body)
}

#[actix_web::test]
async fn a_rejected_request_never_reaches_the_handler_nor_its_extractors() {
    let (_, limiter) = limiter();
    let upload = RateLimit::new(Policy::new(1, Duration::from_secs(60)).unwrap()).scope("upload");
    let app = test::init_service(
        App::new().app_data(limiter).service(
            web::resource("/upload")
                .wrap(upload)
                .route(web::post().to(reads_its_body)),
        ),
    )
    .await;
    let post = || {
        test::TestRequest::post()
            .uri("/upload")
            .peer_addr(peer("203.0.113.9:1"))
            .set_payload("x".repeat(100))
            .to_request()
    };
    assert_eq!(test::call_service(&app, post()).await.status(), 200);
    assert_eq!(test::call_service(&app, post()).await.status(), 429);
    assert_eq!(READ.load(Ordering::SeqCst), 1);
}

#[actix_web::test]
async fn the_middleware_is_listed_with_the_routes() {
    let (_, limiter) = limiter();
    let app = test::init_service(
        App::new().app_data(limiter).service(
            web::scope("/listed")
                .wrap(
                    RateLimit::new(Policy::new(7, Duration::from_secs(60)).unwrap())
                        .scope("listed"),
                )
                .route("", web::get().to(HttpResponse::Ok)),
        ),
    )
    .await;
    let _ = app;
    let listed = limiter::routes()
        .into_iter()
        .find(|r| r.handler.contains("\"listed\""))
        .expect("the middleware registered itself");
    assert_eq!(listed.limits[0].policy().max().get(), 7);
}

/// The plan a client says it is on: `x-plan: paid` gets 5 a minute, others the declared 2.
fn plan(req: &HttpRequest) -> Option<Policy> {
    match req.headers().get("x-plan")?.as_bytes() {
        b"paid" => Policy::new(5, Duration::from_secs(60)).ok(),
        _ => None,
    }
}

/// A policy chosen per request: a paying client gets its 5, a free one the declared 2, each
/// a budget of its own, and the header fields show the policy chosen; the route table says
/// the middleware has a policy function.
#[actix_web::test]
async fn the_middleware_chooses_a_policy_per_request() {
    let (_, limiter) = limiter();
    let app = test::init_service(
        App::new().app_data(limiter).service(
            web::scope("/plans")
                .wrap(
                    RateLimit::new(Policy::new(2, Duration::from_secs(60)).unwrap())
                        .scope("plans")
                        .resolve_policy(Resolver::new(plan)),
                )
                .route("", web::get().to(HttpResponse::Ok)),
        ),
    )
    .await;
    let get = |plan: &'static str, from: &'static str| {
        let req = test::TestRequest::get()
            .uri("/plans")
            .insert_header(("x-plan", plan))
            .peer_addr(from.parse().unwrap())
            .to_request();
        test::call_service(&app, req)
    };
    let mut paid = Vec::new();
    for _ in 0..6 {
        let res = get("paid", "203.0.113.20:1").await;
        paid.push((
            res.status().as_u16(),
            header(res.headers(), "ratelimit-policy").map(str::to_owned),
        ));
    }
    let q5 = || Some("\"plans\";q=5;w=60".to_string());
    assert_eq!(
        paid,
        [
            (200, q5()),
            (200, q5()),
            (200, q5()),
            (200, q5()),
            (200, q5()),
            (429, q5())
        ]
    );
    let mut free = Vec::new();
    for _ in 0..3 {
        let res = get("free", "203.0.113.21:1").await;
        free.push(summary(&res));
    }
    assert_eq!(
        free,
        [
            (200, None, s("\"plans\";r=1;t=60")),
            (200, None, s("\"plans\";r=0;t=60")),
            (429, s("60"), s("\"plans\";r=0;t=60"))
        ]
    );
    let listed = limiter::routes().to_string();
    let line = listed
        .lines()
        .find(|line| line.contains("\"plans\""))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(line.contains("policy=fn"), "{line}");
}
