use limiter::rate_limit;

#[rate_limit(5, per = "1m", cost = 10)]
async fn batch() -> &'static str {
    "ok"
}

fn main() {}
