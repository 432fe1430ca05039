use limiter::rate_limit;

#[rate_limit(5, per = "1m", window = "1h")]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
