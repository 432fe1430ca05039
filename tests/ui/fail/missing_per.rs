use limiter::rate_limit;

#[rate_limit(5)]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
