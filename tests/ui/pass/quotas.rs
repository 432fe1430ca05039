use limiter::rate_limit;

#[rate_limit(5, per = "1s")]
#[rate_limit(10_000, per = "month", key = "header:x-api-key")]
async fn api() -> &'static str {
    "ok"
}

#[rate_limit(100, per = "day", block = "1h")]
#[rate_limit(500, per = "week")]
async fn daily() -> &'static str {
    "ok"
}

pub(crate) fn main() {}
