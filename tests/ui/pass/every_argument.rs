//! Every argument form of the attribute compiles.
use actix_web::{get, post, web, App, HttpRequest, HttpResponse, Responder};
use limiter::rate_limit;

const PER_MINUTE: u32 = 60;

fn redirected_back(status: actix_web::http::StatusCode) -> bool {
    status == actix_web::http::StatusCode::SEE_OTHER
}

#[rate_limit(5, per = "15m", count = redirected_back)]
async fn counted_by_outcome() -> &'static str {
    "ok"
}

fn tenant(req: &HttpRequest) -> Option<String> {
    req.headers()
        .get("x-tenant")?
        .to_str()
        .ok()
        .map(str::to_owned)
}

#[rate_limit(5, per = "1m")]
async fn defaults() -> impl Responder {
    "ok"
}

#[rate_limit(PER_MINUTE * 2, per = "1h30m", key = "global", algorithm = "fixed_window")]
async fn const_max() -> HttpResponse {
    HttpResponse::Ok().finish()
}

#[rate_limit(
    10,
    per = "500ms",
    key = "user",
    algorithm = "sliding_window_counter",
    scope = "api"
)]
async fn user_key(body: web::Bytes) -> Result<String, actix_web::Error> {
    Ok(format!("{} bytes", body.len()))
}

#[rate_limit(
    100,
    per = "1s",
    key = "header:X-Api-Key",
    algorithm = "token_bucket",
    burst = 20
)]
async fn header_key() -> &'static str {
    "ok"
}

#[rate_limit(3, per = "1d", key = tenant, crate = "::limiter")]
async fn function_key(web::Json((a, b)): web::Json<(u32, u32)>) -> String {
    format!("{a}{b}")
}

#[get("/a")]
#[rate_limit(5, per = "1m")]
async fn route_above() -> &'static str {
    "a"
}

#[rate_limit(5, per = "1m")]
#[post("/b")]
/// Docs stay.
pub async fn route_below() -> &'static str {
    "b"
}

#[rate_limit(5, per = "1m")]
#[rate_limit(100, per = "1d")]
async fn stacked() -> &'static str {
    "ok"
}

fn internal(req: &HttpRequest) -> bool {
    req.headers().contains_key("x-internal")
}

fn batch_size(req: &HttpRequest) -> u32 {
    req.query_string().len() as u32
}

fn plan(_: &HttpRequest) -> Option<limiter::Policy> {
    None
}

const BATCH: u32 = 10;

#[rate_limit(100, per = "1m", cost = 10, count = "failures", dry_run = true)]
#[rate_limit(1000, per = "1h", cost = BATCH, count = "all", dry_run = false, enforce = "12.5%", scope = "hourly")]
async fn literal_options() -> &'static str {
    "ok"
}

#[rate_limit(100, per = "1m", key = "user", cost = batch_size, exempt = internal, policy = plan)]
async fn function_options() -> &'static str {
    "ok"
}

pub(crate) fn main() {
    let _ = App::new()
        .route("/", web::get().to(defaults))
        .route("/c", web::get().to(const_max))
        .route("/u", web::post().to(user_key))
        .route("/h", web::get().to(header_key))
        .route("/f", web::get().to(function_key))
        .route("/s", web::get().to(stacked))
        .route("/o", web::get().to(literal_options))
        .route("/p", web::get().to(function_options))
        .service(route_above)
        .service(route_below);
}
