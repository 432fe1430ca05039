use limiter::rate_limit;

#[rate_limit(5, per = "8d")]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
