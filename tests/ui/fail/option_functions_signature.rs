use actix_web::HttpRequest;
use limiter::{rate_limit, Policy};

fn is_internal(_: &str) -> bool {
    false
}

fn batch_size(_: &HttpRequest) -> usize {
    1
}

fn plan(_: &HttpRequest) -> Policy {
    unimplemented!()
}

#[rate_limit(5, per = "1m", exempt = is_internal)]
async fn exempted() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1m", cost = batch_size)]
async fn costly() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1m", policy = plan)]
async fn planned() -> &'static str {
    "ok"
}

fn main() {}
