//! The README's login form on axum (the `limiter-axum` crate): 5 attempts per minute per
//! client address, then a 429 with the same headers and body as the actix example's.
//!
//! ```sh
//! cargo run --example axum             # http://127.0.0.1:8080 (PORT=9000 to change)
//! for i in 1 2 3 4 5 6; do curl -si -X POST -d 'user=ann&password=x' http://127.0.0.1:8080/login | head -1; done
//! ```

use std::net::SocketAddr;

use axum::extract::State;
use axum::response::Html;
use axum::routing::{get, post};
use axum::{Extension, Form, Router};
use limiter_axum::{rate_limit, Limiter};
use serde::Deserialize;

#[derive(Deserialize)]
struct Login {
    user: String,
    #[allow(dead_code)] // a real handler would check it
    password: String,
}

/// The limit is decided before the form is read: a client over its limit gets a 429 and its
/// body is never parsed.
#[rate_limit(5, per = "1m", key = "ip")]
async fn login(Form(form): Form<Login>) -> String {
    format!("Checked the password of {}.\n", form.user)
}

async fn index(State(port): State<u16>) -> Html<String> {
    Html(format!(
        r#"<!doctype html>
<title>limiter: axum</title>
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

#[tokio::main]
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
    // Built once and handed to the router: one budget per client for the whole server.
    let limiter = Limiter::builder().build();
    print!("{}", limiter.routes()); // what is protected, by what
    let app = Router::new()
        .route("/", get(index))
        .route("/login", post(login))
        .with_state(port)
        .layer(Extension(limiter));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://127.0.0.1:{port}");
    // The peer's address (`ConnectInfo`) is what `key = "ip"` counts by.
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await
}
