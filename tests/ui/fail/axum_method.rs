use limiter_axum::rate_limit;

struct Api;

impl Api {
    fn all() -> &'static str {
        "[]"
    }

    #[rate_limit(5, per = "1m")]
    async fn items() -> &'static str {
        Self::all()
    }

    #[rate_limit(5, per = "1m")]
    async fn one(&self) -> &'static str {
        "{}"
    }
}

fn main() {}
