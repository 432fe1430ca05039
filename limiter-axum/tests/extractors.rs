//! A guarded handler's own extractors run after the decision; one that rejects the request
//! (a form that does not parse) is answered as the handler's response would be: with the
//! RateLimit fields, and what its status does not count given back.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{header, Request, StatusCode};
use axum::routing::post;
use axum::{Extension, Form, Router};
use limiter_axum::{rate_limit, Limiter, ManualClock};
use tower::ServiceExt;

#[derive(serde::Deserialize)]
struct Order {
    item: String,
}

/// Only successes count.
fn counts_successes(status: StatusCode) -> bool {
    status.is_success()
}

#[rate_limit(2, per = "1m", count = counts_successes, scope = "orders")]
async fn order(Form(order): Form<Order>) -> String {
    format!("ordered {}", order.item)
}

/// Status and `RateLimit` of a POST of `body` as a form.
async fn post_form(router: &Router, body: &'static str) -> (StatusCode, Option<String>) {
    let mut req = Request::post("/")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(Body::from(body))
        .unwrap();
    let peer: SocketAddr = "203.0.113.7:1".parse().unwrap();
    req.extensions_mut().insert(ConnectInfo(peer));
    let res = router.clone().oneshot(req).await.unwrap();
    let fields = res
        .headers()
        .get("ratelimit")
        .map(|v| v.to_str().unwrap().to_string());
    (res.status(), fields)
}

#[tokio::test]
async fn a_rejected_form_carries_the_fields_and_is_given_back() {
    let limiter = Limiter::builder().clock(ManualClock::new()).build();
    let router = Router::new()
        .route("/", post(order))
        .layer(Extension(limiter));
    // Five forms that do not parse: each rejected by `Form`, none of them counted.
    for _ in 0..5 {
        let (status, fields) = post_form(&router, "nothing=here").await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(
            fields.as_deref(),
            Some("\"orders\";r=2;t=60"),
            "fields on a rejection, its unit given back"
        );
    }
    // The budget is whole: two orders, then a 429.
    let mut statuses = Vec::new();
    for _ in 0..3 {
        statuses.push(post_form(&router, "item=tea").await.0);
    }
    assert_eq!(
        statuses,
        [
            StatusCode::OK,
            StatusCode::OK,
            StatusCode::TOO_MANY_REQUESTS
        ]
    );
}
