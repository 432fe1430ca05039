use limiter::rate_limit;

const MAX: u32 = 5;

// A cost above a constant maximum: no request could ever pass.
#[rate_limit(MAX, per = "1m", cost = 10)]
async fn export() -> &'static str {
    "ok"
}

fn main() {}
