//! Plans: the attribute's limit is the free plan; a function picks the policy of each
//! request's plan, and configuration can change any of them without recompiling. Each
//! plan's budget is its own: a user upgraded mid-window starts the new plan's budget.
//!
//! ```sh
//! cargo run --example tiers
//! curl -si -H 'X-User: ann' http://127.0.0.1:8080/reports                   # free: 10 an hour
//! curl -si -H 'X-User: ann' -H 'X-Plan: pro' http://127.0.0.1:8080/reports  # pro: 1000 an hour
//! REPORTS_PER_HOUR=20 cargo run --example tiers                             # free plan from configuration
//! curl -s http://127.0.0.1:8080/limits                                      # the limits in force, as a page
//! ```

use std::time::Duration;

use actix_web::{get, App, HttpRequest, HttpServer};
use limiter::{rate_limit, Limiter, Policy};

#[get("/reports")]
#[rate_limit(10, per = "1h", key = "user", policy = plan, scope = "reports")]
async fn reports() -> &'static str {
    "your reports\n"
}

/// The policy of the request's plan; `None` keeps the attribute's (the free plan). Read the
/// plan from your session or token; a header stands in for it here.
fn plan(req: &HttpRequest) -> Option<Policy> {
    let hour = Duration::from_secs(3600);
    match req.headers().get("x-plan")?.as_bytes() {
        b"pro" => Policy::new(1000, hour).ok(),
        b"team" => Policy::new(10_000, hour).ok(),
        _ => None,
    }
}

/// Who is signed in.
fn signed_in_user(req: &HttpRequest) -> Option<String> {
    req.headers()
        .get("x-user")?
        .to_str()
        .ok()
        .map(str::to_owned)
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    // The limiter reports a setup that cannot do what it means once, as a `warn` event:
    // print them.
    tracing_subscriber::fmt().with_target(false).init();
    let port = std::env::var("PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(8080);
    let mut builder = Limiter::builder().user_key(signed_in_user);
    // The free plan from configuration, when it says so.
    if let Some(max) = std::env::var("REPORTS_PER_HOUR")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        let policy = Policy::new(max, Duration::from_secs(3600)).expect("a valid policy");
        builder = builder.policy("reports", policy);
    }
    let limiter = builder.build();
    print!("{}", limiter.routes()); // what is protected, by what
    println!("listening on http://127.0.0.1:{port}");
    HttpServer::new(move || {
        App::new()
            .app_data(limiter.clone())
            .service(reports)
            // The route table with the policies in force: mount it where only operators reach.
            .service(limiter::routes_service("/limits"))
    })
    .bind(("127.0.0.1", port))?
    .run()
    .await
}
