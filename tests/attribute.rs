//! `#[rate_limit]` on real actix services, driven by the manual clock.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use actix_web::dev::{Payload, Service, ServiceResponse};
use actix_web::{get, test, web, App, FromRequest, HttpRequest, HttpResponse, Responder};
use common::{header, ms, peer, summary, CLIENT};
use limiter::{rate_limit, Limiter, ManualClock};
use serde::Deserialize;

/// A manual clock at a whole minute, and a limiter reading it.
fn limiter() -> (ManualClock, Limiter) {
    let clock = ManualClock::starting_at(Duration::from_secs(600));
    let limiter = Limiter::builder().clock(clock.clone()).build();
    (clock, limiter)
}

async fn call(
    app: &impl Service<actix_http::Request, Response = ServiceResponse, Error = actix_web::Error>,
    method: &str,
    uri: &str,
) -> ServiceResponse {
    let req = match method {
        "POST" => test::TestRequest::post(),
        _ => test::TestRequest::get(),
    };
    test::call_service(app, req.uri(uri).peer_addr(peer(CLIENT)).to_request()).await
}

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

// ---- the basic sequence, and the 429 itself ----------------------------------------------

#[rate_limit(5, per = "1m")]
async fn login() -> impl Responder {
    "welcome"
}

#[actix_web::test]
async fn five_pass_then_an_exact_429() {
    let (clock, limiter) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/login", web::get().to(login)),
    )
    .await;
    // Requests every 1.5 s; the first one's instant leaves the window at 60 s, so `t` is
    // 60 − 1.5 k, rounded up.
    for (k, t) in [60, 59, 57, 56, 54].into_iter().enumerate() {
        let res = call(&app, "GET", "/login").await;
        assert_eq!(res.status(), 200);
        assert_eq!(
            header(res.headers(), "ratelimit-policy"),
            Some("\"login\";q=5;w=60")
        );
        let expected = format!("\"login\";r={};t={t}", 4 - k);
        assert_eq!(header(res.headers(), "ratelimit"), Some(expected.as_str()));
        assert_eq!(test::read_body(res).await, "welcome");
        clock.advance(ms(1_500));
    }
    // 7.5 s after the first request: it leaves the window in 52.5 s, so 53 whole seconds.
    let res = call(&app, "GET", "/login").await;
    assert_eq!(summary(&res), (429, s("53"), s("\"login\";r=0;t=53")));
    assert_eq!(header(res.headers(), "cache-control"), Some("no-store"));
    assert_eq!(
        header(res.headers(), "content-type"),
        Some("application/problem+json")
    );
    let body: serde_json::Value = serde_json::from_slice(&test::read_body(res).await).unwrap();
    assert_eq!(body["status"], 429);
    assert_eq!(body["title"], "Too Many Requests");
    assert_eq!(body["type"], "about:blank");
    assert_eq!(body["retry_after"], 53);
    assert!(body["detail"].as_str().unwrap().contains("Retry-After"));
}

#[rate_limit(1, per = "1m", scope = "quota-login")]
#[rate_limit(1, per = "1h", scope = "quota-hourly")]
async fn quota_login() -> &'static str {
    "welcome"
}

#[actix_web::test]
async fn the_ietf_drafts_problem_type_names_the_violated_policy_when_asked() {
    let clock = ManualClock::starting_at(Duration::from_secs(600));
    let limiter = Limiter::builder()
        .clock(clock.clone())
        .quota_exceeded_problems(true)
        .build();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/login", web::get().to(quota_login)),
    )
    .await;
    assert_eq!(call(&app, "GET", "/login").await.status(), 200);
    // A minute on, the minute's limit admits again and the hour's refuses: it is named.
    clock.advance(Duration::from_secs(60));
    let res = call(&app, "GET", "/login").await;
    assert_eq!(res.status(), 429);
    assert_eq!(header(res.headers(), "retry-after"), Some("3540"));
    let body: serde_json::Value = serde_json::from_slice(&test::read_body(res).await).unwrap();
    assert_eq!(
        body["type"],
        "https://iana.org/assignments/http-problem-types#quota-exceeded"
    );
    assert_eq!(
        body["title"],
        "Request cannot be satisfied as assigned quota has been exceeded"
    );
    assert_eq!(body["status"], 429);
    assert_eq!(
        body["violated-policies"],
        serde_json::json!(["quota-hourly"])
    );
    assert_eq!(body["retry_after"], 3_540);
    assert!(body["detail"].as_str().unwrap().contains("Retry-After"));
}

// ---- every algorithm at the edges of its window -------------------------------------------

#[rate_limit(2, per = "1m", algorithm = "sliding_window")]
async fn sliding() -> &'static str {
    "ok"
}

#[rate_limit(2, per = "1m", algorithm = "fixed_window")]
async fn fixed() -> &'static str {
    "ok"
}

#[rate_limit(2, per = "1m", algorithm = "token_bucket")]
async fn bucket() -> &'static str {
    "ok"
}

#[rate_limit(2, per = "1m", algorithm = "sliding_window_counter")]
async fn counter() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn every_algorithm_answers_exactly_at_its_edges() {
    // (path, RateLimit t after each of the two admitted requests, Retry-After of the third,
    //  time of the edge after the first request)
    let cases = [
        ("/sliding", ["60", "60"], "60", 60_000),
        ("/fixed", ["60", "60"], "60", 60_000),
        ("/bucket", ["30", "30"], "30", 30_000),
        // The counter's estimate is 2 × 60/60 at the next window's start, and below 2 a
        // millisecond later.
        ("/counter", ["61", "61"], "61", 60_001),
    ];
    for (path, t, retry, edge) in cases {
        let (clock, limiter) = limiter();
        let app = test::init_service(
            App::new()
                .app_data(limiter)
                .route("/sliding", web::get().to(sliding))
                .route("/fixed", web::get().to(fixed))
                .route("/bucket", web::get().to(bucket))
                .route("/counter", web::get().to(counter)),
        )
        .await;
        let name = &path[1..];
        for (i, t) in t.iter().enumerate() {
            let res = call(&app, "GET", path).await;
            let expected = format!("\"{name}\";r={};t={t}", 1 - i);
            assert_eq!(summary(&res), (200, None, Some(expected)), "{path} #{i}");
        }
        let res = call(&app, "GET", path).await;
        let expected = format!("\"{name}\";r=0;t={retry}");
        assert_eq!(summary(&res), (429, s(retry), Some(expected)), "{path}");
        clock.advance(ms(edge - 1));
        let res = call(&app, "GET", path).await;
        let expected = format!("\"{name}\";r=0;t=1");
        assert_eq!(
            summary(&res),
            (429, s("1"), Some(expected)),
            "{path} 1ms early"
        );
        clock.advance(ms(1));
        assert_eq!(
            call(&app, "GET", path).await.status(),
            200,
            "{path} on the edge"
        );
    }
}

// ---- composition with the route macros ------------------------------------------------------

/// A doc comment and another attribute survive.
#[get("/above")]
#[rate_limit(1, per = "1h")]
#[allow(clippy::unused_async)]
pub async fn route_above() -> HttpResponse {
    HttpResponse::Ok().finish()
}

#[rate_limit(1, per = "1h")]
#[get("/below")]
pub(crate) async fn route_below() -> HttpResponse {
    HttpResponse::Ok().finish()
}

#[actix_web::route("/any", method = "GET", method = "POST")]
#[rate_limit(1, per = "1h")]
async fn route_any() -> HttpResponse {
    HttpResponse::Ok().finish()
}

#[actix_web::test]
async fn works_with_the_route_macro_above_or_below() {
    let (_, limiter) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .service(route_above)
            .service(route_below)
            .service(route_any),
    )
    .await;
    for path in ["/above", "/below"] {
        assert_eq!(call(&app, "GET", path).await.status(), 200);
        assert_eq!(call(&app, "GET", path).await.status(), 429);
    }
    // #[route] with several methods: one budget for the handler, whatever the method.
    assert_eq!(call(&app, "POST", "/any").await.status(), 200);
    assert_eq!(call(&app, "GET", "/any").await.status(), 429);
}

// ---- return types, `?`, patterns ------------------------------------------------------------

#[derive(Debug)]
struct NotFound;

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no such item")
    }
}

impl actix_web::ResponseError for NotFound {
    fn status_code(&self) -> actix_web::http::StatusCode {
        actix_web::http::StatusCode::NOT_FOUND
    }
}

fn find(id: u32) -> Result<u32, NotFound> {
    if id == 7 {
        Ok(id)
    } else {
        Err(NotFound)
    }
}

#[derive(Deserialize)]
struct Item {
    shelf: String,
    id: u32,
}

#[rate_limit(3, per = "1m")]
async fn item(web::Query(Item { shelf, id }): web::Query<Item>) -> Result<String, NotFound> {
    let found = find(id)?;
    if shelf == "early" {
        return Ok("returned early".to_string());
    }
    Ok(format!("{shelf}/{found}"))
}

#[actix_web::test]
async fn keeps_the_handlers_types_question_marks_and_patterns() {
    let (_, limiter) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/item", web::get().to(item)),
    )
    .await;
    let res = call(&app, "GET", "/item?shelf=top&id=7").await;
    assert_eq!(res.status(), 200);
    assert_eq!(test::read_body(res).await, "top/7");
    let res = call(&app, "GET", "/item?shelf=top&id=8").await;
    assert_eq!(res.status(), 404);
    assert!(
        header(res.headers(), "ratelimit").is_some(),
        "errors carry the fields too"
    );
    let res = call(&app, "GET", "/item?shelf=early&id=7").await;
    assert_eq!(test::read_body(res).await, "returned early");
    assert_eq!(
        call(&app, "GET", "/item?shelf=top&id=7").await.status(),
        429
    );
}

// ---- stacked limits ----------------------------------------------------------------------

#[rate_limit(2, per = "1m")]
#[rate_limit(3, per = "1h")]
async fn stacked() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn stacked_limits_answer_as_one() {
    let (clock, limiter) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/", web::get().to(stacked)),
    )
    .await;
    let res = call(&app, "GET", "/").await;
    assert_eq!(
        header(res.headers(), "ratelimit-policy"),
        Some("\"stacked\";q=2;w=60, \"stacked-1h\";q=3;w=3600")
    );
    assert_eq!(
        header(res.headers(), "ratelimit"),
        Some("\"stacked\";r=1;t=60, \"stacked-1h\";r=2;t=3600")
    );
    assert_eq!(call(&app, "GET", "/").await.status(), 200);
    // Rejected by the first limit: the hourly one is not charged for it, and says so.
    let res = call(&app, "GET", "/").await;
    assert_eq!(
        summary(&res),
        (
            429,
            s("60"),
            s("\"stacked\";r=0;t=60, \"stacked-1h\";r=1;t=3600")
        )
    );
    clock.advance(Duration::from_secs(60));
    // The third of the hour passes (had the rejection been charged, it would be the fourth).
    let res = call(&app, "GET", "/").await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        header(res.headers(), "ratelimit"),
        Some("\"stacked\";r=1;t=60, \"stacked-1h\";r=0;t=3540")
    );
    // Now the hourly limit rejects: the minute limit is not charged either (r stays 1, where
    // it went 1 → 0 before), and Retry-After is the hour's wait, not the minute's.
    for _ in 0..3 {
        let res = call(&app, "GET", "/").await;
        assert_eq!(
            summary(&res),
            (
                429,
                s("3540"),
                s("\"stacked\";r=1;t=60, \"stacked-1h\";r=0;t=3540")
            )
        );
    }
    // A client that waits as told is admitted, at the first instant it may be.
    clock.advance(Duration::from_secs(3539));
    assert_eq!(call(&app, "GET", "/").await.status(), 429);
    clock.advance(Duration::from_secs(1));
    assert_eq!(call(&app, "GET", "/").await.status(), 200);
}

#[rate_limit(2, per = "1m", scope = "both-minute-first")]
#[rate_limit(2, per = "1h", scope = "both-minute-first-1h")]
async fn minute_first() -> &'static str {
    "ok"
}

#[rate_limit(2, per = "1h", scope = "both-hour-first-1h")]
#[rate_limit(2, per = "1m", scope = "both-hour-first")]
async fn hour_first() -> &'static str {
    "ok"
}

/// Every limit of a stack rejects at once: `Retry-After` is the longest wait, whichever
/// limit is declared first — the first instant the request can pass — and stays so for
/// the requests that follow.
#[actix_web::test]
async fn when_every_limit_of_a_stack_rejects_retry_after_is_the_longest_wait() {
    for path in ["/minute-first", "/hour-first"] {
        let (clock, limiter) = limiter();
        let app = test::init_service(
            App::new()
                .app_data(limiter)
                .route("/minute-first", web::get().to(minute_first))
                .route("/hour-first", web::get().to(hour_first)),
        )
        .await;
        for _ in 0..2 {
            assert_eq!(call(&app, "GET", path).await.status(), 200);
        }
        clock.advance(Duration::from_secs(10));
        for retry_after in ["3590", "3590"] {
            let res = call(&app, "GET", path).await;
            assert_eq!(
                (res.status().as_u16(), header(res.headers(), "retry-after")),
                (429, Some(retry_after)),
                "{path}"
            );
        }
        // Past the minute's wait, the hour still refuses, and says how long.
        clock.advance(Duration::from_secs(50));
        let res = call(&app, "GET", path).await;
        assert_eq!(
            (res.status().as_u16(), header(res.headers(), "retry-after")),
            (429, Some("3540")),
            "{path}"
        );
        clock.advance(Duration::from_secs(3540));
        assert_eq!(call(&app, "GET", path).await.status(), 200, "{path}");
    }
}

// ---- shared scopes -----------------------------------------------------------------------

#[rate_limit(3, per = "1m", scope = "auth")]
async fn sign_in() -> &'static str {
    "in"
}

#[rate_limit(3, per = "1m", scope = "auth")]
async fn sign_up() -> &'static str {
    "up"
}

#[actix_web::test]
async fn handlers_with_one_scope_share_one_budget() {
    let (_, limiter) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/in", web::get().to(sign_in))
            .route("/up", web::get().to(sign_up)),
    )
    .await;
    let statuses = [
        call(&app, "GET", "/in").await.status(),
        call(&app, "GET", "/up").await.status(),
        call(&app, "GET", "/in").await.status(),
        call(&app, "GET", "/up").await.status(),
    ];
    assert_eq!(statuses.map(|s| s.as_u16()), [200, 200, 200, 429]);
    let res = call(&app, "GET", "/in").await;
    assert_eq!(
        header(res.headers(), "ratelimit"),
        Some("\"auth\";r=0;t=60")
    );
}

// ---- the limit comes before the extractors ------------------------------------------------

#[derive(Deserialize)]
struct Login {
    #[allow(dead_code)]
    user: String,
}

#[rate_limit(2, per = "1m")]
async fn json_login(_body: web::Json<Login>) -> &'static str {
    "ok"
}

static EXTRACTIONS: AtomicUsize = AtomicUsize::new(0);

/// An extractor that counts how often it runs.
struct Counted;

impl FromRequest for Counted {
    type Error = actix_web::Error;
    type Future = std::future::Ready<Result<Counted, actix_web::Error>>;

    fn from_request(_: &HttpRequest, _: &mut Payload) -> Self::Future {
        EXTRACTIONS.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Ok(Counted))
    }
}

#[rate_limit(1, per = "1m")]
async fn counted(_: Counted) -> &'static str {
    "ok"
}

#[actix_web::test]
async fn a_rejected_request_never_reaches_the_extractors() {
    let (_, limiter) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/json", web::post().to(json_login))
            .route("/counted", web::get().to(counted)),
    )
    .await;
    let malformed = || {
        test::TestRequest::post()
            .uri("/json")
            .peer_addr(peer(CLIENT))
            .insert_header(("content-type", "application/json"))
            .set_payload("{not json")
            .to_request()
    };
    // Under the limit the body is parsed, and the parse fails: 400.
    assert_eq!(test::call_service(&app, malformed()).await.status(), 400);
    assert_eq!(test::call_service(&app, malformed()).await.status(), 400);
    // Over it, the body is never parsed: 429, not 400.
    assert_eq!(test::call_service(&app, malformed()).await.status(), 429);

    assert_eq!(call(&app, "GET", "/counted").await.status(), 200);
    assert_eq!(call(&app, "GET", "/counted").await.status(), 429);
    assert_eq!(call(&app, "GET", "/counted").await.status(), 429);
    assert_eq!(EXTRACTIONS.load(Ordering::SeqCst), 1);
}

// ---- the process-wide default ---------------------------------------------------------------

#[rate_limit(1, per = "1h", scope = "attribute-tests-global-default")]
async fn no_app_data() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn without_a_limiter_in_app_data_the_global_one_counts() {
    // Two apps without app data share the process-global store.
    let first = test::init_service(App::new().route("/", web::get().to(no_app_data))).await;
    let second = test::init_service(App::new().route("/", web::get().to(no_app_data))).await;
    assert_eq!(call(&first, "GET", "/").await.status(), 200);
    assert_eq!(call(&second, "GET", "/").await.status(), 429);
}

#[rate_limit(1, per = "1m")]
async fn data_limited() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn a_limiter_given_as_web_data_is_found_too() {
    let (clock, limiter) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(web::Data::new(limiter))
            .route("/", web::get().to(data_limited)),
    )
    .await;
    assert_eq!(call(&app, "GET", "/").await.status(), 200);
    assert_eq!(call(&app, "GET", "/").await.status(), 429);
    // The manual clock moves this limiter: it is the one counting, not the global default.
    clock.advance(Duration::from_secs(60));
    assert_eq!(call(&app, "GET", "/").await.status(), 200);
    assert_eq!(call(&app, "GET", "/").await.status(), 429);
}

// ---- configuration ------------------------------------------------------------------------

#[rate_limit(1, per = "1m")]
async fn counted_elsewhere() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn message_response_and_legacy_headers_are_configurable() {
    let clock = ManualClock::starting_at(Duration::from_secs(600));
    let message = Limiter::builder()
        .clock(clock.clone())
        .rejection_message("Slow down, please.")
        .legacy_headers(true)
        .build();
    let app = test::init_service(
        App::new()
            .app_data(message)
            .route("/", web::get().to(counted_elsewhere)),
    )
    .await;
    let res = call(&app, "GET", "/").await;
    assert_eq!(header(res.headers(), "x-ratelimit-limit"), Some("1"));
    assert_eq!(header(res.headers(), "x-ratelimit-remaining"), Some("0"));
    assert_eq!(header(res.headers(), "x-ratelimit-reset"), Some("60"));
    let res = call(&app, "GET", "/").await;
    let body: serde_json::Value = serde_json::from_slice(&test::read_body(res).await).unwrap();
    assert_eq!(body["detail"], "Slow down, please.");

    let custom = Limiter::builder()
        .clock(clock)
        .ietf_headers(false)
        .rejection_response(|rejection| {
            HttpResponse::ServiceUnavailable().body(format!(
                "{} is busy, back in {}s",
                rejection.limit_name(),
                rejection.retry_after_secs()
            ))
        })
        .build();
    let app = test::init_service(
        App::new()
            .app_data(custom)
            .route("/", web::get().to(counted_elsewhere)),
    )
    .await;
    assert_eq!(call(&app, "GET", "/").await.status(), 200);
    let res = call(&app, "GET", "/").await;
    assert_eq!(res.status(), 503);
    assert_eq!(header(res.headers(), "retry-after"), Some("60"));
    assert_eq!(header(res.headers(), "ratelimit"), None);
    assert_eq!(
        test::read_body(res).await,
        "counted_elsewhere is busy, back in 60s"
    );
}

#[actix_web::test]
async fn a_request_without_a_peer_address_gets_a_clear_500() {
    let (_, limiter) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/", web::get().to(login)),
    )
    .await;
    let res = test::call_service(&app, test::TestRequest::get().uri("/").to_request()).await;
    assert_eq!(res.status(), 500);
    let body: serde_json::Value = serde_json::from_slice(&test::read_body(res).await).unwrap();
    assert_eq!(body["title"], "Client Address Unknown");
}
