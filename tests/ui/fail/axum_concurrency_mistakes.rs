use limiter_axum::concurrency_limit;

#[concurrency_limit(0)]
async fn none_in_flight() -> &'static str {
    "ok"
}

#[concurrency_limit(4, per = "1m")]
async fn with_a_window() -> &'static str {
    "ok"
}

#[concurrency_limit(key = "user")]
async fn no_maximum() -> &'static str {
    "ok"
}

#[concurrency_limit(4, key = "nobody")]
async fn unknown_key() -> &'static str {
    "ok"
}

fn main() {}
