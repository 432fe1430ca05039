//! A login that holds back guessing, never people: per address, at most 30 attempts a
//! minute (decided before the form is read); per username, at most 5 **failed** attempts a
//! quarter hour, wherever they come from. A successful login gives its attempts back, so a
//! person who types the right password is never held back; fifty wrong passwords sent at
//! once still get exactly five tries, since an attempt is counted when it is admitted and
//! given back only once its success is known.
//!
//! ```sh
//! cargo run --example login_failures
//! curl -si -d 'user=ann&password=guess' http://127.0.0.1:8080/login   # 401, five times
//! curl -si -d 'user=ann&password=guess' http://127.0.0.1:8080/login   # 429 for "ann"
//! curl -si -d 'user=bob&password=hunter2' http://127.0.0.1:8080/login # 200, never counted
//! ```

use std::time::Duration;

use actix_web::{post, web, App, HttpRequest, HttpResponse, HttpServer};
use limiter::{rate_limit, Limit, Limiter, Policy, Rejected};

/// Five failed attempts per username per quarter hour.
const FAILED_PER_USERNAME: Policy = match Policy::new(5, Duration::from_secs(15 * 60)) {
    Ok(policy) => policy,
    Err(error) => panic!("{}", error.message()),
};
static LOGIN_PER_USERNAME: Limit = Limit::constant("login-username", FAILED_PER_USERNAME);

#[derive(serde::Deserialize)]
struct Login {
    user: String,
    password: String,
}

#[post("/login")]
#[rate_limit(30, per = "1m", scope = "login-address")] // per address, before the body is read
#[rate_limit(5, per = "15m", count = "failures", scope = "login-failures")] // failures per address
async fn login(req: HttpRequest, form: web::Form<Login>) -> Result<HttpResponse, Rejected> {
    // Then failures per username, now that it is known; a success is taken back when its
    // response leaves. `?` answers with the limiter's 429.
    limiter::check_failures(&req, &LOGIN_PER_USERNAME, &form.user).await?;
    if password_is_right(&form.user, &form.password) {
        Ok(HttpResponse::Ok().body(format!("welcome, {}\n", form.user)))
    } else {
        Ok(HttpResponse::Unauthorized().body("wrong username or password\n"))
    }
}

/// Stands in for your password check.
fn password_is_right(user: &str, password: &str) -> bool {
    user == "bob" && password == "hunter2"
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
    HttpServer::new(move || App::new().app_data(limiter.clone()).service(login))
        .bind(("127.0.0.1", port))?
        .run()
        .await
}
