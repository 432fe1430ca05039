use limiter_axum::rate_limit;

// The same grammar and the same errors as on actix.
#[rate_limit(5, per = "5 minutes")]
async fn handler() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1m", cost = 6)]
async fn costly() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1m", key = "header:x api key")]
async fn keyed() -> &'static str {
    "ok"
}

fn main() {}
