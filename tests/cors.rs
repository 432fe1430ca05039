//! CORS beside the limits, with `actix-cors`: a preflight a CORS layer answers is never
//! counted (unless configured), one that runs a handler always is, and the wrap order the guide shows keeps the CORS
//! headers on a 429, so that a browser page can read its `Retry-After`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::time::Duration;

use actix_cors::Cors;
use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::{test, web, App};
use common::{header, peer};
use limiter::{rate_limit, Limiter, ManualClock, Policy, RateLimit};

const ORIGIN: &str = "https://app.example";

#[rate_limit(2, per = "1m", scope = "cors-login")]
async fn login() -> &'static str {
    "ok"
}

fn limiter(count_preflights: bool) -> Limiter {
    Limiter::builder()
        .clock(ManualClock::starting_at(Duration::from_secs(600)))
        .count_preflights(count_preflights)
        .build()
}

fn cors() -> Cors {
    Cors::default()
        .allowed_origin(ORIGIN)
        .allowed_methods(["POST"])
        .expose_headers(["retry-after", "ratelimit", "ratelimit-policy"])
}

async fn preflight<B: MessageBody>(
    app: &impl Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    uri: &str,
) -> u16 {
    let req = test::TestRequest::default()
        .method(actix_web::http::Method::OPTIONS)
        .uri(uri)
        .insert_header(("origin", ORIGIN))
        .insert_header(("access-control-request-method", "POST"))
        .peer_addr(peer("203.0.113.7:1"));
    test::call_service(app, req.to_request())
        .await
        .status()
        .as_u16()
}

async fn post<B: MessageBody>(
    app: &impl Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    uri: &str,
) -> (u16, Option<String>, Option<String>) {
    let req = test::TestRequest::post()
        .uri(uri)
        .insert_header(("origin", ORIGIN))
        .peer_addr(peer("203.0.113.7:1"));
    let res = test::call_service(app, req.to_request()).await;
    (
        res.status().as_u16(),
        header(res.headers(), "access-control-allow-origin").map(str::to_string),
        header(res.headers(), "retry-after").map(str::to_string),
    )
}

#[actix_web::test]
async fn the_attribute_inside_a_cors_app_counts_no_preflight_and_its_429_carries_cors() {
    let app = test::init_service(
        App::new()
            .app_data(limiter(false))
            .wrap(cors())
            .route("/login", web::post().to(login)),
    )
    .await;
    for _ in 0..3 {
        assert_eq!(preflight(&app, "/login").await, 200);
    }
    let answers = [
        post(&app, "/login").await,
        post(&app, "/login").await,
        post(&app, "/login").await,
    ];
    let statuses: Vec<u16> = answers.iter().map(|a| a.0).collect();
    assert_eq!(statuses, [200, 200, 429]);
    assert_eq!(
        answers[2].1.as_deref(),
        Some(ORIGIN),
        "the 429 carries CORS"
    );
    assert_eq!(answers[2].2.as_deref(), Some("60"));
}

/// The middleware wrapped after `Cors` is outside it: it sees the preflights.
#[actix_web::test]
async fn the_middleware_outside_cors_counts_no_preflight_unless_told() {
    let limit =
        || RateLimit::new(Policy::new(2, Duration::from_secs(60)).unwrap()).scope("cors-api");
    for count_preflights in [false, true] {
        let app = test::init_service(
            App::new().app_data(limiter(count_preflights)).service(
                web::scope("/api")
                    .wrap(cors())
                    .wrap(limit())
                    .route("/items", web::post().to(|| async { "[]" })),
            ),
        )
        .await;
        let preflights = [
            preflight(&app, "/api/items").await,
            preflight(&app, "/api/items").await,
        ];
        let first = post(&app, "/api/items").await.0;
        println!(
            "count_preflights({count_preflights}): preflights {preflights:?}, then a POST: {first}"
        );
        match count_preflights {
            // Two preflights spent nothing: the requests get the budget.
            false => {
                assert_eq!(preflights, [200, 200]);
                assert_eq!(first, 200);
                assert_eq!(post(&app, "/api/items").await.0, 200);
                assert_eq!(post(&app, "/api/items").await.0, 429);
            }
            // Counted, as before: two preflights spend a budget of two.
            true => assert_eq!(first, 429),
        }
    }
}

/// `Cors` wrapped last is outermost: the middleware's 429 passes through it and carries the
/// CORS headers a browser needs to read `Retry-After`.
#[actix_web::test]
async fn cors_wrapped_outside_the_middleware_puts_cors_on_its_429() {
    let limit =
        RateLimit::new(Policy::new(1, Duration::from_secs(60)).unwrap()).scope("cors-outer");
    let app = test::init_service(
        App::new().app_data(limiter(false)).service(
            web::scope("/api")
                .wrap(limit)
                .wrap(cors())
                .route("/items", web::post().to(|| async { "[]" })),
        ),
    )
    .await;
    assert_eq!(preflight(&app, "/api/items").await, 200);
    assert_eq!(post(&app, "/api/items").await.0, 200);
    let refused = post(&app, "/api/items").await;
    assert_eq!(refused.0, 429);
    assert_eq!(refused.1.as_deref(), Some(ORIGIN));
    assert_eq!(refused.2.as_deref(), Some("60"));
}

/// A preflight that reaches a limited handler runs it: it is counted like any request, so
/// an `OPTIONS` flood on a route for every method runs the handler at most the limit's
/// times — with the attribute, and with the middleware over a handler without `Cors`.
#[actix_web::test]
async fn a_preflight_that_runs_the_handler_is_counted() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static RAN: AtomicUsize = AtomicUsize::new(0);
    static RAN_UNDER: AtomicUsize = AtomicUsize::new(0);

    #[rate_limit(5, per = "1m", scope = "cors-any-method")]
    async fn any_method() -> &'static str {
        RAN.fetch_add(1, Ordering::SeqCst);
        "ok"
    }

    let limit =
        RateLimit::new(Policy::new(5, Duration::from_secs(60)).unwrap()).scope("cors-under");
    let app = test::init_service(
        App::new()
            .app_data(limiter(false))
            .service(web::resource("/login").to(any_method))
            .service(
                web::scope("/api")
                    .wrap(limit)
                    .default_service(web::to(|| async {
                        RAN_UNDER.fetch_add(1, Ordering::SeqCst);
                        "ok"
                    })),
            ),
    )
    .await;
    let mut statuses = Vec::new();
    let mut under = Vec::new();
    for _ in 0..20 {
        statuses.push(preflight(&app, "/login").await);
        under.push(preflight(&app, "/api/items").await);
    }
    println!("20 preflights: attribute {statuses:?}, middleware {under:?}");
    assert_eq!(
        RAN.load(Ordering::SeqCst),
        5,
        "the handler ran {statuses:?}"
    );
    assert_eq!(
        RAN_UNDER.load(Ordering::SeqCst),
        5,
        "the service ran {under:?}"
    );
    assert_eq!(statuses.iter().filter(|s| **s == 429).count(), 15);
    assert_eq!(under.iter().filter(|s| **s == 429).count(), 15);
}
