use limiter::rate_limit;

const BATCH: u32 = 50;

#[rate_limit(5, per = "1m", cost = BATCH)]
async fn batch() -> &'static str {
    "ok"
}

fn main() {}
