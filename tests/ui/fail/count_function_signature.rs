use limiter::rate_limit;

fn counts(status: u16) -> bool {
    status >= 400
}

#[rate_limit(5, per = "1m", count = counts)]
async fn login() -> &'static str {
    "ok"
}

fn main() {}
