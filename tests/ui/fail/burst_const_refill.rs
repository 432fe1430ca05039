use limiter::rate_limit;

const WEEKLY: u32 = 1;

// One token a week, eight in the bucket: 56 days to refill, past the 49 days every store
// computes exactly. A constant maximum is checked when the constant is evaluated.
#[rate_limit(WEEKLY, per = "7d", algorithm = "token_bucket", burst = 8)]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
