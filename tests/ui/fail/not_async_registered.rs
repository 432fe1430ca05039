use actix_web::{web, App};
use limiter::rate_limit;

// One mistake, one message: not also actix's "the trait `Handler<_>` is not implemented".
#[rate_limit(5, per = "1m")]
fn handler() -> &'static str {
    "ok"
}

fn main() {
    let _ = App::new().route("/", web::get().to(handler));
}
