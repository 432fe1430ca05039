use limiter::rate_limit;

#[rate_limit(5, per = "1m", scope = "auth")]
#[rate_limit(100, per = "1d", scope = "auth")]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
