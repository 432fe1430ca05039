//! [`routes_service`]: the table of rate-limited routes, served by the application itself —
//! as JSON for tools, as a small HTML page for people (`limiter_http::routes_page`'s bytes,
//! the same on every front end).

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse, Resource};
use limiter_http::routes_page::{routes_page, wants_json};

use crate::Limiter;

/// A resource at `path` that serves the program's rate-limited routes with the policies the
/// request's [`Limiter`] applies (configured and changed-at-run-time ones included), and
/// who is being limited right now — each scope's most rejected clients of the last minutes
/// ([`Limiter::rejected_clients`]): a small HTML page with no external assets, or JSON for a
/// client that asks for it (`Accept: application/json`, or `?format=json`).
///
/// Mount it where only operators reach it (an admin scope behind your authentication):
/// it tells anyone who sees it what your limits are.
///
/// ```
/// use actix_web::App;
/// let app = App::new().service(limiter::routes_service("/limits"));
/// ```
pub fn routes_service(path: &str) -> Resource {
    web::resource(path).route(web::get().to(serve))
}

async fn serve(req: HttpRequest) -> HttpResponse {
    let accept = req.headers().get(header::ACCEPT).map(|v| v.as_bytes());
    let json = wants_json(Some(req.query_string()), accept);
    routes_page(Limiter::of(&req), json)
}
