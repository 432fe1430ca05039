use limiter::rate_limit;

#[rate_limit(5, per = "1m", key = "header:x api key")]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
