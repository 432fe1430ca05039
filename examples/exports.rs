//! A slow endpoint kept from one client's parallel requests: at most 2 exports of one
//! address running at once (a concurrency limit), and 10 an hour (a rate).
//!
//! ```sh
//! cargo run --example exports          # http://127.0.0.1:8080 (PORT=9000 to change)
//! for i in 1 2 3 4; do curl -s -o /dev/null -w "%{http_code}\n" http://127.0.0.1:8080/export & done; wait
//! ```
//!
//! Two of the four run (each takes two seconds) and print 200; the other two get `429` at
//! once, with `Retry-After: 1` and `RateLimit-Policy: "export-in-flight";q=2;qu="concurrent-requests"`.
//! A slot is given back when the response has been sent — or the client hung up.

use std::time::Duration;

use actix_web::{get, App, HttpResponse, HttpServer};
use limiter::{concurrency_limit, rate_limit, Limiter};

#[get("/export")]
#[concurrency_limit(2, key = "ip", scope = "export-in-flight")]
#[rate_limit(10, per = "1h", key = "ip")]
async fn export() -> HttpResponse {
    // The slow part: a report being built.
    tokio::time::sleep(Duration::from_secs(2)).await;
    HttpResponse::Ok().body("id,total\n1,42\n")
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt().with_target(false).init();
    let port: u16 = std::env::var("PORT")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(8080);
    let limiter = Limiter::builder().build();
    // "export-in-flight  2 in flight  ip ..." and the hourly rate.
    print!("{}", limiter.routes());
    println!("listening on http://127.0.0.1:{port}");
    HttpServer::new(move || App::new().app_data(limiter.clone()).service(export))
        .bind(("127.0.0.1", port))?
        .run()
        .await
}
