//! Production controls through real actix services driven by the manual clock:
//! exemptions, cost, counting only failures, dry runs, limits from configuration and
//! changed while serving, per-request policies, limits checked inside handlers, and
//! `Limiter::client`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::time::Duration;

use actix_web::dev::{Service, ServiceResponse};
use actix_web::{test, web, App, HttpRequest, HttpResponse};
use common::{events, get_from as get, header, peer, summary};
use limiter::{
    rate_limit, Algorithm, Client, Limit, Limiter, ManualClock, Policy, RateLimit, Rejected, Share,
    Subject,
};

const CLIENT: &str = "203.0.113.7:40000";

fn limiter() -> (ManualClock, limiter::LimiterBuilder) {
    let clock = ManualClock::starting_at(Duration::from_secs(600));
    (clock.clone(), Limiter::builder().clock(clock))
}

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

fn per_minute(max: u32) -> Policy {
    Policy::new(max, Duration::from_secs(60)).unwrap()
}

// ---- exemptions ---------------------------------------------------------------------------

#[rate_limit(2, per = "1m", scope = "exempt-demo")]
async fn guarded() -> &'static str {
    "ok"
}

fn is_health_check(req: &HttpRequest) -> bool {
    req.headers().contains_key("x-health-check")
}

#[rate_limit(2, per = "1m", scope = "exempt-fn", exempt = is_health_check)]
async fn probed() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn exempt_clients_are_neither_counted_nor_given_fields() {
    let (_, builder) = limiter();
    let limiter = builder
        .exempt(["127.0.0.1/32", "10.0.0.0/8"])
        .exempt_when(|req| req.headers().contains_key("x-internal"))
        .build();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/g", web::get().to(guarded))
            .route("/p", web::get().to(probed)),
    )
    .await;
    for from in ["127.0.0.1:1", "10.20.30.40:1"] {
        for _ in 0..5 {
            let res = get(&app, "/g", from).await;
            assert_eq!(summary(&res), (200, None, None), "{from}");
        }
    }
    for _ in 0..5 {
        let req = test::TestRequest::get()
            .uri("/g")
            .insert_header(("x-internal", "1"))
            .peer_addr(peer(CLIENT));
        let res = test::call_service(&app, req.to_request()).await;
        assert_eq!(summary(&res), (200, None, None));
    }
    // None of that was counted: the outside client has its whole budget.
    let res = get(&app, "/g", CLIENT).await;
    assert_eq!(summary(&res).2, s("\"exempt-demo\";r=1;t=60"));
    // Per handler: the function exempts health checks only.
    for _ in 0..5 {
        let req = test::TestRequest::get()
            .uri("/p")
            .insert_header(("x-health-check", "1"))
            .peer_addr(peer(CLIENT));
        let res = test::call_service(&app, req.to_request()).await;
        assert_eq!(summary(&res), (200, None, None));
    }
    assert_eq!(get(&app, "/p", CLIENT).await.status(), 200);
    assert_eq!(get(&app, "/p", CLIENT).await.status(), 200);
    assert_eq!(get(&app, "/p", CLIENT).await.status(), 429);
}

#[actix_web::test]
async fn exemptions_match_the_client_a_trusted_proxy_names() {
    let (_, builder) = limiter();
    let limiter = builder
        .trusted_proxies(["10.0.0.1/32"])
        .exempt(["198.51.100.0/24"])
        .build();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/g", web::get().to(guarded)),
    )
    .await;
    let via_proxy = |client: &str| {
        test::TestRequest::get()
            .uri("/g")
            .insert_header(("x-forwarded-for", client.to_string()))
            .peer_addr(peer("10.0.0.1:5000"))
            .to_request()
    };
    for _ in 0..4 {
        let res = test::call_service(&app, via_proxy("198.51.100.9")).await;
        assert_eq!(summary(&res), (200, None, None));
    }
    let statuses: Vec<u16> = futures_util::future::join_all(
        (0..3).map(|_| test::call_service(&app, via_proxy("203.0.113.50"))),
    )
    .await
    .iter()
    .map(|r| r.status().as_u16())
    .collect();
    assert_eq!(statuses, [200, 200, 429]);
}

#[::std::prelude::v1::test]
fn a_malformed_exemption_is_an_error_naming_it() {
    let error = Limiter::builder()
        .try_exempt(["10.0.0.0/8", "10.0.0.0/33"])
        .unwrap_err();
    assert!(error.to_string().contains("10.0.0.0/33"), "{error}");
    let panic = std::panic::catch_unwind(|| Limiter::builder().exempt(["not-an-address"]));
    let message = panic.unwrap_err();
    let message = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(message.contains("not-an-address"), "{message}");
}

// ---- cost ---------------------------------------------------------------------------------

#[rate_limit(100, per = "1m", cost = 10, scope = "export")]
async fn export() -> &'static str {
    "csv"
}

/// The batch size a client announces, at least 1.
fn batch_size(req: &HttpRequest) -> u32 {
    req.headers()
        .get("x-batch-size")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

#[rate_limit(20, per = "1m", cost = batch_size, scope = "batch")]
async fn batch() -> &'static str {
    "done"
}

async fn batch_of(
    app: &impl Service<actix_http::Request, Response = ServiceResponse, Error = actix_web::Error>,
    size: u32,
) -> ServiceResponse {
    let req = test::TestRequest::get()
        .uri("/batch")
        .insert_header(("x-batch-size", size.to_string()))
        .peer_addr(peer(CLIENT));
    test::call_service(app, req.to_request()).await
}

#[actix_web::test]
async fn a_request_takes_its_cost_all_or_nothing() {
    let (clock, builder) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(builder.build())
            .route("/export", web::get().to(export))
            .route("/batch", web::get().to(batch)),
    )
    .await;
    for r in (0..10).rev() {
        let res = get(&app, "/export", CLIENT).await;
        let expected = format!("\"export\";r={};t=60", r * 10);
        assert_eq!(summary(&res), (200, None, Some(expected)));
    }
    assert_eq!(
        summary(&get(&app, "/export", CLIENT).await),
        (429, s("60"), s("\"export\";r=0;t=60"))
    );
    // From a function: 15 of 20, then 6 does not fit (all or nothing), 5 does.
    assert_eq!(
        summary(&batch_of(&app, 15).await).2,
        s("\"batch\";r=5;t=60")
    );
    clock.advance(Duration::from_secs(10));
    let res = batch_of(&app, 6).await;
    assert_eq!(summary(&res), (429, s("50"), s("\"batch\";r=5;t=50")));
    assert_eq!(summary(&batch_of(&app, 5).await).2, s("\"batch\";r=0;t=50"));
}

#[actix_web::test]
async fn a_cost_no_budget_holds_is_a_429_that_says_never() {
    let (_, builder) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(builder.build())
            .route("/batch", web::get().to(batch)),
    )
    .await;
    let res = batch_of(&app, 21).await;
    assert_eq!(res.status(), 429);
    assert_eq!(header(res.headers(), "retry-after"), None);
    let body = String::from_utf8(test::read_body(res).await.to_vec()).unwrap();
    assert!(body.contains("never be admitted"), "{body}");
    // Nothing was counted: the whole budget is left.
    assert_eq!(summary(&batch_of(&app, 20).await).0, 200);
}

#[actix_web::test]
async fn concurrent_costly_requests_admit_exactly_the_budget() {
    let (_, builder) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(builder.build())
            .route("/batch", web::get().to(batch)),
    )
    .await;
    // 30 requests of 3 units at once against 20: six fit, and no unit more.
    let responses = futures_util::future::join_all((0..30).map(|_| batch_of(&app, 3))).await;
    let admitted = responses.iter().filter(|r| r.status() == 200).count();
    assert_eq!(admitted, 6);
    assert_eq!(summary(&batch_of(&app, 2).await).0, 200);
    assert_eq!(summary(&batch_of(&app, 1).await).0, 429);
}

// ---- counting only failures ---------------------------------------------------------------

#[derive(serde::Deserialize)]
struct Login {
    user: String,
    password: String,
}

/// Waits a few turns of the executor before answering: every request sent at once is
/// decided before the first answer is known.
async fn think() {
    for _ in 0..10 {
        actix_web::rt::task::yield_now().await;
    }
}

#[rate_limit(5, per = "15m", count = "failures", scope = "login")]
async fn login(form: web::Form<Login>) -> HttpResponse {
    think().await;
    if form.password == "correct horse" {
        HttpResponse::Ok().body(format!("welcome {}", form.user))
    } else {
        HttpResponse::Unauthorized().finish()
    }
}

fn attempt(user: &str, password: &str) -> actix_http::Request {
    test::TestRequest::post()
        .uri("/login")
        .set_form([("user", user), ("password", password)])
        .peer_addr(peer(CLIENT))
        .to_request()
}

#[actix_web::test]
async fn only_failed_logins_use_the_budget() {
    let (clock, builder) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(builder.build())
            .route("/login", web::post().to(login)),
    )
    .await;
    // Successes are never held back, and their fields say so: their unit is given back,
    // the budget stays whole (it read r=4, as if the success had used a try).
    for _ in 0..20 {
        let res = test::call_service(&app, attempt("ann", "correct horse")).await;
        let whole = "\"login\";r=5;t=900".to_string();
        assert_eq!(summary(&res), (200, None, Some(whole)));
    }
    for r in (0..5).rev() {
        let res = test::call_service(&app, attempt("ann", "wrong")).await;
        // The fields show the request counted, as it was when it was admitted.
        let expected = format!("\"login\";r={r};t=900");
        assert_eq!(summary(&res), (401, None, Some(expected)));
    }
    let res = test::call_service(&app, attempt("ann", "correct horse")).await;
    assert_eq!(summary(&res), (429, s("900"), s("\"login\";r=0;t=900")));
    clock.advance(Duration::from_secs(900));
    assert_eq!(
        test::call_service(&app, attempt("ann", "correct horse"))
            .await
            .status(),
        200
    );
}

#[actix_web::test]
async fn fifty_concurrent_wrong_passwords_get_exactly_five_tries() {
    let (_, builder) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(builder.build())
            .route("/login", web::post().to(login)),
    )
    .await;
    let responses = futures_util::future::join_all(
        (0..50).map(|_| test::call_service(&app, attempt("ann", "guess"))),
    )
    .await;
    let tried = responses.iter().filter(|r| r.status() == 401).count();
    let refused = responses.iter().filter(|r| r.status() == 429).count();
    assert_eq!((tried, refused), (5, 45));
    // And concurrent successes give back what they took: none is ever refused.
    let (_, builder) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(builder.build())
            .route("/login", web::post().to(login)),
    )
    .await;
    for _ in 0..5 {
        let responses = futures_util::future::join_all(
            (0..5).map(|_| test::call_service(&app, attempt("ann", "correct horse"))),
        )
        .await;
        assert!(responses.iter().all(|r| r.status() == 200));
    }
}

// ---- counting by outcome --------------------------------------------------------------------

/// A login form that redirects: back to the form on failure (303 to `/login?failed`),
/// onward on success (303 to `/home`). Only the redirects back count.
fn failed_login(status: actix_web::http::StatusCode) -> bool {
    status == actix_web::http::StatusCode::SEE_OTHER
}

#[rate_limit(3, per = "15m", count = failed_login, scope = "redirecting-login")]
async fn redirecting_login(form: web::Form<Login>) -> HttpResponse {
    let to = match form.password.as_str() {
        "correct horse" => "/home",
        _ => "/login?failed",
    };
    let status = match to {
        "/home" => actix_web::http::StatusCode::FOUND,
        _ => actix_web::http::StatusCode::SEE_OTHER,
    };
    HttpResponse::build(status)
        .insert_header(("location", to))
        .finish()
}

#[actix_web::test]
async fn a_function_says_which_responses_count() {
    let (_, builder) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(builder.build())
            .route("/login", web::post().to(redirecting_login)),
    )
    .await;
    // Successes (302 onward) never use the budget.
    for _ in 0..5 {
        let res = test::call_service(&app, attempt("ann", "correct horse")).await;
        assert_eq!(res.status(), 302);
    }
    // Failures (303 back to the form) do: three, then 429.
    let mut statuses = Vec::new();
    for _ in 0..5 {
        statuses.push(
            test::call_service(&app, attempt("ann", "guess"))
                .await
                .status()
                .as_u16(),
        );
    }
    assert_eq!(statuses, [303, 303, 303, 429, 429]);
    let rows = limiter::routes().rows();
    let row = rows.iter().find(|r| r[0] == "redirecting-login").unwrap();
    assert_eq!(row[3], "count=fn");
}

// ---- dry run ------------------------------------------------------------------------------

#[rate_limit(2, per = "1m", dry_run = true, scope = "trial")]
async fn on_trial() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn a_dry_run_counts_reports_and_lets_everything_through() {
    events::record();
    let (_, builder) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(builder.build())
            .route("/t", web::get().to(on_trial)),
    )
    .await;
    let before = events::warnings("scope=\"trial\"").len();
    let fields: Vec<_> = [0, 1, 2, 3].iter().map(|_| ()).collect();
    let mut seen = Vec::new();
    for _ in &fields {
        let res = get(&app, "/t", CLIENT).await;
        assert_eq!(res.status(), 200);
        assert_eq!(header(res.headers(), "retry-after"), None);
        seen.push(summary(&res).2.unwrap());
    }
    // The fields as if enforced.
    assert_eq!(
        seen,
        [
            "\"trial\";r=1;t=60",
            "\"trial\";r=0;t=60",
            "\"trial\";r=0;t=60",
            "\"trial\";r=0;t=60"
        ]
    );
    let warned = events::warnings("scope=\"trial\"");
    assert_eq!(warned.len() - before, 2, "{warned:?}");
    let last = warned.last().unwrap();
    assert!(
        last.contains("dry run") && last.contains("key=ip"),
        "{last}"
    );
    assert!(last.contains("retry_after_secs=60"), "{last}");
}

#[actix_web::test]
async fn a_limiter_in_dry_run_enforces_nothing() {
    let (_, builder) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(builder.dry_run(true).build())
            .route("/g", web::get().to(guarded)),
    )
    .await;
    for _ in 0..5 {
        assert_eq!(get(&app, "/g", CLIENT).await.status(), 200);
    }
}

const ONE_A_MINUTE: Policy = match Policy::new(1, Duration::from_secs(60)) {
    Ok(policy) => policy,
    Err(error) => panic!("{}", error.message()),
};
static INLINE_TRIAL: Limit = Limit::constant("inline-trial", ONE_A_MINUTE);

/// A limit checked inside the handler, under `#[rate_limit]`.
#[rate_limit(100, per = "1m", scope = "around-inline-trial")]
async fn checks_inline(req: HttpRequest) -> Result<HttpResponse, Rejected> {
    limiter::check(&req, &INLINE_TRIAL, "ann").await?;
    Ok(HttpResponse::Ok().finish())
}

/// A dry run reaches the limits a handler checks itself: a limiter in dry run, or a scope
/// enforced on none of its clients, lets `limiter::check`'s would-be rejections through,
/// each with a `warn` event, counted and named in `X-RateLimit-Dry-Run`. (They were
/// refused: `check` read neither setting.)
#[actix_web::test]
async fn a_dry_run_lets_a_limit_checked_in_the_handler_through() {
    events::record();
    let trials = [
        limiter().1.dry_run(true),
        limiter().1.enforcement("inline-trial", Share::NONE),
    ];
    for builder in trials {
        let app = test::init_service(
            App::new()
                .app_data(builder.build())
                .route("/inline", web::get().to(checks_inline)),
        )
        .await;
        let before = events::warnings("inline-trial").len();
        let mut answers = Vec::new();
        for _ in 0..3 {
            let res = get(&app, "/inline", CLIENT).await;
            answers.push((
                res.status().as_u16(),
                header(res.headers(), "x-ratelimit-dry-run").map(str::to_owned),
            ));
        }
        assert_eq!(
            answers,
            [
                (200, None),
                (200, s("\"inline-trial\"")),
                (200, s("\"inline-trial\""))
            ]
        );
        let warned = events::warnings("inline-trial");
        assert_eq!(warned.len() - before, 2, "{warned:?}");
        assert!(warned.iter().all(|w| w.contains("dry run")), "{warned:?}");
    }
    // Enforced, the same limit refuses.
    let app = test::init_service(
        App::new()
            .app_data(limiter().1.build())
            .route("/inline", web::get().to(checks_inline)),
    )
    .await;
    let statuses = [
        get(&app, "/inline", CLIENT).await.status().as_u16(),
        get(&app, "/inline", CLIENT).await.status().as_u16(),
    ];
    assert_eq!(statuses, [200, 429]);
}

// ---- limits from configuration, changed while serving --------------------------------------

#[rate_limit(5, per = "1m", scope = "configured")]
async fn configured() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn configuration_overrides_the_attribute_and_changes_while_serving() {
    let (_, builder) = limiter();
    let limiter = builder.policy("configured", per_minute(2)).build();
    let app = test::init_service(
        App::new()
            .app_data(limiter.clone())
            .route("/c", web::get().to(configured)),
    )
    .await;
    let res = get(&app, "/c", CLIENT).await;
    assert_eq!(
        header(res.headers(), "ratelimit-policy"),
        Some("\"configured\";q=2;w=60")
    );
    assert_eq!(get(&app, "/c", CLIENT).await.status(), 200);
    assert_eq!(get(&app, "/c", CLIENT).await.status(), 429);
    // Raised while serving: the next request sees it, under a budget of its own.
    limiter.set_policy("configured", per_minute(3));
    assert_eq!(limiter.policy("configured"), Some(per_minute(3)));
    for r in [2, 1, 0] {
        let res = get(&app, "/c", CLIENT).await;
        assert_eq!(summary(&res).2, Some(format!("\"configured\";r={r};t=60")));
    }
    assert_eq!(get(&app, "/c", CLIENT).await.status(), 429);
    // Support unblocks the customer; another client is untouched.
    assert_eq!(get(&app, "/c", "203.0.113.8:1").await.status(), 200);
    let address = peer(CLIENT).ip();
    limiter
        .reset("configured", Subject::Address(address))
        .await
        .unwrap();
    assert_eq!(
        summary(&get(&app, "/c", CLIENT).await).2,
        s("\"configured\";r=2;t=60")
    );
    assert_eq!(
        summary(&get(&app, "/c", "203.0.113.8:1").await).2,
        s("\"configured\";r=1;t=60")
    );
}

#[actix_web::test]
async fn configuration_reaches_the_middleware_too() {
    let (_, builder) = limiter();
    let limiter = builder.policy("api", per_minute(1)).build();
    let app = test::init_service(
        App::new().app_data(limiter).service(
            web::scope("/api")
                .wrap(RateLimit::new(per_minute(100)).scope("api"))
                .route("/a", web::get().to(HttpResponse::Ok)),
        ),
    )
    .await;
    assert_eq!(get(&app, "/api/a", CLIENT).await.status(), 200);
    assert_eq!(get(&app, "/api/a", CLIENT).await.status(), 429);
}

#[rate_limit(5, per = "1m", scope = "configured-fixed", algorithm = "fixed_window")]
async fn configured_fixed() -> &'static str {
    "ok"
}

/// How many of two requests pass 61 s after a first at 0 s and a second at 30 s, each
/// admitted: a fixed window opened at 0 s has ended (both), a sliding window still holds the
/// one at 30 s (one).
async fn passed_after_a_window(
    limiter: Limiter,
    clock: &ManualClock,
    route: actix_web::Route,
) -> usize {
    let app = test::init_service(App::new().app_data(limiter).route("/f", route)).await;
    assert_eq!(get(&app, "/f", CLIENT).await.status(), 200);
    clock.advance(Duration::from_secs(30));
    assert_eq!(get(&app, "/f", CLIENT).await.status(), 200);
    assert_eq!(get(&app, "/f", CLIENT).await.status(), 429);
    clock.advance(Duration::from_secs(31));
    let mut passed = 0;
    for _ in 0..2 {
        passed += usize::from(get(&app, "/f", CLIENT).await.status() == 200);
    }
    passed
}

#[actix_web::test]
async fn a_configured_policy_keeps_the_declared_algorithm_unless_it_names_one() {
    // `Policy::new` sets the numbers: the route stays a fixed window.
    let (clock, builder) = limiter();
    let fixed = builder.policy("configured-fixed", per_minute(2)).build();
    let shown = fixed.routes().to_string();
    assert!(shown.contains("2 per 1m, fixed_window"), "{shown}");
    assert_eq!(
        passed_after_a_window(fixed.clone(), &clock, web::get().to(configured_fixed)).await,
        2
    );
    // Changed while serving, the same.
    fixed.set_policy("configured-fixed", per_minute(3));
    let configured = fixed.overridden(&Limit::new(
        "configured-fixed",
        Policy::for_algorithm(Algorithm::FixedWindow, 5, Duration::from_secs(60)).unwrap(),
    ));
    assert_eq!(
        configured.map(|l| *l.policy()),
        Some(Policy::for_algorithm(Algorithm::FixedWindow, 3, Duration::from_secs(60)).unwrap())
    );

    // `Policy::for_algorithm` names one: it replaces the declared algorithm.
    let (clock, builder) = limiter();
    let sliding = Policy::for_algorithm(Algorithm::SlidingWindow, 2, Duration::from_secs(60));
    let replaced = builder.policy("configured-fixed", sliding.unwrap()).build();
    let shown = replaced.routes().to_string();
    assert!(shown.contains("2 per 1m, sliding_window"), "{shown}");
    assert_eq!(
        passed_after_a_window(replaced, &clock, web::get().to(configured_fixed)).await,
        1
    );
}

// ---- per-request policies -----------------------------------------------------------------

fn two_a_minute(_: &HttpRequest) -> Option<Policy> {
    Some(per_minute(2))
}

#[rate_limit(5, per = "1m", algorithm = "fixed_window", policy = two_a_minute, scope = "plan-fixed")]
async fn planned_fixed() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn a_plan_keeps_the_declared_algorithm_unless_it_names_one() {
    let (clock, builder) = limiter();
    let route = web::get().to(planned_fixed);
    assert_eq!(
        passed_after_a_window(builder.build(), &clock, route).await,
        2
    );
}

/// The plan of the user a request comes from: `pro` gets ten a minute.
fn plan(req: &HttpRequest) -> Option<Policy> {
    match req.headers().get("x-plan")?.as_bytes() {
        b"pro" => Some(per_minute(10)),
        _ => None,
    }
}

fn user(req: &HttpRequest) -> Option<String> {
    req.headers()
        .get("x-user")?
        .to_str()
        .ok()
        .map(str::to_owned)
}

#[rate_limit(2, per = "1m", key = "user", policy = plan, scope = "reports")]
async fn reports() -> &'static str {
    "report"
}

async fn as_user(
    app: &impl Service<actix_http::Request, Response = ServiceResponse, Error = actix_web::Error>,
    user: &str,
    plan: &str,
) -> ServiceResponse {
    let req = test::TestRequest::get()
        .uri("/r")
        .insert_header(("x-user", user.to_string()))
        .insert_header(("x-plan", plan.to_string()))
        .peer_addr(peer(CLIENT));
    test::call_service(app, req.to_request()).await
}

#[actix_web::test]
async fn each_plan_has_its_own_policy_and_budget() {
    let (_, builder) = limiter();
    let limiter = builder.user_key(user).build();
    let app = test::init_service(
        App::new()
            .app_data(limiter.clone())
            .route("/r", web::get().to(reports)),
    )
    .await;
    assert_eq!(
        summary(&as_user(&app, "ann", "free").await).2,
        s("\"reports\";r=1;t=60")
    );
    assert_eq!(as_user(&app, "ann", "free").await.status(), 200);
    assert_eq!(as_user(&app, "ann", "free").await.status(), 429);
    // Upgraded mid-window: the new plan's whole budget, never mixed with the old one.
    let res = as_user(&app, "ann", "pro").await;
    assert_eq!(
        header(res.headers(), "ratelimit-policy"),
        Some("\"reports\";q=10;w=60")
    );
    assert_eq!(summary(&res).2, s("\"reports\";r=9;t=60"));
    for _ in 0..9 {
        assert_eq!(as_user(&app, "ann", "pro").await.status(), 200);
    }
    assert_eq!(as_user(&app, "ann", "pro").await.status(), 429);
    // Another pro user has a budget of their own.
    assert_eq!(as_user(&app, "bob", "pro").await.status(), 200);
    // A reset forgets the user under every plan.
    limiter
        .reset("reports", Subject::User("ann"))
        .await
        .unwrap();
    assert_eq!(as_user(&app, "ann", "free").await.status(), 200);
    assert_eq!(
        summary(&as_user(&app, "ann", "pro").await).2,
        s("\"reports\";r=9;t=60")
    );
}

// ---- limits checked inside the handler ----------------------------------------------------

const PER_USERNAME: Policy = match Policy::new(3, Duration::from_secs(900)) {
    Ok(policy) => policy,
    Err(error) => panic!("{}", error.message()),
};
static LOGINS_PER_USERNAME: Limit = Limit::constant("login-username", PER_USERNAME);

#[rate_limit(30, per = "1m", scope = "login-address")]
async fn login_by_name(req: HttpRequest, form: web::Form<Login>) -> Result<HttpResponse, Rejected> {
    limiter::check(&req, &LOGINS_PER_USERNAME, &form.user).await?;
    Ok(HttpResponse::Unauthorized().finish())
}

fn named_attempt(user: &str, from: &str) -> actix_http::Request {
    test::TestRequest::post()
        .uri("/login")
        .set_form([("user", user), ("password", "guess")])
        .peer_addr(peer(from))
        .to_request()
}

#[actix_web::test]
async fn a_limit_checked_inside_the_handler_answers_like_the_attribute() {
    let (clock, builder) = limiter();
    let limiter = builder.build();
    let app = test::init_service(
        App::new()
            .app_data(limiter.clone())
            .route("/login", web::post().to(login_by_name)),
    )
    .await;
    // Three tries for "ann", from three addresses: the username is what is counted.
    for (r, from) in [
        (2, "198.51.100.1:1"),
        (1, "198.51.100.2:1"),
        (0, "198.51.100.3:1"),
    ] {
        let res = test::call_service(&app, named_attempt("ann", from)).await;
        assert_eq!(res.status(), 401);
        // Both limits in the fields, the handler's own first.
        let expected = format!("\"login-address\";r=29;t=60, \"login-username\";r={r};t=900");
        assert_eq!(header(res.headers(), "ratelimit"), Some(expected.as_str()));
    }
    let res = test::call_service(&app, named_attempt("ann", "198.51.100.4:1")).await;
    assert_eq!(
        summary(&res),
        (
            429,
            s("900"),
            s("\"login-address\";r=29;t=60, \"login-username\";r=0;t=900")
        )
    );
    // Another username is not held back; time frees "ann".
    assert_eq!(
        test::call_service(&app, named_attempt("bob", "198.51.100.4:1"))
            .await
            .status(),
        401
    );
    limiter
        .reset("login-username", Subject::Checked("ann"))
        .await
        .unwrap();
    assert_eq!(
        test::call_service(&app, named_attempt("ann", "198.51.100.4:1"))
            .await
            .status(),
        401
    );
    clock.advance(Duration::from_secs(900));
    assert_eq!(
        test::call_service(&app, named_attempt("ann", "198.51.100.4:1"))
            .await
            .status(),
        401
    );
}

#[actix_web::test]
async fn a_limit_checked_inside_the_handler_uses_the_custom_rejection() {
    let (_, builder) = limiter();
    let limiter = builder
        .rejection_response(|rejection| {
            HttpResponse::TooManyRequests().body(format!("slow down: {}", rejection.limit_name()))
        })
        .build();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/login", web::post().to(login_by_name)),
    )
    .await;
    for _ in 0..3 {
        test::call_service(&app, named_attempt("cy", CLIENT)).await;
    }
    let res = test::call_service(&app, named_attempt("cy", CLIENT)).await;
    assert_eq!(summary(&res).0, 429);
    assert_eq!(header(res.headers(), "retry-after"), Some("900"));
    let body = test::read_body(res).await;
    assert_eq!(body, "slow down: login-username");
}

#[rate_limit(30, per = "1m", scope = "login-address-2")]
async fn login_failures_by_name(
    req: HttpRequest,
    form: web::Form<Login>,
) -> Result<HttpResponse, Rejected> {
    limiter::check_failures(&req, &LOGINS_PER_USERNAME, &form.user).await?;
    think().await;
    Ok(if form.password == "correct horse" {
        HttpResponse::Ok().finish()
    } else {
        HttpResponse::Unauthorized().finish()
    })
}

#[actix_web::test]
async fn failures_per_username_hold_back_guessing_never_the_owner() {
    let (_, builder) = limiter();
    let app = test::init_service(
        App::new()
            .app_data(builder.build())
            .route("/login", web::post().to(login_failures_by_name)),
    )
    .await;
    let try_login = |password: &'static str, from: &'static str| {
        test::TestRequest::post()
            .uri("/login")
            .set_form([("user", "dee"), ("password", password)])
            .peer_addr(peer(from))
            .to_request()
    };
    // The owner logs in as often as they like.
    for _ in 0..10 {
        let res = test::call_service(&app, try_login("correct horse", CLIENT)).await;
        assert_eq!(res.status(), 200);
    }
    // Twenty guesses at once from twenty addresses: exactly three tries for "dee".
    let froms = [
        "198.51.100.1:1",
        "198.51.100.2:1",
        "198.51.100.3:1",
        "198.51.100.4:1",
        "198.51.100.5:1",
        "198.51.100.6:1",
        "198.51.100.7:1",
        "198.51.100.8:1",
        "198.51.100.9:1",
        "198.51.100.10:1",
        "198.51.100.11:1",
        "198.51.100.12:1",
        "198.51.100.13:1",
        "198.51.100.14:1",
        "198.51.100.15:1",
        "198.51.100.16:1",
        "198.51.100.17:1",
        "198.51.100.18:1",
        "198.51.100.19:1",
        "198.51.100.20:1",
    ];
    let responses = futures_util::future::join_all(
        froms
            .iter()
            .map(|from| test::call_service(&app, try_login("guess", from))),
    )
    .await;
    let statuses: Vec<u16> = responses.iter().map(|r| r.status().as_u16()).collect();
    assert_eq!(
        statuses.iter().filter(|&&s| s == 401).count(),
        3,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|&&s| s == 429).count(),
        17,
        "{statuses:?}"
    );
}

// ---- which client a request is counted as ------------------------------------------------

#[actix_web::test]
async fn limiter_client_says_who_a_request_is_counted_as() {
    let limiter = Limiter::builder().trusted_proxies(["10.0.0.1/32"]).build();
    let direct = test::TestRequest::get()
        .peer_addr(peer(CLIENT))
        .to_http_request();
    assert_eq!(
        limiter.client(&direct),
        Ok(Client::Address(peer(CLIENT).ip()))
    );
    let proxied = test::TestRequest::get()
        .insert_header(("x-forwarded-for", "198.51.100.9, 10.0.0.1"))
        .peer_addr(peer("10.0.0.1:5000"))
        .to_http_request();
    assert_eq!(
        limiter.client(&proxied),
        Ok(Client::Address("198.51.100.9".parse().unwrap()))
    );
    let nowhere = test::TestRequest::get().to_http_request();
    assert_eq!(
        limiter.client(&nowhere),
        Err(limiter::Failure::NoClientAddress)
    );
}

// ---- a store that fails, inside the handler -------------------------------------------------

async fn checked_inside(req: HttpRequest) -> Result<HttpResponse, Rejected> {
    limiter::check(&req, &LOGINS_PER_USERNAME, "ann").await?;
    Ok(HttpResponse::Ok().finish())
}

#[actix_web::test]
async fn a_limit_checked_inside_the_handler_follows_the_store_fault_policy() {
    use limiter::OnStoreError;
    for (policy, dry_run, status, retry_after) in [
        (OnStoreError::FailClosed, false, 503, s("1")),
        (OnStoreError::FailOpen, false, 200, None),
        (OnStoreError::FallBackToMemory, false, 200, None),
        // A dry run enforces nothing, failing closed included.
        (OnStoreError::FailClosed, true, 200, None),
    ] {
        let limiter = Limiter::builder()
            .store(common::Failing("down"))
            .on_store_error(policy)
            .dry_run(dry_run)
            .build();
        let app = test::init_service(
            App::new()
                .app_data(limiter)
                .route("/", web::get().to(checked_inside)),
        )
        .await;
        let res = get(&app, "/", CLIENT).await;
        assert_eq!(res.status(), status, "{policy:?}, dry run {dry_run}");
        assert_eq!(
            header(res.headers(), "retry-after").map(str::to_owned),
            retry_after
        );
    }
}
