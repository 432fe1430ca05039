use limiter::rate_limit;

// A calendar quota takes no algorithm.
#[rate_limit(10_000, per = "month", algorithm = "sliding_window")]
async fn monthly() -> &'static str {
    "ok"
}

// A rolling window longer than a week: the error points to calendar quotas.
#[rate_limit(10_000, per = "30d")]
async fn thirty_days() -> &'static str {
    "ok"
}

fn main() {}
