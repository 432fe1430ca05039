//! One instance of a service whose instances share their budgets through Redis. Start two
//! on different ports against the same Redis, and the limit holds across both:
//!
//! ```sh
//! redis-server --port 6390 --save '' --appendonly no &
//! REDIS_URL=redis://127.0.0.1:6390 PORT=8081 cargo run --features redis --example redis &
//! REDIS_URL=redis://127.0.0.1:6390 PORT=8082 cargo run --features redis --example redis &
//! for port in 8081 8082 8081 8082 8081 8082; do
//!   curl -s -o /dev/null -w "$port %{http_code}\n" -X POST http://127.0.0.1:$port/login
//! done   # 5 × 200 in total, then 429, whichever instance answers
//! ```
//!
//! If Redis goes away, each instance keeps limiting on its own (the default store error
//! policy) and logs the transition once; when Redis is back, shared counting resumes.
//!
//! The limit names its scope: budgets in Redis are named after it, so they survive a
//! rolling deploy that renames or moves the handler (an unnamed limit's scope is the
//! handler's path, and would start afresh).

use actix_web::{post, App, HttpServer};
use limiter::{rate_limit, Limiter, RedisStore};

#[post("/login")]
#[rate_limit(5, per = "1m", scope = "login")]
async fn login() -> &'static str {
    "checked\n"
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
    let url = std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into());
    // Lazily: the instance starts even while Redis is down, and limits in memory meanwhile.
    let store = RedisStore::connect_lazily(&url)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
    let limiter = Limiter::builder().store(store).build();
    print!("{}", limiter.routes()); // what is protected, by what
    println!("listening on http://127.0.0.1:{port}, counting in {url}");
    HttpServer::new(move || App::new().app_data(limiter.clone()).service(login))
        .bind(("127.0.0.1", port))?
        .run()
        .await
}
