//! The login form, with metrics: Prometheus text on `GET /metrics`, and the table of
//! protected routes on `GET /limits` (mount such pages where only operators reach them).
//!
//! ```sh
//! cargo run --example metrics --features metrics
//! for i in 1 2 3 4 5 6; do curl -s -o /dev/null -w '%{http_code} ' -d 'user=ann&password=guess' http://127.0.0.1:8080/login; done
//! curl -s http://127.0.0.1:8080/metrics | grep limiter_
//! # limiter_decisions_total{scope="login",outcome="allowed"} 5
//! # limiter_decisions_total{scope="login",outcome="rejected"} 1
//! curl -s http://127.0.0.1:8080/limits       # the route table, as a page
//! ```

use actix_web::{post, web, App, HttpResponse, HttpServer};
use limiter::{rate_limit, Limiter};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};

#[derive(serde::Deserialize)]
struct Login {
    user: String,
    password: String,
}

#[post("/login")]
#[rate_limit(5, per = "15m", count = "failures", scope = "login")]
async fn login(form: web::Form<Login>) -> HttpResponse {
    if form.user == "bob" && form.password == "hunter2" {
        HttpResponse::Ok().body("welcome\n")
    } else {
        HttpResponse::Unauthorized().body("wrong username or password\n")
    }
}

async fn metrics(handle: web::Data<PrometheusHandle>) -> String {
    handle.render()
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
    // Before serving: handlers take their counters from the recorder at their first request.
    let handle = PrometheusBuilder::new()
        .install_recorder()
        .expect("the only metrics recorder");
    let limiter = Limiter::builder().build();
    print!("{}", limiter.routes()); // what is protected, by what
    println!("listening on http://127.0.0.1:{port}");
    HttpServer::new(move || {
        App::new()
            .app_data(limiter.clone())
            .app_data(web::Data::new(handle.clone()))
            .service(login)
            .route("/metrics", web::get().to(metrics))
            .service(limiter::routes_service("/limits"))
    })
    .bind(("127.0.0.1", port))?
    .run()
    .await
}
