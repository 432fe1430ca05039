//! One budget across several handlers: signing in and resetting a password both count
//! against "auth", 10 per 15 minutes per client, so a bot cannot double its attempts by
//! alternating between them.
//!
//! ```sh
//! cargo run --example shared_scope
//! curl -si -X POST http://127.0.0.1:8080/sign-in; curl -si -X POST http://127.0.0.1:8080/reset
//! ```

use actix_web::{post, App, HttpServer};
use limiter::{rate_limit, Limiter};

#[post("/sign-in")]
#[rate_limit(10, per = "15m", scope = "auth")]
async fn sign_in() -> &'static str {
    "signed in\n"
}

#[post("/reset")]
#[rate_limit(10, per = "15m", scope = "auth")]
async fn reset_password() -> &'static str {
    "reset link sent\n"
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
    print!("{}", limiter.routes()); // what is protected, by what
    println!("listening on http://127.0.0.1:{port}");
    HttpServer::new(move || {
        App::new()
            .app_data(limiter.clone())
            .service(sign_in)
            .service(reset_password)
    })
    .bind(("127.0.0.1", port))?
    .run()
    .await
}
