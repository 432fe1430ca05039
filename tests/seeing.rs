//! Seeing what the limiter does: the table of protected routes (in code, as text, as a page
//! and as JSON).

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::time::Duration;

use actix_web::{test, web, App, HttpRequest};
use limiter::{rate_limit, Limiter, Policy};

fn plan(_: &HttpRequest) -> Option<Policy> {
    None
}

#[rate_limit(5, per = "15m", count = "failures", scope = "seeing-login")]
async fn login() -> &'static str {
    "ok"
}

#[rate_limit(100, per = "1h30m", key = "header:x-api-key", cost = 10, policy = plan, enforce = "12.5%", scope = "seeing-export")]
#[rate_limit(
    10,
    per = "1s",
    algorithm = "token_bucket",
    burst = 20,
    dry_run = true,
    scope = "seeing-burst"
)]
async fn export() -> &'static str {
    "csv"
}

fn row<'a>(rows: &'a [[String; 5]], scope: &str) -> &'a [String; 5] {
    rows.iter()
        .find(|r| r[0] == scope)
        .unwrap_or_else(|| panic!("{scope} is listed"))
}

#[::std::prelude::v1::test]
fn every_handler_is_listed_with_its_policy_key_and_options_before_any_request() {
    let routes = limiter::routes();
    let rows = routes.rows();
    let login = row(&rows, "seeing-login");
    assert_eq!(login[1], "5 per 15m, sliding_window");
    assert_eq!(login[2], "ip");
    assert_eq!(login[3], "count=failures");
    assert!(
        login[4].starts_with("http::seeing::login (tests/seeing.rs:"),
        "{}",
        login[4]
    );
    let export = row(&rows, "seeing-export");
    assert_eq!(export[1], "100 per 1h30m, sliding_window");
    assert_eq!(export[2], "header:x-api-key");
    assert_eq!(export[3], "cost=10 enforce=12.5% policy=fn");
    let burst = row(&rows, "seeing-burst");
    assert_eq!(burst[1], "10 per 1s, token_bucket, burst 20");
    assert_eq!(burst[3], "dry_run");
    // Every handler of this test binary, and nothing else of it.
    let mut ours: Vec<&str> = routes
        .iter()
        .map(|r| r.handler.as_str())
        .filter(|h| h.starts_with("http::seeing::"))
        .collect();
    ours.sort_unstable();
    assert_eq!(
        ours,
        [
            "http::seeing::export",
            "http::seeing::login",
            "http::seeing::spanned",
            "http::seeing::traced"
        ]
    );
    // One route, two limits, in the order they are checked.
    let route = routes
        .iter()
        .find(|r| r.handler == "http::seeing::export")
        .unwrap();
    let scopes: Vec<&str> = route.limits.iter().map(|l| l.scope()).collect();
    assert_eq!(scopes, ["seeing-export", "seeing-burst"]);
}

#[::std::prelude::v1::test]
fn the_table_is_aligned_text() {
    let table = limiter::routes().to_string();
    let mut lines = table.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("scope "), "{header}");
    let column = header.find("limit").unwrap();
    let login = table
        .lines()
        .find(|l| l.starts_with("seeing-login "))
        .unwrap();
    assert_eq!(&login[column..column + 9], "5 per 15m", "{table}");
}

#[::std::prelude::v1::test]
fn a_limiter_shows_its_configured_policies() {
    let limiter = Limiter::builder()
        .policy(
            "seeing-login",
            Policy::new(3, Duration::from_secs(60)).unwrap(),
        )
        .build();
    let rows = limiter.routes().rows();
    let login = row(&rows, "seeing-login");
    assert_eq!(login[1], "3 per 1m, sliding_window");
    assert_eq!(login[3], "count=failures configured");
    limiter.set_policy(
        "seeing-login",
        Policy::new(4, Duration::from_secs(60)).unwrap(),
    );
    assert_eq!(
        row(&limiter.routes().rows(), "seeing-login")[1],
        "4 per 1m, sliding_window"
    );
}

#[actix_web::test]
async fn the_page_and_the_json_show_the_table() {
    let limiter = Limiter::builder()
        .policy(
            "seeing-export",
            Policy::new(50, Duration::from_secs(3600)).unwrap(),
        )
        .build();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .service(limiter::routes_service("/limits"))
            .route("/login", web::get().to(login))
            .route("/export", web::get().to(export)),
    )
    .await;
    let req = test::TestRequest::get().uri("/limits").to_request();
    let res = test::call_service(&app, req).await;
    assert_eq!(res.status(), 200);
    assert_eq!(
        common::header(res.headers(), "cache-control"),
        Some("no-store")
    );
    assert!(common::header(res.headers(), "content-type")
        .unwrap()
        .starts_with("text/html"));
    let page = String::from_utf8(test::read_body(res).await.to_vec()).unwrap();
    assert!(page.starts_with("<!doctype html>"));
    assert!(page.contains("<td><code>seeing-login</code></td><td>5 per 15m, sliding_window</td>"));
    assert!(page.contains("<tr class=\"configured\"><td><code>seeing-export</code></td><td>50 per 1h, sliding_window</td>"), "{page}");
    assert!(
        !page.contains("http://") && !page.contains("https://"),
        "no external assets"
    );

    let req = test::TestRequest::get()
        .uri("/limits")
        .insert_header(("accept", "application/json"))
        .to_request();
    let res = test::call_service(&app, req).await;
    assert_eq!(
        common::header(res.headers(), "content-type"),
        Some("application/json")
    );
    let json: serde_json::Value = serde_json::from_slice(&test::read_body(res).await).unwrap();
    let routes = json["routes"].as_array().unwrap();
    let export = routes
        .iter()
        .find(|r| r["handler"] == "http::seeing::export")
        .unwrap();
    assert_eq!(export["limits"][0]["scope"], "seeing-export");
    assert_eq!(export["limits"][0]["max"], 50);
    assert_eq!(export["limits"][0]["window_ms"], 3_600_000);
    assert_eq!(export["limits"][0]["burst"], serde_json::Value::Null);
    assert_eq!(
        export["limits"][0]["options"],
        serde_json::json!(["cost=10", "enforce=12.5%", "policy=fn", "configured"])
    );
    assert_eq!(export["limits"][1]["algorithm"], "token_bucket");
    assert_eq!(export["limits"][1]["burst"], 20);
    let same = test::call_service(
        &app,
        test::TestRequest::get()
            .uri("/limits?format=json")
            .to_request(),
    )
    .await;
    assert_eq!(
        common::header(same.headers(), "content-type"),
        Some("application/json")
    );
}

// ---- tracing --------------------------------------------------------------------------------

#[rate_limit(1, per = "1m", scope = "seeing-traced")]
async fn traced() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn each_rejection_is_a_debug_event_naming_the_key_only_when_asked() {
    common::events::record();
    for (trace_keys, scope_client) in [(false, "203.0.113.7:1"), (true, "198.51.100.9:1")] {
        let limiter = Limiter::builder()
            .clock(limiter::ManualClock::starting_at(Duration::from_secs(60)))
            .trace_keys(trace_keys)
            .build();
        let app = test::init_service(
            App::new()
                .app_data(limiter)
                .route("/", web::get().to(traced)),
        )
        .await;
        let call = || {
            test::TestRequest::get()
                .uri("/")
                .peer_addr(common::peer(scope_client))
                .to_request()
        };
        assert_eq!(test::call_service(&app, call()).await.status(), 200);
        assert_eq!(test::call_service(&app, call()).await.status(), 429);
        let ip = scope_client.split(':').next().unwrap();
        let events: Vec<String> = common::events::debug_events("scope=\"seeing-traced\"")
            .into_iter()
            .filter(|e| !trace_keys || e.contains(ip))
            .collect();
        let last = events.last().expect("a debug event for the rejection");
        assert!(last.contains("request rejected"), "{last}");
        assert!(last.contains("key=\"ip\""), "{last}");
        assert!(last.contains("retry_after_secs=60"), "{last}");
        assert_eq!(last.contains(ip), trace_keys, "{last}");
    }
}

#[rate_limit(1, per = "1m", scope = "seeing-span")]
async fn spanned() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn a_request_span_that_declares_the_field_records_the_rejection() {
    use actix_web::dev::Service as _;
    use tracing::Instrument as _;
    common::events::record();
    let before = common::events::span_records("rate_limit=\"rejected\"").len();
    let app = test::init_service(
        App::new()
            .app_data(Limiter::builder().build())
            .wrap_fn(|req, srv| {
                let span = tracing::info_span!("request", rate_limit = tracing::field::Empty);
                srv.call(req).instrument(span)
            })
            .route("/", web::get().to(spanned)),
    )
    .await;
    let call = || {
        test::TestRequest::get()
            .uri("/")
            .peer_addr(common::peer("192.0.2.77:1"))
            .to_request()
    };
    assert_eq!(test::call_service(&app, call()).await.status(), 200);
    assert_eq!(
        common::events::span_records("rate_limit=\"rejected\"").len(),
        before
    );
    assert_eq!(test::call_service(&app, call()).await.status(), 429);
    assert_eq!(
        common::events::span_records("rate_limit=\"rejected\"").len(),
        before + 1
    );
}
