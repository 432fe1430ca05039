//! The same answers on both front ends: each case declares one handler twice, with the
//! same attribute — once for actix (`limiter::rate_limit`), once for axum
//! (`limiter_axum::rate_limit`) — sends both the same requests on the same clock, and
//! compares every response: status, every header field, body, byte for byte. The 429s and
//! the failures, `Retry-After`, the IETF RateLimit fields and the legacy ones, the
//! quota-exceeded problem, dry runs, what a success gives back, a middleware's fields
//! before a handler's: what a service migrating from one framework to the other must not
//! see change.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use std::net::SocketAddr;
use std::time::Duration;

use actix_web::{test, web, App};
use axum::Extension;
use limiter::{ManualClock, OnStoreError, Policy};
use limiter_http::{Front, LimiterBuilder};
use tower::ServiceExt;

use crate::common::Failing;

/// What the handlers answer: the status a request asks for in `x-answer` (200 otherwise),
/// with a short text body.
fn asked_status(value: Option<&[u8]>) -> u16 {
    value
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

fn actix_answer(req: &actix_web::HttpRequest) -> (&'static str, actix_web::http::StatusCode) {
    let status = asked_status(req.headers().get("x-answer").map(|v| v.as_bytes()));
    let status = actix_web::http::StatusCode::from_u16(status).unwrap();
    ("ok", status)
}

fn axum_answer(headers: &axum::http::HeaderMap) -> (axum::http::StatusCode, &'static str) {
    let status = asked_status(headers.get("x-answer").map(|v| v.as_bytes()));
    (axum::http::StatusCode::from_u16(status).unwrap(), "ok")
}

/// A handler declared on both front ends with the same attributes (a
/// `#[concurrency_limit]`'s first, after `in_flight`).
macro_rules! both {
    ($name:ident, $(in_flight [$($in_flight:tt)*],)? $([$($attr:tt)*]),+) => {
        mod $name {
            pub(super) mod on_actix {
                $(#[limiter::concurrency_limit($($in_flight)*)])?
                $(#[limiter::rate_limit($($attr)*)])+
                pub(crate) async fn handler(
                    req: actix_web::HttpRequest,
                ) -> impl actix_web::Responder {
                    super::super::actix_answer(&req)
                }
            }
            pub(super) mod on_axum {
                $(#[limiter_axum::concurrency_limit($($in_flight)*)])?
                $(#[limiter_axum::rate_limit($($attr)*)])+
                pub(crate) async fn handler(
                    headers: axum::http::HeaderMap,
                ) -> (axum::http::StatusCode, &'static str) {
                    super::super::axum_answer(&headers)
                }
            }
        }
    };
}

both!(login, [5, per = "1m", key = "ip"]);
both!(
    stacked,
    [2, per = "1s"],
    [5, per = "1m", scope = "parity_hourly"]
);
both!(
    bucket,
    [
        60,
        per = "1m",
        algorithm = "token_bucket",
        burst = 3,
        scope = "parity_bucket"
    ]
);
both!(
    failures,
    [2, per = "1m", count = "failures", scope = "parity_guesses"]
);
both!(
    trial,
    [1, per = "1m", dry_run = true, scope = "parity_trial"]
);
both!(
    by_header,
    [
        2,
        per = "1m",
        key = "header:x-api-key",
        scope = "parity_keyed"
    ]
);
both!(
    fixed,
    [
        3,
        per = "10s",
        algorithm = "fixed_window",
        scope = "parity_fixed"
    ]
);
both!(guarded, [100, per = "1m", scope = "parity_under_app"]);
both!(
    uploads,
    in_flight [1, key = "ip", scope = "parity_uploads"],
    [5, per = "1m", scope = "parity_uploads_rate"]
);

/// One request: its method, headers and peer (none: a request without an address).
/// A `held` one's response is kept, its body unread, until the case ends: it holds its
/// concurrency slots meanwhile.
struct Ask {
    uri: &'static str,
    headers: Vec<(&'static str, &'static str)>,
    peer: Option<&'static str>,
    held: bool,
}

fn from(peer: &'static str) -> Ask {
    Ask {
        uri: "/",
        headers: Vec::new(),
        peer: Some(peer),
        held: false,
    }
}

impl Ask {
    fn header(mut self, name: &'static str, value: &'static str) -> Ask {
        self.headers.push((name, value));
        self
    }

    fn to(mut self, uri: &'static str) -> Ask {
        self.uri = uri;
        self
    }

    fn held(mut self) -> Ask {
        self.held = true;
        self
    }
}

/// `bytes` as text: themselves when UTF-8, else escaped (either way, one text per bytes).
fn text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_string(),
        Err(_) => format!("bytes:{}", bytes.escape_ascii()),
    }
}

/// A response as both front ends are compared: status, every header field (by name, in
/// order of name and value; `date` aside, and `content-length`, which axum writes before
/// the response leaves and actix as it does), and the body, as text (none when held).
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    status: u16,
    fields: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn new(status: u16, fields: Vec<(String, &[u8])>, body: Option<&[u8]>) -> Answer {
        let mut fields: Vec<(String, String)> = fields
            .into_iter()
            .filter(|(name, value)| match (name.as_str(), body) {
                ("date", _) | ("content-length", None) => false,
                ("content-length", Some(body)) => {
                    assert_eq!(
                        *value,
                        body.len().to_string().as_bytes(),
                        "its body's length"
                    );
                    false
                }
                _ => true,
            })
            .map(|(name, value)| (name, text(value)))
            .collect();
        fields.sort();
        Answer {
            status,
            fields,
            body: body.map_or_else(|| "(held)".to_string(), text),
        }
    }

    fn field(&self, name: &str) -> Option<&str> {
        let (_, value) = self.fields.iter().find(|(n, _)| n == name)?;
        Some(value)
    }
}

/// The settings a case's two limiters are built with, the same on both.
#[derive(Clone, Copy, Default)]
struct Setup {
    quota_exceeded: bool,
    legacy: bool,
    message: Option<&'static str>,
    failing_closed: bool,
    behind_proxy: bool,
}

fn limiter<F: Front>(setup: Setup, clock: &ManualClock) -> limiter_http::Limiter<F> {
    let mut builder: LimiterBuilder<F> = limiter_http::Limiter::builder()
        .clock(clock.clone())
        .quota_exceeded_problems(setup.quota_exceeded)
        .legacy_headers(setup.legacy);
    if let Some(message) = setup.message {
        builder = builder.rejection_message(message);
    }
    if setup.failing_closed {
        builder = builder
            .store(Failing("an internal detail no client may see"))
            .on_store_error(OnStoreError::FailClosed);
    }
    if setup.behind_proxy {
        builder = builder
            .trusted_proxies(["10.0.0.0/8"])
            .forwarding_headers(limiter::ForwardingHeaders::Both);
    }
    builder.build()
}

/// When both clocks start: the same instant, so that every `Retry-After` and `t` match.
const START: Duration = Duration::from_secs(1_000_000);

/// The answers of actix and of axum to `asks`, in turn, each front end with a limiter of
/// `setup` on a clock of its own that moves by `step` after each request.
async fn answers(
    actix_route: fn(&mut web::ServiceConfig),
    axum_route: axum::Router,
    setup: Setup,
    asks: &[Ask],
    step: Duration,
) -> Vec<(Answer, Answer)> {
    let (actix_clock, axum_clock) = (
        ManualClock::starting_at(START),
        ManualClock::starting_at(START),
    );
    let actix_limiter: limiter::Limiter = limiter(setup, &actix_clock);
    let axum_limiter: limiter_axum::Limiter = limiter(setup, &axum_clock);
    let app = test::init_service(App::new().app_data(actix_limiter).configure(actix_route)).await;
    let router = axum_route.layer(Extension(axum_limiter));
    let mut both = Vec::new();
    let (mut held_on_actix, mut held_on_axum) = (Vec::new(), Vec::new());
    for ask in asks {
        let mut req = test::TestRequest::get().uri(ask.uri);
        if let Some(peer) = ask.peer {
            req = req.peer_addr(peer.parse().unwrap());
        }
        for (name, value) in &ask.headers {
            req = req.insert_header((*name, *value));
        }
        let res = test::call_service(&app, req.to_request()).await;
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let fields = headers
            .iter()
            .map(|(n, v)| (n.as_str().to_string(), v.as_bytes()))
            .collect();
        let actix = match ask.held {
            true => {
                let actix = Answer::new(status, fields, None);
                held_on_actix.push(res);
                actix
            }
            false => Answer::new(status, fields, Some(&test::read_body(res).await)),
        };

        let mut req = axum::http::Request::get(ask.uri);
        for (name, value) in &ask.headers {
            req = req.header(*name, *value);
        }
        let mut req = req.body(axum::body::Body::empty()).unwrap();
        if let Some(peer) = ask.peer {
            let peer: SocketAddr = peer.parse().unwrap();
            req.extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
        }
        let res = router.clone().oneshot(req).await.unwrap();
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let fields = headers
            .iter()
            .map(|(n, v)| (n.as_str().to_string(), v.as_bytes()))
            .collect();
        let axum = match ask.held {
            true => {
                let axum = Answer::new(status, fields, None);
                held_on_axum.push(res);
                axum
            }
            false => {
                let body = axum::body::to_bytes(res.into_body(), usize::MAX)
                    .await
                    .unwrap();
                Answer::new(status, fields, Some(&body))
            }
        };
        both.push((actix, axum));
        actix_clock.advance(step);
        axum_clock.advance(step);
    }
    both
}

/// Runs a case and checks that every answer is the same on both; returns actix's, for the
/// case's own checks, and prints what was compared.
async fn same(
    case: &str,
    actix_route: fn(&mut web::ServiceConfig),
    axum_route: axum::Router,
    setup: Setup,
    asks: Vec<Ask>,
    step: Duration,
) -> Vec<Answer> {
    let both = answers(actix_route, axum_route, setup, &asks, step).await;
    let mut statuses = Vec::new();
    for (index, (actix, axum)) in both.iter().enumerate() {
        assert_eq!(
            actix, axum,
            "{case}: request {index} answered differently (left actix, right axum)"
        );
        statuses.push(actix.status);
    }
    println!(
        "{case}: {} requests answered the same: {statuses:?}",
        both.len()
    );
    both.into_iter().map(|(actix, _)| actix).collect()
}

macro_rules! routes {
    ($name:ident) => {
        (
            |config: &mut web::ServiceConfig| {
                config
                    .route("/", web::to($name::on_actix::handler))
                    .service(limiter::routes_service("/limits"));
            },
            axum::Router::new()
                .route("/", axum::routing::any($name::on_axum::handler))
                .route("/limits", axum::routing::get(limiter_axum::routes_page)),
        )
    };
}

const ANN: &str = "203.0.113.7:40000";
const BOB: &str = "198.51.100.9:40000";

#[actix_web::test]
async fn a_login_form_five_then_a_429() {
    let (actix, axum) = routes!(login);
    let asks = (0..7).map(|_| from(ANN)).chain([from(BOB)]).collect();
    let got = same(
        "login",
        actix,
        axum,
        Setup::default(),
        asks,
        Duration::from_secs(1),
    )
    .await;
    let statuses: Vec<u16> = got.iter().map(|a| a.status).collect();
    assert_eq!(statuses, [200, 200, 200, 200, 200, 429, 429, 200]);
    assert_eq!(got[5].field("retry-after"), Some("55"));
    assert_eq!(
        got[5].field("content-type"),
        Some("application/problem+json")
    );
}

#[actix_web::test]
async fn the_quota_exceeded_problem_a_message_and_the_legacy_fields() {
    let (actix, axum) = routes!(login);
    let setup = Setup {
        quota_exceeded: true,
        legacy: true,
        message: Some("Slow down, \"ann\"."),
        ..Setup::default()
    };
    let asks = (0..7).map(|_| from(ANN)).collect();
    let got = same(
        "quota exceeded",
        actix,
        axum,
        setup,
        asks,
        Duration::from_millis(700),
    )
    .await;
    assert!(got[6].field("x-ratelimit-remaining").is_some());
    let body = &got[6].body;
    assert!(
        body.contains("quota-exceeded") && body.contains("violated-policies"),
        "{body}"
    );
}

#[actix_web::test]
async fn stacked_limits_a_bucket_and_a_fixed_window() {
    let (actix, axum) = routes!(stacked);
    let asks = (0..8).map(|_| from(ANN)).collect();
    same(
        "stacked",
        actix,
        axum,
        Setup::default(),
        asks,
        Duration::from_millis(300),
    )
    .await;
    let (actix, axum) = routes!(bucket);
    let asks = (0..8).map(|_| from(ANN)).collect();
    same(
        "bucket",
        actix,
        axum,
        Setup::default(),
        asks,
        Duration::from_millis(250),
    )
    .await;
    let (actix, axum) = routes!(fixed);
    let asks = (0..8).map(|_| from(ANN)).collect();
    same(
        "fixed",
        actix,
        axum,
        Setup::default(),
        asks,
        Duration::from_secs(2),
    )
    .await;
}

#[actix_web::test]
async fn what_a_success_gives_back_and_a_dry_run() {
    let (actix, axum) = routes!(failures);
    let asks = vec![
        from(ANN).header("x-answer", "401"),
        from(ANN),
        from(ANN),
        from(ANN).header("x-answer", "401"),
        from(ANN).header("x-answer", "401"),
        from(ANN),
    ];
    let got = same(
        "failures",
        actix,
        axum,
        Setup::default(),
        asks,
        Duration::from_secs(1),
    )
    .await;
    let statuses: Vec<u16> = got.iter().map(|a| a.status).collect();
    assert_eq!(statuses, [401, 200, 200, 401, 429, 429]);
    let (actix, axum) = routes!(trial);
    let asks = (0..3).map(|_| from(ANN)).collect();
    let got = same(
        "dry run",
        actix,
        axum,
        Setup::default(),
        asks,
        Duration::from_secs(1),
    )
    .await;
    assert_eq!(got[2].status, 200);
    assert_eq!(
        got[2].field("x-ratelimit-dry-run"),
        Some("\"parity_trial\"")
    );
}

#[actix_web::test]
async fn keys_by_header_and_forwarding_through_a_proxy() {
    let (actix, axum) = routes!(by_header);
    let asks = vec![
        from(ANN).header("x-api-key", "k1"),
        from(BOB).header("x-api-key", "k1"),
        from(ANN).header("x-api-key", "k1"),
        from(ANN).header("x-api-key", "k2"),
    ];
    let got = same(
        "by header",
        actix,
        axum,
        Setup::default(),
        asks,
        Duration::from_secs(1),
    )
    .await;
    assert_eq!(got[2].status, 429);
    let (actix, axum) = routes!(login);
    let setup = Setup {
        behind_proxy: true,
        ..Setup::default()
    };
    let asks = vec![
        from("10.0.0.1:1").header("x-forwarded-for", "203.0.113.7"),
        from("10.0.0.1:1")
            .header("x-forwarded-for", "203.0.113.7")
            .header("forwarded", "for=198.51.100.9"),
        from("10.0.0.1:1")
            .header("x-forwarded-for", "203.0.113.7")
            .header("forwarded", "for=203.0.113.7"),
    ];
    let got = same(
        "behind a proxy",
        actix,
        axum,
        setup,
        asks,
        Duration::from_secs(1),
    )
    .await;
    assert_eq!(got[1].status, 400);
}

#[actix_web::test]
async fn the_failures_503_and_500() {
    let (actix, axum) = routes!(login);
    let setup = Setup {
        failing_closed: true,
        ..Setup::default()
    };
    let got = same(
        "store down",
        actix,
        axum,
        setup,
        vec![from(ANN)],
        Duration::ZERO,
    )
    .await;
    assert_eq!(got[0].status, 503);
    assert!(!got[0].body.contains("internal detail"));
    let (actix, axum) = routes!(login);
    let nobody = Ask {
        uri: "/",
        headers: Vec::new(),
        peer: None,
        held: false,
    };
    let got = same(
        "no address",
        actix,
        axum,
        Setup::default(),
        vec![nobody],
        Duration::ZERO,
    )
    .await;
    assert_eq!(got[0].status, 500);
}

#[actix_web::test]
async fn a_middleware_over_a_handler_on_both() {
    let policy = Policy::new(3, Duration::from_secs(60)).unwrap();
    let actix = |config: &mut web::ServiceConfig| {
        let policy = Policy::new(3, Duration::from_secs(60)).unwrap();
        config.service(
            web::scope("")
                .wrap(limiter::RateLimit::new(policy).scope("parity_api"))
                .route("/", web::to(guarded::on_actix::handler)),
        );
    };
    let axum = axum::Router::new()
        .route("/", axum::routing::any(guarded::on_axum::handler))
        .layer(limiter_axum::RateLimitLayer::new(policy).scope("parity_api"));
    let asks = (0..5).map(|_| from(ANN)).collect();
    let got = same(
        "middleware",
        actix,
        axum,
        Setup::default(),
        asks,
        Duration::from_secs(1),
    )
    .await;
    assert_eq!(
        got[0].field("ratelimit-policy"),
        Some("\"parity_api\";q=3;w=60, \"parity_under_app\";q=100;w=60")
    );
    assert_eq!(got[3].status, 429);
}

#[actix_web::test]
async fn a_concurrency_limit_held_then_full() {
    let (actix, axum) = routes!(uploads);
    // Ann's first upload holds her one slot (its body unsent); her second is refused, Bob's
    // is not; and her third, the first still held, is refused again.
    let asks = vec![from(ANN).held(), from(ANN), from(BOB), from(ANN)];
    let got = same(
        "uploads",
        actix,
        axum,
        Setup::default(),
        asks,
        Duration::from_secs(1),
    )
    .await;
    let statuses: Vec<u16> = got.iter().map(|a| a.status).collect();
    assert_eq!(statuses, [200, 429, 200, 429]);
    assert_eq!(
        got[0].field("ratelimit"),
        Some("\"parity_uploads_rate\";r=4;t=60, \"parity_uploads\";r=0")
    );
    assert_eq!(got[1].field("retry-after"), Some("1"));
    assert_eq!(
        got[1].field("ratelimit-policy"),
        Some("\"parity_uploads\";q=1;qu=\"concurrent-requests\"")
    );
}

#[actix_web::test]
async fn the_routes_page_as_html_and_as_json() {
    let (actix, axum) = routes!(by_header);
    // A client over its limit first, so that the page names who is limited right now.
    let keyed = || from(ANN).header("x-api-key", "k-7");
    let asks = vec![
        keyed(),
        keyed(),
        keyed(),
        from(ANN).to("/limits"),
        from(ANN).to("/limits?format=json"),
        from(ANN).to("/limits").header("accept", "application/json"),
    ];
    let got = same(
        "routes page",
        actix,
        axum,
        Setup::default(),
        asks,
        Duration::from_secs(1),
    )
    .await;
    let statuses: Vec<u16> = got.iter().map(|a| a.status).collect();
    assert_eq!(statuses, [200, 200, 429, 200, 200, 200]);
    assert_eq!(
        got[3].field("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert!(
        got[3].body.contains("<code>parity_keyed</code>"),
        "{}",
        got[3].body
    );
    assert_eq!(got[4].field("content-type"), Some("application/json"));
    assert_eq!(got[4].body, got[5].body);
    let json: serde_json::Value = serde_json::from_str(&got[4].body).unwrap();
    let rejected = &json["rejected"];
    assert_eq!(rejected[0]["scope"], "parity_keyed", "{json}");
    assert_eq!(rejected[0]["clients"][0]["rejections"], 1, "{json}");
}
