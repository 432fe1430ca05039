use limiter::rate_limit;

struct Api;

impl Api {
    #[rate_limit(5, per = "1m")]
    async fn handler(&self) -> &'static str {
        "ok"
    }
}

fn main() {}
