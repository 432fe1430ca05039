use limiter::rate_limit;

#[rate_limit(5, per = "99999999999999999999d")]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
