//! An API limited per key: each `X-Api-Key` gets 100 requests per minute with bursts of 20
//! (a token bucket) and a quota of 10,000 a calendar month (reset on the first, at midnight
//! UTC); requests without a key are limited per address. Long keys are hashed,
//! so a client cannot make the limiter store arbitrary data.
//!
//! The key is whatever the client sends, checked by nobody before the limiter reads it: a
//! client that invents a new key per request gets a fresh budget each time. The second
//! limit, per address, is what stops that (and key guessing): 300 per minute whatever the
//! keys, generous for an honest client with many keys, a wall for one that rotates them.
//!
//! ```sh
//! cargo run --example api_key
//! curl -si -H 'X-Api-Key: k-123' http://127.0.0.1:8080/v1/items
//! # rotating keys: each is fresh, but the address runs out after 300
//! for i in $(seq 1 305); do curl -s -o /dev/null -w "%{http_code} " -H "X-Api-Key: k-$i" http://127.0.0.1:8080/v1/items; done
//! ```

use actix_web::{get, App, HttpServer};
use limiter::{rate_limit, Limiter};

#[get("/v1/items")]
#[rate_limit(
    100,
    per = "1m",
    key = "header:x-api-key",
    algorithm = "token_bucket",
    burst = 20
)]
#[rate_limit(10_000, per = "month", key = "header:x-api-key")] // the plan's monthly quota
#[rate_limit(300, per = "1m", key = "ip")]
async fn items() -> &'static str {
    "[]\n"
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
    HttpServer::new(move || App::new().app_data(limiter.clone()).service(items))
        .bind(("127.0.0.1", port))?
        .run()
        .await
}
