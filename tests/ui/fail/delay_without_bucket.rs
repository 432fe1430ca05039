use limiter::rate_limit;

// Only a token bucket says exactly when a refused request would be admitted.
#[rate_limit(10, per = "1s", delay = "2s")]
async fn sliding() -> &'static str {
    "ok"
}

// A delay beyond a minute.
#[rate_limit(10, per = "1s", algorithm = "token_bucket", delay = "2m")]
async fn too_long() -> &'static str {
    "ok"
}

fn main() {}
