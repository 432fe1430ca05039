use limiter_axum::rate_limit;

fn tenant(id: u32) -> String {
    id.to_string()
}

#[rate_limit(5, per = "1m", key = tenant)]
async fn handler() -> &'static str {
    "ok"
}

fn main() {}
