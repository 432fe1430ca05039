use limiter::rate_limit;

#[rate_limit(5, per = "15m", count = "failed")]
async fn login() -> &'static str {
    "ok"
}

fn main() {}
