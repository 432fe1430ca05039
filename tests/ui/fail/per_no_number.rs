use limiter::rate_limit;

#[rate_limit(5, per = "m")]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
