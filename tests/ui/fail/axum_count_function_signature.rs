use limiter_axum::rate_limit;

// `count = fn` takes http 1's `StatusCode` on axum.
fn redirected(status: u16) -> bool {
    status == 303
}

#[rate_limit(5, per = "1m", count = redirected)]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
