use axum::http::request::Parts;
use limiter_axum::rate_limit;

// An axum handler's future is `Send`; a resolver's must be too, which an `async fn` of a
// borrowed request cannot promise on stable Rust: a plain function, on axum.
async fn tenant(req: &Parts) -> Option<String> {
    Some(req.uri.path().to_string())
}

#[rate_limit(5, per = "1m", key = tenant)]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
