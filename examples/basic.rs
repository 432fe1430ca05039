//! The README's main example: a login form limited to 5 attempts per minute per client
//! address.
//!
//! ```sh
//! cargo run --example basic            # http://127.0.0.1:8080 (PORT=9000 to change)
//! for i in 1 2 3 4 5 6; do curl -si -X POST -d 'user=ann&password=x' http://127.0.0.1:8080/login | head -1; done
//! ```

use actix_web::{get, post, web, App, HttpResponse, HttpServer, Responder};
use limiter::{rate_limit, Limiter};
use serde::Deserialize;

#[derive(Deserialize)]
struct Login {
    user: String,
    #[allow(dead_code)] // a real handler would check it
    password: String,
}

/// The limit is decided before the form is read: a client over its limit gets a 429 and its
/// body is never parsed.
#[post("/login")]
#[rate_limit(5, per = "1m", key = "ip")]
async fn login(form: web::Form<Login>) -> impl Responder {
    HttpResponse::Ok().body(format!("Checked the password of {}.\n", form.user))
}

#[get("/")]
async fn index(port: web::Data<u16>) -> impl Responder {
    let port = **port;
    HttpResponse::Ok().content_type("text/html").body(format!(
        r#"<!doctype html>
<title>limiter: basic</title>
<h1>Log in</h1>
<p>Five attempts per minute per address; the sixth gets <code>429 Too Many Requests</code>.</p>
<form method="post" action="/login">
  <input name="user" placeholder="user"> <input name="password" type="password" placeholder="password">
  <button>Log in</button>
</form>
<p>Or from a terminal:</p>
<pre>for i in 1 2 3 4 5 6; do curl -si -X POST -d 'user=ann&amp;password=x' http://127.0.0.1:{port}/login | head -1; done</pre>
"#
    ))
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    // The limiter reports a setup that cannot do what it means once, as a `warn` event:
    // print them.
    tracing_subscriber::fmt().with_target(false).init();
    let port: u16 = match std::env::var("PORT") {
        Ok(text) => text.parse().map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("PORT={text} is not a port number"),
            )
        })?,
        Err(_) => 8080,
    };
    // Built once, outside the factory closure, and cloned into every worker: one budget per
    // client for the whole server. Built inside, each worker would count on its own.
    let limiter = Limiter::builder().build();
    print!("{}", limiter.routes()); // what is protected, by what
    println!("listening on http://127.0.0.1:{port}");
    HttpServer::new(move || {
        App::new()
            .app_data(limiter.clone())
            .app_data(web::Data::new(port))
            .service(index)
            .service(login)
    })
    .bind(("127.0.0.1", port))?
    .run()
    .await
}
