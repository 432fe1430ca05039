//! Penalties: a login form limited to 5 attempts per minute per address, whose abuser is
//! then refused for 15 minutes — and for a day once it has been blocked 3 times in an hour.
//!
//! ```sh
//! cargo run --example penalties        # http://127.0.0.1:8080 (PORT=9000 to change)
//! for i in 1 2 3 4 5 6 7; do curl -si -X POST -d 'user=ann&password=x' http://127.0.0.1:8080/login | grep -E '^HTTP|^retry-after'; done
//! ```
//!
//! The sixth attempt starts the block: `Retry-After: 900`, and every attempt for the next 15
//! minutes gets the same 429 counted down, without being counted.

use actix_web::{post, web, App, HttpResponse, HttpServer, Responder};
use limiter::{rate_limit, Limiter};
use serde::Deserialize;

#[derive(Deserialize)]
struct Login {
    user: String,
    #[allow(dead_code)] // a real handler would check it
    password: String,
}

#[post("/login")]
#[rate_limit(5, per = "1m", block = "15m", penalty = "3 in 1h -> 1d")]
async fn login(form: web::Form<Login>) -> impl Responder {
    HttpResponse::Ok().body(format!("Checked the password of {}.\n", form.user))
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt().with_target(false).init();
    let port: u16 = std::env::var("PORT")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(8080);
    let limiter = Limiter::builder().build();
    // The policy column says what a rejection costs: "5 per 1m, sliding_window, block 15m,
    // 3 in 1h -> 1d".
    print!("{}", limiter.routes());
    println!("listening on http://127.0.0.1:{port}");
    HttpServer::new(move || App::new().app_data(limiter.clone()).service(login))
        .bind(("127.0.0.1", port))?
        .run()
        .await
}
