use limiter::rate_limit;

#[rate_limit(5, per = "30m1h")]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
