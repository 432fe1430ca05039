use limiter::rate_limit;
#[rate_limit(5, per = "1 minute")]
async fn h() -> &'static str { "ok" }
fn main() {}
