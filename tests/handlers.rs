//! `#[rate_limit]` where users will meet it: under a renamed import, with
//! `#[tracing::instrument]`, on methods that use `Self`, on handlers named in any language,
//! on handlers that share a name, and with a store that fails.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::time::Duration;

use actix_web::dev::{Service, ServiceResponse};
use actix_web::{test, web, App, HttpResponse};
use common::{header, peer, summary, CLIENT};
use limiter::{Failure, Limiter, ManualClock, OnStoreError};

fn limiter() -> (ManualClock, Limiter) {
    let clock = ManualClock::starting_at(Duration::from_secs(600));
    let limiter = Limiter::builder().clock(clock.clone()).build();
    (clock, limiter)
}

async fn get(
    app: &impl Service<actix_http::Request, Response = ServiceResponse, Error = actix_web::Error>,
    uri: &str,
) -> ServiceResponse {
    let req = test::TestRequest::get().uri(uri).peer_addr(peer(CLIENT));
    test::call_service(app, req.to_request()).await
}

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

// ---- a renamed import ----------------------------------------------------------------------

mod renamed {
    use limiter::rate_limit as limit;

    // Written as a stack under another name: checked in this order, one answer.
    #[limit(2, per = "1m")]
    #[limit(3, per = "1h")]
    pub async fn renamed() -> &'static str {
        "ok"
    }
}

#[actix_web::test]
async fn a_renamed_import_stacks_in_the_order_written() {
    let (_, limiter) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/", web::get().to(renamed::renamed)),
    )
    .await;
    let res = get(&app, "/").await;
    assert_eq!(
        header(res.headers(), "ratelimit-policy"),
        Some("\"renamed\";q=2;w=60, \"renamed-1h\";q=3;w=3600")
    );
    get(&app, "/").await;
    let res = get(&app, "/").await;
    assert_eq!(
        summary(&res),
        (
            429,
            s("60"),
            s("\"renamed\";r=0;t=60, \"renamed-1h\";r=1;t=3600")
        )
    );
}

// ---- #[tracing::instrument] ------------------------------------------------------------------

#[derive(Debug, serde::Deserialize)]
struct Form {
    user: String,
}

#[limiter::rate_limit(1, per = "1m")]
#[tracing::instrument(skip(form), fields(user = %form.user))]
async fn instrumented(form: web::Query<Form>) -> String {
    tracing::info!("signing in");
    format!("hello {}", form.user)
}

#[tracing::instrument]
#[limiter::rate_limit(1, per = "1m")]
async fn instrumented_above(web::Query(form): web::Query<Form>) -> String {
    format!("hello {}", form.user)
}

#[actix_web::test]
async fn tracing_instrument_composes_above_and_below() {
    let (_, limiter) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/below", web::get().to(instrumented))
            .route("/above", web::get().to(instrumented_above)),
    )
    .await;
    for path in ["/below?user=ann", "/above?user=ann"] {
        let res = get(&app, path).await;
        assert_eq!(res.status(), 200, "{path}");
        assert_eq!(test::read_body(res).await, "hello ann");
        assert_eq!(get(&app, path).await.status(), 429, "{path}");
    }
}

// ---- methods that use `Self` -----------------------------------------------------------------

struct Greeter;

impl Greeter {
    const GREETING: &'static str = "hello";

    fn greet(name: &str) -> String {
        format!("{} {name}", Self::GREETING)
    }

    #[limiter::rate_limit(1, per = "1m")]
    async fn handler(path: web::Path<String>) -> String {
        Self::greet(&path)
    }
}

#[actix_web::test]
async fn methods_may_use_self() {
    let (_, limiter) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/{name}", web::get().to(Greeter::handler)),
    )
    .await;
    let res = get(&app, "/ann").await;
    assert_eq!(test::read_body(res).await, "hello ann");
    assert_eq!(get(&app, "/ann").await.status(), 429);
}

// ---- handlers named in any language -----------------------------------------------------------

#[limiter::rate_limit(2, per = "1m")]
async fn über() -> &'static str {
    "ok"
}

#[limiter::rate_limit(2, per = "1m")]
async fn 登录() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn a_handler_named_in_any_language_serves_and_names_its_fields() {
    let (_, limiter) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/u", web::get().to(über))
            .route("/z", web::get().to(登录)),
    )
    .await;
    for (path, name) in [("/u", "%C3%BCber"), ("/z", "%E7%99%BB%E5%BD%95")] {
        let res = get(&app, path).await;
        assert_eq!(res.status(), 200);
        let policy = format!("\"{name}\";q=2;w=60");
        assert_eq!(
            header(res.headers(), "ratelimit-policy"),
            Some(policy.as_str())
        );
        get(&app, path).await;
        assert_eq!(get(&app, path).await.status(), 429);
    }
}

// ---- handlers that share a name ----------------------------------------------------------------

struct Admin;
struct Public;

impl Admin {
    #[limiter::rate_limit(1, per = "1m")]
    async fn list() -> &'static str {
        "admin"
    }
}

impl Public {
    #[limiter::rate_limit(1, per = "1m")]
    async fn list() -> &'static str {
        "public"
    }
}

fn first() -> actix_web::Route {
    #[limiter::rate_limit(1, per = "1m")]
    async fn nested() -> &'static str {
        "first"
    }
    web::get().to(nested)
}

fn second() -> actix_web::Route {
    #[limiter::rate_limit(1, per = "1m")]
    async fn nested() -> &'static str {
        "second"
    }
    web::get().to(nested)
}

#[actix_web::test]
async fn handlers_that_share_a_name_never_share_a_budget() {
    let (_, limiter) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/admin", web::get().to(Admin::list))
            .route("/public", web::get().to(Public::list))
            .route("/first", first())
            .route("/second", second()),
    )
    .await;
    for path in ["/admin", "/public", "/first", "/second"] {
        assert_eq!(get(&app, path).await.status(), 200, "{path}");
    }
    for path in ["/admin", "/public", "/first", "/second"] {
        assert_eq!(get(&app, path).await.status(), 429, "{path}");
    }
}

/// A handler's default scope is its module's path and its name, as `module_path!()` writes
/// them — the same with every compiler (the standard library's `type_name` promises no
/// format) — and so a method's has no type in it. Handlers that share such a path (two
/// `impl` blocks, two functions, of one module) get their full paths instead.
#[::std::prelude::v1::test]
fn default_scopes_are_the_handlers_paths() {
    let scopes: Vec<String> = limiter::routes()
        .into_iter()
        .flat_map(|route| route.limits)
        .map(|limit| limit.scope().to_string())
        .collect();
    for expected in [
        "http::handlers::Admin::list",
        "http::handlers::Public::list",
        "http::handlers::first::nested",
        "http::handlers::second::nested",
        "http::handlers::handler",
        "http::handlers::renamed::renamed",
        "http::handlers::renamed::renamed#2",
        "http::handlers::über",
    ] {
        assert!(
            scopes.iter().any(|s| s == expected),
            "{expected} in {scopes:?}"
        );
    }
}

// ---- a store that fails --------------------------------------------------------------------------

/// A store whose every check fails, with an error that must not reach clients.
const BROKEN: common::Failing = common::Failing("connection to 10.1.2.3:6379 refused (internal)");

#[limiter::rate_limit(5, per = "1m")]
async fn guarded() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn error_responses_show_no_internals_and_can_be_replaced() {
    let limiter = Limiter::builder()
        .store(BROKEN)
        .on_store_error(OnStoreError::FailClosed)
        .build();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/", web::get().to(guarded)),
    )
    .await;
    let res = get(&app, "/").await;
    assert_eq!(res.status(), 503);
    assert_eq!(header(res.headers(), "retry-after"), Some("1"));
    assert_eq!(header(res.headers(), "cache-control"), Some("no-store"));
    assert_eq!(
        header(res.headers(), "ratelimit-policy"),
        Some("\"guarded\";q=5;w=60")
    );
    let body = String::from_utf8(test::read_body(res).await.to_vec()).unwrap();
    assert!(
        !body.contains("10.1.2.3") && !body.contains("refused"),
        "{body}"
    );
    assert!(body.contains("Rate Limit Unavailable"), "{body}");

    // Replaced: the 503, and the 500 of a request without an address.
    let limiter = Limiter::builder()
        .store(BROKEN)
        .on_store_error(OnStoreError::FailClosed)
        .failure_response(|failure: &Failure| {
            HttpResponse::build(failure.status()).body(format!("sorry: {}", failure.title()))
        })
        .build();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/", web::get().to(guarded)),
    )
    .await;
    let res = get(&app, "/").await;
    assert_eq!(res.status(), 503);
    assert_eq!(header(res.headers(), "retry-after"), Some("1"));
    assert_eq!(test::read_body(res).await, "sorry: Rate Limit Unavailable");
    let res = test::call_service(&app, test::TestRequest::get().uri("/").to_request()).await;
    assert_eq!(res.status(), 500);
    assert_eq!(
        header(res.headers(), "ratelimit-policy"),
        Some("\"guarded\";q=5;w=60")
    );
    assert_eq!(test::read_body(res).await, "sorry: Client Address Unknown");
}
