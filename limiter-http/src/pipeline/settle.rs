//! The last stage: what a response that does not count takes back (`count = "failures"`,
//! `count = fn`, `check_failures`, a preflight a CORS layer answered): the charges a
//! request was counted, kept past its decision, the receipts of their checks, and which
//! responses keep them counted.

use std::sync::Arc;

use limiter_core::{Charge, Limit, Receipt};

use super::{take_inline_checks, Decided, Respond};
use crate::counts::Counts;
use crate::limits::HandlerLimits;
use crate::{ClientKey, FieldMap, Front, Limiter, Write};

/// A header value of front end `F`.
type Value<F> = <<F as Front>::Map as FieldMap>::Value;

/// What settling a response needs of its request, taken while the request is at hand.
#[derive(Clone, Copy)]
pub struct Asked<'r, F: Front> {
    /// The request, where it is still at hand: the decisions of limits checked inside its
    /// handler wait in it. `None` where the framework handed it on for good (a tower
    /// layer's inner service, an axum handler's extractors), which no such check uses.
    pub req: Option<&'r F::Request>,
    /// Whether it is a preflight a middleware gives back when a CORS layer answered it
    /// ([`gives_back_preflight`]).
    pub preflight: bool,
}

impl<'r, F: Front> Asked<'r, F> {
    /// `req`, at hand, under `limits`.
    #[inline]
    pub fn at_hand(limiter: &Limiter<F>, req: &'r F::Request, limits: &HandlerLimits<F>) -> Self {
        Asked {
            req: Some(req),
            preflight: gives_back_preflight(limiter, req, limits),
        }
    }
}

/// Writes the fields of an admitted request onto its response of `status` (`headers`):
/// its limits' and those of limits checked inside its handler, with what the response
/// gives back shown in them (`r` is what the client has once it is back). Returns what is
/// left to take back, before the response leaves (the client's next request must find
/// it). A middleware's fields go before the handler's own (`Write::Prepend`); a preflight
/// a CORS layer answered under a middleware gives back all it was counted: it ran no
/// handler. Every front end's attribute and middleware end with it.
pub fn answered<F: Respond, M: FieldMap<Value = Value<F>>>(
    limiter: &Limiter<F>,
    limits: &HandlerLimits<F>,
    asked: Asked<'_, F>,
    decided: Decided<F>,
    (status, headers): (F::Status, &mut M),
    write: Write,
) -> Settle<F> {
    let Decided { mut fields, refund } = decided;
    if let Some(refund) = &refund {
        for (place, units) in refund.in_fields_given_back(status) {
            fields.give_back(place, units);
        }
    }
    let inline = match asked.req {
        Some(req) => take_inline_checks(&mut fields, req, || limits.members()),
        None => Vec::new(),
    };
    fields.apply(headers, limits.declared(), limiter.http().headers, write);
    let all = refund.is_some() && asked.preflight && answered_by_cors(headers);
    Settle {
        refund,
        inline,
        all,
        status,
    }
}

/// What a response takes back once its fields are written ([`answered`]).
#[must_use = "what a response does not count is taken back by `take_back`"]
pub struct Settle<F: Front> {
    refund: Option<Refund<F>>,
    inline: Vec<Refund<F>>,
    /// Everything goes back: a CORS layer answered the preflight.
    all: bool,
    status: F::Status,
}

impl<F: Front> Settle<F> {
    /// Whether nothing is to be taken back: what almost every response is.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.refund.is_none() && self.inline.is_empty()
    }

    /// Takes back what the response does not count. Each refund is boxed where it is
    /// awaited: the futures that await this one stay small.
    pub async fn take_back(self, limiter: &Limiter<F>) {
        if let Some(refund) = self.refund {
            match self.all {
                true => Box::pin(refund.give_back_all(limiter)).await,
                false => Box::pin(refund.take_back(limiter, self.status)).await,
            }
        }
        for refund in self.inline {
            Box::pin(refund.take_back(limiter, self.status)).await;
        }
    }
}

/// What to take back once the response is known, check by check: the charges (which
/// outlive the decision), the receipt of what their check counted, and which responses
/// keep them counted.
///
/// Boxed: few requests have one, and every decision carries the place for it.
pub struct Refund<F: Front>(Box<Checks<F>>);

struct Checks<F: Front> {
    checks: Vec<(Vec<Owned>, Receipt, Counts<F>)>,
    /// The place of each check's decision in the response's fields, where it has one.
    fields: Vec<Option<usize>>,
}

/// A charge that outlives its request's decision: the limit, the key and the cost.
pub type Owned = (Arc<Limit>, ClientKey, u32);

impl<F: Front> Refund<F> {
    /// The charges of each check, what the check counted, and which responses count.
    pub(crate) fn new(checks: Vec<(Vec<Owned>, Receipt, Counts<F>)>) -> Refund<F> {
        let fields = vec![None; checks.len()];
        Refund::in_fields(checks, fields)
    }

    /// [`new`](Self::new), each check's decision at its place in the response's fields.
    pub(crate) fn in_fields(
        checks: Vec<(Vec<Owned>, Receipt, Counts<F>)>,
        fields: Vec<Option<usize>>,
    ) -> Refund<F> {
        Refund(Box::new(Checks { checks, fields }))
    }

    /// What a response of `status` gives back, by the place of its decision in the fields:
    /// the units each field's `r` then has more.
    pub fn in_fields_given_back(
        &self,
        status: F::Status,
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
    pub async fn take_back(self, limiter: &Limiter<F>, status: F::Status) {
        self.give_back(limiter, |counts| !counts.keep(status)).await;
    }

    /// Takes back every charge, whatever its rule: the request ran no handler (a CORS
    /// layer answered its preflight).
    pub async fn give_back_all(self, limiter: &Limiter<F>) {
        self.give_back(limiter, |_| true).await;
    }

    async fn give_back(self, limiter: &Limiter<F>, owed: impl Fn(Counts<F>) -> bool) {
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
/// that a middleware (actix's `RateLimit`, the tower layer) counts and gives back when the
/// answer is a CORS layer's own (it ran no handler): a browser sends one before the
/// request it asks about, which is counted. A preflight that reaches a handler runs it,
/// and is counted as any request; `.count_preflights(true)` counts them all.
#[inline]
pub fn gives_back_preflight<F: Front>(
    limiter: &Limiter<F>,
    req: &F::Request,
    limits: &HandlerLimits<F>,
) -> bool {
    limits.around_service && !limiter.http().count_preflights && F::is_preflight(req)
}

/// Whether `headers` are those of a CORS layer's answer to a preflight (`actix-cors`,
/// `tower-http`'s `CorsLayer` and their peers answer with `Access-Control-Allow-Methods`),
/// which ran no handler.
pub fn answered_by_cors(headers: &impl FieldMap) -> bool {
    headers.contains(crate::Field::AccessControlAllowMethods)
}
