use limiter::rate_limit;

#[rate_limit(5, per = "1m", dry_run = "yes")]
async fn trial() -> &'static str {
    "ok"
}

fn main() {}
