use std::rc::Rc;

use axum::http::request::Parts;
use limiter_axum::rate_limit;

async fn lookup(_: &str) -> Option<String> {
    None
}

// An axum handler's future is `Send`, so a resolver's must be: this one holds an `Rc`
// across an `.await`.
async fn tenant(req: &Parts) -> Option<String> {
    let path = Rc::new(req.uri.path().to_string());
    lookup(&path).await
}

#[rate_limit(5, per = "1m", key = tenant)]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
