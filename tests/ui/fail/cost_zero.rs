use limiter::rate_limit;

#[rate_limit(100, per = "1m", cost = 0)]
async fn batch() -> &'static str {
    "ok"
}

fn main() {}
