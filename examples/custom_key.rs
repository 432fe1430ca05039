//! A key your application computes: here the tenant of a multi-tenant API, from the
//! `X-Tenant` header, so each tenant shares one budget across its users. A function that
//! returns `None` sends the request back to per-address counting.
//!
//! ```sh
//! cargo run --example custom_key
//! curl -si -H 'X-Tenant: acme' http://127.0.0.1:8080/reports
//! ```

use actix_web::{get, App, HttpRequest, HttpServer};
use limiter::{rate_limit, Limiter};

/// The tenant, when the request names one.
fn tenant(req: &HttpRequest) -> Option<String> {
    let tenant = req.headers().get("x-tenant")?.to_str().ok()?;
    (!tenant.is_empty()).then(|| tenant.to_ascii_lowercase())
}

#[get("/reports")]
#[rate_limit(10, per = "1h", key = tenant)]
async fn reports() -> &'static str {
    "a heavy report\n"
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
    let limiter = Limiter::builder().build();
    print!("{}", limiter.routes()); // what is protected, by what
    println!("listening on http://127.0.0.1:{port}");
    HttpServer::new(move || App::new().app_data(limiter.clone()).service(reports))
        .bind(("127.0.0.1", port))?
        .run()
        .await
}
