//! One limit over a whole API, as a middleware, and a stricter one on one of its handlers:
//! 100 requests per minute per address under `/api`, and 5 searches per minute on top.
//!
//! ```sh
//! cargo run --example middleware
//! curl -si http://127.0.0.1:8080/api/items     # RateLimit: "api";r=99;t=60
//! curl -si http://127.0.0.1:8080/api/search    # RateLimit: "api";r=98;t=60, "search";r=4;t=60
//! ```

use std::time::Duration;

use actix_web::{web, App, HttpServer};
use limiter::{rate_limit, KeySpec, Limiter, Policy, RateLimit};

async fn items() -> &'static str {
    "[]\n"
}

#[rate_limit(5, per = "1m", scope = "search")]
async fn search() -> &'static str {
    "no results\n"
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
    let limiter = Limiter::builder().build(); // once, outside the closure: shared by all workers
    let per_minute = Policy::new(100, Duration::from_secs(60))
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
    print!("{}", limiter.routes()); // what is protected, by what
    println!("listening on http://127.0.0.1:{port}");
    HttpServer::new(move || {
        let api = RateLimit::new(per_minute).key(KeySpec::Ip).scope("api");
        App::new().app_data(limiter.clone()).service(
            web::scope("/api")
                .wrap(api)
                .route("/items", web::get().to(items))
                .route("/search", web::get().to(search)),
        )
    })
    .bind(("127.0.0.1", port))?
    .run()
    .await
}
