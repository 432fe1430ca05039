use limiter::{concurrency_limit, rate_limit};

#[concurrency_limit(4, key = "user")]
async fn alone() -> &'static str {
    "ok"
}

#[rate_limit(10, per = "1m")]
#[concurrency_limit(2)]
#[concurrency_limit(10, key = "global", scope = "everyone-in-flight")]
async fn with_rates() -> &'static str {
    "ok"
}

pub(crate) fn main() {}
