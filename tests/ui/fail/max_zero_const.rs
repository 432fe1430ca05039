use limiter::rate_limit;

const ATTEMPTS: u32 = 0;

#[rate_limit(ATTEMPTS, per = "1m")]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
