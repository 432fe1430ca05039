//! Behind a reverse proxy. The proxy's address is trusted, so the client is read from the
//! forwarding headers it appends — the right-most address that is not a trusted proxy.
//! Anything a client writes into those headers itself is ignored.
//!
//! Here the "proxy" is loopback (curl on this machine plays it), trusted with `127.0.0.1`:
//!
//! ```sh
//! cargo run --example behind_proxy
//! # Client 203.0.113.9 as the proxy reports it: 3 pass, then 429.
//! for i in 1 2 3 4; do curl -s -o /dev/null -w '%{http_code}\n' -H 'X-Forwarded-For: 203.0.113.9' http://127.0.0.1:8080/; done
//! # The same client forging a left-most entry: still 203.0.113.9, still 429.
//! curl -s -o /dev/null -w '%{http_code}\n' -H 'X-Forwarded-For: 1.2.3.4, 203.0.113.9' http://127.0.0.1:8080/
//! # Another client, in RFC 7239 syntax: a budget of its own.
//! curl -s -o /dev/null -w '%{http_code}\n' -H 'Forwarded: for="[2001:db8::7]"' http://127.0.0.1:8080/
//! ```
//!
//! Without `.trusted_proxies(...)` nothing in those headers is believed: every request
//! above would count against 127.0.0.1.

use actix_web::{get, App, HttpServer};
use limiter::{rate_limit, Limiter};

#[get("/")]
#[rate_limit(3, per = "1m")]
async fn index() -> &'static str {
    "hello\n"
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let port = std::env::var("PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(8080);
    let limiter = Limiter::builder()
        // Your proxies' addresses or networks. A typo here panics at start-up, naming it.
        .trusted_proxies(["127.0.0.1", "::1"])
        .build();
    print!("{}", limiter.routes()); // what is protected, by what
    println!("listening on http://127.0.0.1:{port}");
    HttpServer::new(move || App::new().app_data(limiter.clone()).service(index))
        .bind(("127.0.0.1", port))?
        .run()
        .await
}
