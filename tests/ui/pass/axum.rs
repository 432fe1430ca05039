//! Every argument form of the attribute compiles on axum handlers (`limiter_axum`), with
//! axum's extractors after it, and the handlers route.
use axum::extract::{Json, Path, Query, State};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;
use limiter_axum::{concurrency_limit, rate_limit};

const PER_MINUTE: u32 = 60;
const BATCH: u32 = 10;

fn redirected_back(status: StatusCode) -> bool {
    status == StatusCode::SEE_OTHER
}

fn tenant(req: &Parts) -> Option<String> {
    req.headers
        .get("x-tenant")?
        .to_str()
        .ok()
        .map(str::to_owned)
}

fn internal(req: &Parts) -> bool {
    req.headers.contains_key("x-internal")
}

fn batch_size(req: &Parts) -> u32 {
    req.uri.query().map_or(1, |q| q.len() as u32)
}

fn plan(_: &Parts) -> Option<limiter_axum::Policy> {
    None
}

#[rate_limit(5, per = "1m")]
async fn defaults() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "15m", count = redirected_back)]
async fn counted_by_outcome() -> StatusCode {
    StatusCode::SEE_OTHER
}

#[rate_limit(PER_MINUTE * 2, per = "1h30m", key = "global", algorithm = "fixed_window")]
async fn const_max(State(name): State<&'static str>) -> String {
    name.to_string()
}

#[rate_limit(
    10,
    per = "500ms",
    key = "user",
    algorithm = "sliding_window_counter",
    scope = "axum_api"
)]
async fn user_key(body: axum::body::Bytes) -> Result<String, StatusCode> {
    Ok(format!("{} bytes", body.len()))
}

#[rate_limit(
    100,
    per = "1s",
    key = "header:X-Api-Key",
    algorithm = "token_bucket",
    burst = 20
)]
async fn header_key(Path(id): Path<u32>) -> String {
    id.to_string()
}

#[rate_limit(3, per = "1d", key = tenant)]
async fn function_key(Json((a, b)): Json<(u32, u32)>) -> String {
    format!("{a}{b}")
}

#[rate_limit(5, per = "1m")]
#[rate_limit(100, per = "1d", scope = "axum_daily")]
/// Docs stay.
pub async fn stacked(Query(q): Query<std::collections::HashMap<String, String>>) -> String {
    format!("{}", q.len())
}

#[rate_limit(100, per = "1m", cost = 10, count = "failures", dry_run = true)]
#[rate_limit(1000, per = "1h", cost = BATCH, count = "all", dry_run = false, enforce = "12.5%", scope = "axum_hourly")]
async fn literal_options() -> &'static str {
    "ok"
}

#[rate_limit(100, per = "1m", key = "user", cost = batch_size, exempt = internal, policy = plan)]
async fn function_options() -> &'static str {
    "ok"
}

#[rate_limit(5, per = "1m", block = "10m")]
async fn blocked() -> &'static str {
    "ok"
}

#[rate_limit(10, per = "1s", algorithm = "token_bucket", burst = 2, delay = "500ms")]
async fn delayed() -> &'static str {
    "ok"
}

#[rate_limit(1000, per = "month", key = "header:x-api-key", scope = "axum_monthly")]
async fn monthly() -> &'static str {
    "ok"
}

#[concurrency_limit(2, key = "ip")]
#[rate_limit(10, per = "1m")]
async fn upload(body: axum::body::Bytes) -> String {
    format!("{} bytes", body.len())
}

#[concurrency_limit(1, key = "header:x-api-key", scope = "axum_exports")]
async fn export() -> &'static str {
    "ok"
}

/// An API key's tenant, as a database would say (here: at once).
async fn tenant_of_key(req: &Parts) -> Option<String> {
    let key = req.headers.get("x-api-key")?.to_str().ok()?.to_string();
    tokio::task::yield_now().await;
    Some(format!("tenant-of-{key}"))
}

/// The plan of the tenant, looked up.
async fn plan_of_tenant(req: &Parts) -> Option<limiter_axum::Policy> {
    let _ = req.headers.get("x-api-key")?;
    "100 per 1m".parse().ok()
}

#[rate_limit(5, per = "1m", key = tenant_of_key, policy = plan_of_tenant)]
async fn by_tenant() -> &'static str {
    "ok"
}

#[concurrency_limit(2, key = tenant_of_key)]
async fn tenant_export() -> &'static str {
    "ok"
}

pub(crate) fn main() {
    let _: Router = Router::new()
        .route("/", get(defaults))
        .route("/o", get(counted_by_outcome))
        .route("/c", get(const_max))
        .route("/u", post(user_key))
        .route("/h/{id}", get(header_key))
        .route("/f", post(function_key))
        .route("/s", get(stacked))
        .route("/l", get(literal_options))
        .route("/p", get(function_options))
        .route("/b", get(blocked))
        .route("/d", get(delayed))
        .route("/m", get(monthly))
        .route("/up", post(upload))
        .route("/x", get(export))
        .route("/t", get(by_tenant))
        .route("/te", get(tenant_export))
        .with_state("axum");
}
