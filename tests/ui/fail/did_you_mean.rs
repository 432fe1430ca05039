use limiter::rate_limit;

// The common slips, each with the fix.
#[rate_limit(5, per = "1 minute")]
async fn spaced() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1min")]
async fn min() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1m", key = "ipaddress")]
async fn ipaddress() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1m", key = "x-api-key")]
async fn header_without_prefix() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1m", key = ip)]
async fn unquoted() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1m", key = "IP")]
async fn capitals() -> &'static str {
    "ok"
}

// A part of the request no key reads: a key function does.
#[rate_limit(5, per = "1m", key = "cookie:session")]
async fn cookie() -> &'static str {
    "ok"
}

// A minute, or a month? Both are said.
#[rate_limit(5, per = "1M")]
async fn capital_m() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "monthly")]
async fn monthly() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "2w")]
async fn weeks() -> &'static str {
    "ok"
}

// A misspelled algorithm is one error: not also one about `burst`.
#[rate_limit(5, per = "1m", algorithm = "token-bucket", burst = 10)]
async fn dashed() -> &'static str {
    "ok"
}

fn main() {}
