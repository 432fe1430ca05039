// A block no longer than the wait the limit already makes a rejected client sit out would
// do nothing: the window's (after a burst) or a token's return.
use limiter::rate_limit;

#[rate_limit(5, per = "1m", block = "30s")]
async fn within_the_window() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1m", algorithm = "fixed_window", block = "1m")]
async fn as_long_as_the_window() -> &'static str {
    "ok"
}

#[rate_limit(6, per = "1m", algorithm = "token_bucket", block = "10s")]
async fn within_a_tokens_return() -> &'static str {
    "ok"
}

// Longer than a token's return: shown.
#[rate_limit(6, per = "1m", algorithm = "token_bucket", block = "30s")]
async fn bucket_block() -> &'static str {
    "ok"
}

// A calendar quota takes any block.
#[rate_limit(100, per = "day", block = "1h")]
async fn quota_block() -> &'static str {
    "ok"
}

fn main() {}
