use limiter::rate_limit;

#[rate_limit(0, per = "1m")]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
