use limiter::rate_limit;

#[rate_limit]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
