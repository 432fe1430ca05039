use limiter::rate_limit;

#[rate_limit(5, per = "1m", block = "15m")]
async fn blocked() -> &'static str {
    "ok"
}

#[rate_limit(
    5,
    per = "1m",
    block = "15m",
    penalty = "3 in 1h -> 1d",
    algorithm = "fixed_window"
)]
#[rate_limit(100, per = "1d")]
async fn escalated() -> &'static str {
    "ok"
}

pub(crate) fn main() {}

#[limiter::rate_limit(10, per = "1s", algorithm = "token_bucket", burst = 5, delay = "2s")]
async fn smoothed() -> &'static str {
    "ok"
}
