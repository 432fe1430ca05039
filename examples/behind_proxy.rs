//! Behind a reverse proxy. The proxy's address is trusted, so the client is read from the
//! `X-Forwarded-For` it appends — the right-most address that is not a trusted proxy.
//! Anything a client writes into that header itself is ignored, and so is a `Forwarded`
//! header passed through from the client (it is reported once, never refused).
//!
//! Trust the address the proxy connects *from*, and nothing a client can connect from too.
//! Trusting `127.0.0.1` is a trap when clients share the machine (or reach the service's
//! port directly): any of them could then claim any address. Here the proxy connects from
//! a loopback address of its own, `127.0.0.2` (nginx: `proxy_bind 127.0.0.2;` with
//! `proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;`), and only that one is
//! trusted; on Linux every `127.0.0.0/8` address is loopback, no setup needed. curl plays
//! the proxy with `--interface 127.0.0.2`:
//!
//! ```sh
//! cargo run --example behind_proxy
//! # Client 203.0.113.9 as the proxy reports it: 3 pass, then 429.
//! for i in 1 2 3 4; do curl -s -o /dev/null -w '%{http_code}\n' --interface 127.0.0.2 -H 'X-Forwarded-For: 203.0.113.9' http://127.0.0.1:8080/; done
//! # The same client forging a left-most entry: still 203.0.113.9, still 429.
//! curl -s -o /dev/null -w '%{http_code}\n' --interface 127.0.0.2 -H 'X-Forwarded-For: 1.2.3.4, 203.0.113.9' http://127.0.0.1:8080/
//! # Another client: a budget of its own.
//! curl -s -o /dev/null -w '%{http_code}\n' --interface 127.0.0.2 -H 'X-Forwarded-For: 198.51.100.4' http://127.0.0.1:8080/
//! # A local process that skips the proxy and claims to be someone else is counted as
//! # itself (127.0.0.1, not trusted): its header is not believed.
//! for i in 1 2 3 4; do curl -s -o /dev/null -w '%{http_code}\n' -H "X-Forwarded-For: 10.9.9.$i" http://127.0.0.1:8080/; done
//! ```
//!
//! Without `.trusted_proxies(...)` nothing in those headers is believed: every request
//! above would count against the address it came from.

use actix_web::{get, App, HttpServer};
use limiter::{rate_limit, Limiter};

#[get("/")]
#[rate_limit(3, per = "1m")]
async fn index() -> &'static str {
    "hello\n"
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
    let limiter = Limiter::builder()
        // The addresses your proxies connect from, and nothing else. A typo here panics at
        // start-up, naming it.
        .trusted_proxies(["127.0.0.2"])
        .build();
    print!("{}", limiter.routes()); // what is protected, by what
    println!("listening on http://127.0.0.1:{port}");
    HttpServer::new(move || App::new().app_data(limiter.clone()).service(index))
        .bind(("127.0.0.1", port))?
        .run()
        .await
}
