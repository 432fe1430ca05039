//! Your own rejection: an HTML page instead of the problem+json body, and the legacy
//! `X-RateLimit-*` fields for clients that still read them. `Retry-After`,
//! `Cache-Control: no-store` and the RateLimit fields are still added.
//!
//! ```sh
//! cargo run --example custom_response
//! for i in 1 2 3 4; do curl -si http://127.0.0.1:8080/search?q=rust | head -1; done
//! ```

use actix_web::{get, web, App, HttpResponse, HttpServer, Responder};
use limiter::{rate_limit, Limiter};
use serde::Deserialize;

#[derive(Deserialize)]
struct Search {
    q: String,
}

#[get("/search")]
#[rate_limit(3, per = "10s", algorithm = "token_bucket")]
async fn search(query: web::Query<Search>) -> impl Responder {
    format!("results for {:?}\n", query.q)
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
    let limiter = Limiter::builder()
        .legacy_headers(true)
        .rejection_response(|rejection| {
            HttpResponse::TooManyRequests()
                .content_type("text/html")
                .body(format!(
                    "<h1>Slow down</h1><p>Search again in {} seconds.</p>",
                    rejection.retry_after_secs()
                ))
        })
        .build();
    print!("{}", limiter.routes()); // what is protected, by what
    println!("listening on http://127.0.0.1:{port}");
    HttpServer::new(move || App::new().app_data(limiter.clone()).service(search))
        .bind(("127.0.0.1", port))?
        .run()
        .await
}
