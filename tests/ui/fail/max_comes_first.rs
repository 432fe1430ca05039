use limiter::rate_limit;

#[rate_limit(per = "1m", 5)]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
