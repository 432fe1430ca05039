//! The actix front end as the shared code sees it ([`limiter_http::Front`]): its request and
//! response, where a request finds its limiter (the app data), and the values a service's
//! own closures are handed.

use std::sync::OnceLock;

use actix_web::{HttpRequest, HttpResponse};
use limiter_http::KeyError;

use super::keys::Head;
use super::problem::{Failure, Rejection};
use crate::Limiter;

/// The actix-web front end: what [`Limiter`](crate::Limiter) and
/// [`LimiterBuilder`](crate::LimiterBuilder) are made for in this crate
/// (`limiter_http::Limiter<Actix>`).
#[derive(Clone, Copy, Debug)]
pub struct Actix;

impl limiter_http::Front for Actix {
    type Request = HttpRequest;
    type Response = HttpResponse;
    type Rejection<'a> = Rejection<'a>;
    type Failure = Failure;

    const HAND_IT_OVER: &'static str = "add `.app_data(limiter.clone())` to the `App` (or \
         `.app_data(web::Data::new(limiter))`)";

    const BUILT_PER_WORKER: &'static str =
        "actix workers are each building a `Limiter` with an in-memory store of its own \
         (inside `HttpServer::new`'s closure): each worker counts alone, which multiplies \
         every limit by the number of workers. Build the `Limiter` once, outside the \
         closure, and clone it in: `let limiter = Limiter::builder().build(); \
         HttpServer::new(move || App::new().app_data(limiter.clone()))`";

    fn global() -> &'static Limiter {
        static GLOBAL: OnceLock<Limiter> = OnceLock::new();
        GLOBAL.get_or_init(Limiter::new_global)
    }

    #[inline]
    fn limiter_of(req: &HttpRequest) -> Option<&Limiter> {
        req.app_data::<Limiter>()
            .or_else(|| {
                req.app_data::<actix_web::web::Data<Limiter>>()
                    .map(|d| d.as_ref())
            })
            .or_else(|| req.app_data::<std::sync::Arc<Limiter>>().map(|a| &**a))
    }

    #[inline]
    fn head(req: &HttpRequest) -> impl limiter_http::RequestHead + '_ {
        Head(req)
    }

    fn is_worker_thread(name: &str) -> bool {
        // actix-server names its workers' threads, or runs them on actix-rt arbiters.
        name.starts_with("actix-server worker")
            || (name.starts_with("actix-rt|") && name.contains("arbiter"))
    }

    fn failure_of(error: &KeyError) -> Failure {
        match error {
            KeyError::NoClientAddress => Failure::NoClientAddress,
            KeyError::Contradiction(_) => Failure::ContradictoryForwarding,
        }
    }
}
