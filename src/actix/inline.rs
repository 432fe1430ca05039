//! Limits decided inside a handler, once what the request says is known (the username in a
//! login form): [`check`], with the attribute's responses, fields and fault policy.

use std::cell::RefCell;
use std::fmt;

use actix_web::{HttpRequest, HttpResponse, ResponseError};

use crate::{Limit, Limiter};

/// A request a [`check`] turned away: return it with `?`, and actix answers with the
/// limiter's 429 (or its configured rejection response), or the 503 of a store that
/// failed closed. Under `#[rate_limit]` (or the `RateLimit` middleware) its response also
/// carries the RateLimit fields of every limit checked.
pub struct Rejected {
    response: RefCell<Option<HttpResponse>>,
    status: actix_web::http::StatusCode,
}

impl fmt::Debug for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rejected")
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rejected by the rate limiter ({})", self.status)
    }
}

impl ResponseError for Rejected {
    fn status_code(&self) -> actix_web::http::StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        self.response
            .borrow_mut()
            .take()
            .unwrap_or_else(|| HttpResponse::build(self.status).finish())
    }
}

impl Rejected {
    fn new(response: HttpResponse) -> Rejected {
        Rejected {
            status: response.status(),
            response: RefCell::new(Some(response)),
        }
    }
}

/// Counts `req` against `limit` for `key` — a value the handler read from the request, such
/// as the username of a login form — with the limiter the request is counted by, its store
/// and its fault policy. `Err` is the response to answer with (`?` does).
///
/// The key lives in a namespace of its own (`"ann"` here never shares the budget of a user
/// id `"ann"` or of an address); configuration can override the limit's policy by its
/// scope, as for the attribute's.
///
/// ```no_run
/// use std::collections::HashMap;
/// use std::time::Duration;
/// use actix_web::{web, HttpRequest, HttpResponse};
/// use limiter::{Limit, Policy, Rejected};
///
/// const PER_USERNAME: Policy = match Policy::new(5, Duration::from_secs(900)) {
///     Ok(policy) => policy,
///     Err(error) => panic!("{}", error.message()),
/// };
/// static LOGINS_PER_USERNAME: Limit = Limit::constant("login-username", PER_USERNAME);
///
/// // With `limiter`, under `#[post("/login")] #[rate_limit(30, per = "1m")]`: per address
/// // before the body is read, then per username.
/// async fn login(
///     req: HttpRequest,
///     form: web::Form<HashMap<String, String>>,
/// ) -> Result<HttpResponse, Rejected> {
///     let user = form.get("user").map_or("", String::as_str);
///     limiter::check(&req, &LOGINS_PER_USERNAME, user).await?;
///     Ok(HttpResponse::Ok().finish())
/// }
/// ```
pub async fn check(req: &HttpRequest, limit: &Limit, key: &str) -> Result<(), Rejected> {
    check_inline(req, limit, key, false).await
}

/// [`check`], counting only failures (`count = "failures"`): the request is counted now,
/// and taken back if its response turns out a success (status below 400), before that
/// response leaves. For the username of a login form: five **failed** logins per username,
/// while a person who types the right password is never held back.
///
/// The taking back is done by `#[rate_limit]` (or the `RateLimit` middleware) around the
/// handler, which sees its response: without either, this counts every request, as
/// [`check`] does.
pub async fn check_failures(req: &HttpRequest, limit: &Limit, key: &str) -> Result<(), Rejected> {
    check_inline(req, limit, key, true).await
}

async fn check_inline(
    req: &HttpRequest,
    limit: &Limit,
    key: &str,
    failures_only: bool,
) -> Result<(), Rejected> {
    let limiter = Limiter::of(req);
    limiter_http::pipeline::run_inline(limiter, req, limit, key, failures_only)
        .await
        .map_err(Rejected::new)
}
