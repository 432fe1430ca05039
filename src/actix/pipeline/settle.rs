//! The last stage: what a response that does not count takes back (`count = "failures"`,
//! `count = fn`, `check_failures`, a preflight a CORS layer answered): the charges a
//! request was counted, kept past its decision, the receipts of their checks, and which
//! responses keep them counted.

use std::sync::Arc;

use actix_web::http::StatusCode;

use actix_web::HttpRequest;

use crate::actix::limits::HandlerLimits;
use crate::{Charge, Limit, Limiter, Receipt};
use limiter_http::ClientKey;

/// Which responses keep a request counted: `count = "failures"`, or `count = fn`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Counts {
    /// Responses with status 400 or above.
    Failures,
    /// Those the function says.
    When(fn(StatusCode) -> bool),
    /// Every response: only a CORS layer's own answer to a preflight gives it back
    /// ([`Refund::give_back_all`]).
    Always,
}

impl Counts {
    /// Whether a response of `status` keeps the request counted.
    fn keep(self, status: StatusCode) -> bool {
        match self {
            Counts::Failures => status.as_u16() >= 400,
            Counts::When(counts) => counts(status),
            Counts::Always => true,
        }
    }
}

/// What to take back once the response is known, check by check: the charges (which
/// outlive the decision), the receipt of what their check counted, and which responses
/// keep them counted.
///
/// Boxed: few requests have one, and every decision carries the place for it.
pub(crate) struct Refund(Box<Checks>);

struct Checks {
    checks: Vec<(Vec<Owned>, Receipt, Counts)>,
    /// The place of each check's decision in the response's fields, where it has one.
    fields: Vec<Option<usize>>,
}

/// A charge that outlives its request's decision: the limit, the key and the cost.
pub(crate) type Owned = (Arc<Limit>, ClientKey, u32);

impl Refund {
    /// The charges of each check, what the check counted, and which responses count.
    pub(crate) fn new(checks: Vec<(Vec<Owned>, Receipt, Counts)>) -> Refund {
        let fields = vec![None; checks.len()];
        Refund::in_fields(checks, fields)
    }

    /// [`new`](Self::new), each check's decision at its place in the response's fields.
    pub(crate) fn in_fields(
        checks: Vec<(Vec<Owned>, Receipt, Counts)>,
        fields: Vec<Option<usize>>,
    ) -> Refund {
        Refund(Box::new(Checks { checks, fields }))
    }

    /// What a response of `status` gives back, by the place of its decision in the fields:
    /// the units each field's `r` then has more.
    pub(crate) fn in_fields_given_back(
        &self,
        status: StatusCode,
    ) -> impl Iterator<Item = (usize, u32)> + '_ {
        self.0
            .checks
            .iter()
            .zip(&self.0.fields)
            .filter(move |((_, _, counts), _)| !counts.keep(status))
            .filter_map(|((charges, _, _), place)| {
                let units = charges.iter().map(|(_, _, cost)| *cost).sum();
                Some(((*place)?, units))
            })
    }

    /// Takes back the charges a response of `status` does not count, before the response
    /// leaves: the client's next request finds them back.
    pub(crate) async fn take_back(self, limiter: &Limiter, status: StatusCode) {
        self.give_back(limiter, |counts| !counts.keep(status)).await;
    }

    /// Takes back every charge, whatever its rule: the request ran no handler (a CORS
    /// layer answered its preflight).
    pub(crate) async fn give_back_all(self, limiter: &Limiter) {
        self.give_back(limiter, |_| true).await;
    }

    async fn give_back(self, limiter: &Limiter, owed: impl Fn(Counts) -> bool) {
        for (charges, receipt, counts) in &self.0.checks {
            if !owed(*counts) {
                continue;
            }
            let charges: Vec<Charge<'_>> = charges
                .iter()
                .map(|(limit, key, cost)| Charge::new(limit, key.as_bytes()).cost(*cost))
                .collect();
            let _ = limiter.refund(&charges, receipt).await;
        }
    }
}

/// Whether `req` is a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`)
/// that a [`RateLimit`](crate::RateLimit) middleware counts and gives back when the
/// answer is a CORS layer's own (it ran no handler): a browser sends one before the
/// request it asks about, which is counted. A preflight that reaches a handler runs it,
/// and is counted as any request; `.count_preflights(true)` counts them all.
#[inline]
pub(crate) fn gives_back_preflight(
    limiter: &Limiter,
    req: &HttpRequest,
    limits: &HandlerLimits,
) -> bool {
    limits.around_service && !limiter.http().count_preflights && is_preflight(req)
}

/// Whether `req` is a CORS preflight: `OPTIONS` with `Access-Control-Request-Method`.
pub(crate) fn is_preflight(req: &HttpRequest) -> bool {
    req.method() == actix_web::http::Method::OPTIONS
        && req
            .headers()
            .contains_key(actix_web::http::header::ACCESS_CONTROL_REQUEST_METHOD)
}

/// Whether `headers` are those of a CORS layer's answer to a preflight (`actix-cors` and its
/// peers answer with `Access-Control-Allow-Methods`), which ran no handler.
pub(crate) fn answered_by_cors(headers: &actix_web::http::header::HeaderMap) -> bool {
    headers.contains_key(actix_web::http::header::ACCESS_CONTROL_ALLOW_METHODS)
}
