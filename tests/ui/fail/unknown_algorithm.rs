use limiter::rate_limit;

#[rate_limit(5, per = "1m", algorithm = "leaky_bucket")]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
