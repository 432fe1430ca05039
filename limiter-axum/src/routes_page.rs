//! [`routes_page`]: the table of rate-limited routes, served by the application itself —
//! as JSON for tools, as a small HTML page for people (`limiter_http::routes_page`'s bytes,
//! the same on every front end).

use axum::extract::Request;
use axum::http::header;
use axum::response::Response;

use crate::Limiter;

/// A handler that serves the program's rate-limited routes with the policies the request's
/// [`Limiter`] applies (configured and changed-at-run-time ones included), and who is being
/// limited right now — each scope's most rejected clients of the last minutes
/// ([`Limiter::rejected_clients`]): a small HTML page with no external assets, or JSON for a
/// client that asks for it (`Accept: application/json`, or `?format=json`). The same bytes
/// as the actix front end's `routes_service`.
///
/// Mount it where only operators reach it (behind your authentication): it tells anyone
/// who sees it what your limits are.
///
/// ```
/// use axum::{routing::get, Router};
/// let app: Router = Router::new().route("/limits", get(limiter_axum::routes_page));
/// ```
pub async fn routes_page(req: Request) -> Response {
    let (parts, _) = req.into_parts();
    let accept = parts.headers.get(header::ACCEPT).map(|v| v.as_bytes());
    let json = limiter_http::routes_page::wants_json(parts.uri.query(), accept);
    limiter_http::routes_page::routes_page(Limiter::of(&parts), json)
}
