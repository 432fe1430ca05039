use limiter::rate_limit;

#[rate_limit(5, per = "1m", burst = 10)]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
