//! Two limits on one handler, both enforced: a burst guard (5 per minute) and a daily cap
//! (100 per day). They are checked in the order written; a request the first one turns
//! away costs nothing from the second.
//!
//! ```sh
//! cargo run --example stacked
//! curl -si -X POST -d 'text=hi' http://127.0.0.1:8080/comments
//! ```
//!
//! Responses carry both limits: `RateLimit-Policy: "comment";q=5;w=60, "comment-1d";q=100;w=86400`.

use actix_web::{post, web, App, HttpResponse, HttpServer, Responder};
use limiter::{rate_limit, Limiter};
use serde::Deserialize;

#[derive(Deserialize)]
struct Comment {
    text: String,
}

#[post("/comments")]
#[rate_limit(5, per = "1m")]
#[rate_limit(100, per = "1d")]
async fn comment(form: web::Form<Comment>) -> impl Responder {
    HttpResponse::Created().body(format!("Saved a comment of {} bytes.\n", form.text.len()))
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
    HttpServer::new(move || App::new().app_data(limiter.clone()).service(comment))
        .bind(("127.0.0.1", port))?
        .run()
        .await
}
