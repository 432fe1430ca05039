use limiter::rate_limit;

#[rate_limit(5, per = "1m", dry_run = true, enforce = "10%")]
async fn both() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1m", key = "global", enforce = "10%")]
async fn everyone() -> &'static str {
    "ok"
}

fn main() {}
