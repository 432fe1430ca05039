//! A flood's 429s are alike: a client pushing against its limit gets, for a second at a time,
//! the same `Retry-After`, the same RateLimit fields and the same body. The 429 a worker
//! built last is kept, and the next one that would be written the same is copied from it —
//! one copy of its header map instead of five header fields made, formatted and hashed
//! into one. Only the default response of one limit's refusal is kept (a configured
//! rejection response is the application's to build); a rejection unlike the last one
//! costs a comparison, and is kept once it comes twice in a row.
//!
//! What the response is written from is compared by value — the limiter's settings by the
//! allocation the kept response holds on to, the handler's policy field, its field prefix
//! and the refusing limit's name by their bytes — so that nothing freed and made anew at
//! the same address is taken for what it replaced.

use std::cell::RefCell;
use std::sync::Arc;

use actix_web::body::BoxBody;
use actix_web::http::header::{HeaderMap, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::HttpResponse;

use super::fields::RateLimitFields;
use super::HandlerLimits;
use crate::{Decision, Limiter};
use limiter_http::plumbing::Http;

/// The numbers a default 429 of one limit is written from: `Retry-After`, then its
/// fields' remaining, reset and quota.
type Numbers = [u64; 4];

/// The last default 429 of this worker, or the numbers and settings of the last one seen
/// (kept once it comes again).
enum Last {
    Seen {
        settings: *const Http<super::front::Actix>,
        limits: *const HandlerLimits,
        numbers: Numbers,
    },
    Kept(Box<Kept>),
}

struct Kept {
    settings: Arc<Http<super::front::Actix>>,
    policy: HeaderValue,
    prefix: Box<str>,
    name: Box<str>,
    numbers: Numbers,
    headers: HeaderMap,
    body: Bytes,
}

thread_local! {
    static LAST: RefCell<Option<Last>> = const { RefCell::new(None) };
}

/// A request's default 429, as far as it is alike from one to the next.
pub(super) struct Alike<'a> {
    limiter: &'a Limiter,
    limits: &'a HandlerLimits,
    name: &'a str,
    numbers: Numbers,
}

impl<'a> Alike<'a> {
    /// The default 429 of `decision` naming `name` with `fields`, when one like it may be
    /// copied: one limit's decision, no configured rejection response.
    pub(super) fn of(
        limiter: &'a Limiter,
        limits: &'a HandlerLimits,
        fields: &RateLimitFields,
        name: &'a str,
        decision: &Decision,
    ) -> Option<Alike<'a>> {
        if limiter.http().rejection_response.is_some() || limits.prefixes.len() != 1 {
            return None;
        }
        let written = fields.only_decision()?;
        Some(Alike {
            limiter,
            limits,
            name,
            numbers: [
                decision.retry_after_secs().unwrap_or(1),
                u64::from(written.remaining()),
                written.reset_after_secs(),
                u64::from(written.limit()),
            ],
        })
    }

    /// A copy of the last 429, if it was written from the same.
    pub(super) fn copy(&self) -> Option<HttpResponse> {
        LAST.with(|last| match &*last.borrow() {
            Some(Last::Kept(kept)) if self.is(kept) => {
                let mut response =
                    HttpResponse::with_body(StatusCode::TOO_MANY_REQUESTS, kept.body.clone())
                        .map_into_boxed_body();
                *response.headers_mut() = kept.headers.clone();
                Some(response)
            }
            _ => None,
        })
    }

    fn is(&self, kept: &Kept) -> bool {
        self.numbers == kept.numbers
            && Arc::ptr_eq(self.limiter.shared(), &kept.settings)
            && self.limits.policy == kept.policy
            && *self.limits.prefixes[0] == *kept.prefix
            && self.name == &*kept.name
    }

    /// Notes the 429 `response` made from this, `body` being what it carries: kept when
    /// the last one seen was alike too.
    pub(super) fn note(self, response: &HttpResponse<BoxBody>, body: &Bytes) {
        let settings = Arc::as_ptr(self.limiter.shared());
        let limits = std::ptr::from_ref(self.limits);
        LAST.with(|last| {
            let mut last = last.borrow_mut();
            let again = matches!(&*last, Some(Last::Seen { settings: s, limits: l, numbers: n })
                if *s == settings && *l == limits && *n == self.numbers);
            *last = Some(match again {
                true => Last::Kept(Box::new(Kept {
                    settings: Arc::clone(self.limiter.shared()),
                    policy: self.limits.policy.clone(),
                    prefix: self.limits.prefixes[0].clone(),
                    name: self.name.into(),
                    numbers: self.numbers,
                    headers: response.headers().clone(),
                    body: body.clone(),
                })),
                false => Last::Seen {
                    settings,
                    limits,
                    numbers: self.numbers,
                },
            });
        });
    }
}
