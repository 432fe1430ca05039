use limiter::rate_limit;

#[rate_limit(5, per = "0s")]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
