//! Per user where there is one, per address where there is none. The user comes from a
//! header here (`X-User`, as an authenticating proxy would set it); in your service it is
//! whatever your session or token says. Anonymous requests fall back to their address, in a
//! namespace of their own: a user named "127.0.0.1" never shares that address's budget.
//!
//! ```sh
//! cargo run --example per_user
//! curl -si -H 'X-User: alice' http://127.0.0.1:8080/feed   # alice: 30 per minute
//! curl -si http://127.0.0.1:8080/feed                      # anonymous: 30 per minute per address
//! ```

use actix_web::{get, App, HttpRequest, HttpServer};
use limiter::{rate_limit, Limiter};

#[get("/feed")]
#[rate_limit(30, per = "1m", key = "user")]
async fn feed() -> &'static str {
    "your feed\n"
}

/// Who is signed in. Replace with your session lookup (actix-session, a JWT, ...).
fn signed_in_user(req: &HttpRequest) -> Option<String> {
    let user = req.headers().get("x-user")?.to_str().ok()?;
    (!user.is_empty()).then(|| user.to_owned())
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
    let limiter = Limiter::builder().user_key(signed_in_user).build();
    print!("{}", limiter.routes()); // what is protected, by what
    println!("listening on http://127.0.0.1:{port}");
    HttpServer::new(move || App::new().app_data(limiter.clone()).service(feed))
        .bind(("127.0.0.1", port))?
        .run()
        .await
}
