//! The RateLimit header fields on actix's responses: what `limiter_http` writes (the same
//! bytes for every front end), onto actix's header map, under actix's header names; and
//! the decisions of limits checked inside a handler, which wait in its request.

use std::borrow::{BorrowMut, Cow};
use std::sync::atomic::{AtomicBool, Ordering};

use actix_web::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use limiter_http::{Field, FieldMap};

use super::pipeline::settle::Refund;
use crate::Decision;
pub(crate) use limiter_http::{
    field_name, member_prefix, policy_member, Declared, HeaderOptions, Member, RateLimitFields,
    Write,
};

/// `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers-10).
static RATELIMIT_POLICY: HeaderName = HeaderName::from_static(Field::RateLimitPolicy.name());
/// `RateLimit` (draft-ietf-httpapi-ratelimit-headers-10).
static RATELIMIT: HeaderName = HeaderName::from_static(Field::RateLimit.name());
/// The limits that would have rejected a request that was let through.
static X_RATELIMIT_DRY_RUN: HeaderName = HeaderName::from_static(Field::DryRun.name());
static X_LIMIT: HeaderName = HeaderName::from_static(Field::Limit.name());
static X_REMAINING: HeaderName = HeaderName::from_static(Field::Remaining.name());
static X_RESET: HeaderName = HeaderName::from_static(Field::Reset.name());

static RETRY_AFTER: HeaderName = header::RETRY_AFTER;
static CACHE_CONTROL: HeaderName = header::CACHE_CONTROL;
static CONTENT_TYPE: HeaderName = header::CONTENT_TYPE;
static ALLOW_METHODS: HeaderName = header::ACCESS_CONTROL_ALLOW_METHODS;

/// `field`'s name in actix's header map. Always inlined: each call names its field, so the
/// match folds into the one name.
#[inline(always)]
fn name(field: Field) -> &'static HeaderName {
    match field {
        Field::RateLimitPolicy => &RATELIMIT_POLICY,
        Field::RateLimit => &RATELIMIT,
        Field::DryRun => &X_RATELIMIT_DRY_RUN,
        Field::Limit => &X_LIMIT,
        Field::Remaining => &X_REMAINING,
        Field::Reset => &X_RESET,
        Field::RetryAfter => &RETRY_AFTER,
        Field::CacheControl => &CACHE_CONTROL,
        Field::ContentType => &CONTENT_TYPE,
        Field::AccessControlAllowMethods => &ALLOW_METHODS,
        // `Field` is non-exhaustive: a field the shared code adds is named here before the
        // glue writes it (`every_field_under_its_name` fails until then).
        _ => &X_RATELIMIT_DRY_RUN,
    }
}

/// An actix response's header map (`&mut HeaderMap`, or one of its own), as the shared code
/// writes it.
pub(crate) struct Headers<M>(pub(crate) M);

impl<M: BorrowMut<HeaderMap>> FieldMap for Headers<M> {
    type Value = HeaderValue;

    // Always: every field of every response is written through it, and as a call of its
    // own it cost the allowed path 25 instructions (callgrind).
    #[inline(always)]
    fn insert(&mut self, field: Field, value: HeaderValue) {
        self.0.borrow_mut().insert(name(field).clone(), value);
    }

    #[inline]
    fn get(&self, field: Field) -> Option<&HeaderValue> {
        self.0.borrow().get(name(field))
    }

    #[inline]
    fn contains(&self, field: Field) -> bool {
        self.0.borrow().contains_key(name(field))
    }

    #[inline]
    fn value(bytes: actix_web::web::Bytes) -> Option<HeaderValue> {
        HeaderValue::from_maybe_shared(bytes).ok()
    }

    #[inline]
    fn value_static(text: &'static str) -> HeaderValue {
        HeaderValue::from_static(text)
    }

    #[inline]
    fn bytes_of(value: &HeaderValue) -> &[u8] {
        value.as_bytes()
    }
}

/// The decisions of limits checked inside a handler, waiting in the request's extensions
/// for the response's fields, and what a success takes back (`check_failures`).
#[derive(Default)]
pub(crate) struct InlineChecks {
    pub(crate) checks: Vec<(Member, Decision)>,
    pub(crate) refunds: Vec<Refund>,
    /// The names of those that would have rejected the request and were on trial.
    pub(crate) let_through: Vec<Cow<'static, str>>,
}

/// Whether any request of this process was checked inside its handler: until one is, no
/// response looks for their decisions in its request's extensions (a lookup per request).
static ANY_INLINE: AtomicBool = AtomicBool::new(false);

impl InlineChecks {
    /// Called before a request's first inline check is stored: the request is answered on
    /// the thread that checked it, so its response then looks.
    pub(crate) fn made() {
        if !ANY_INLINE.load(Ordering::Relaxed) {
            ANY_INLINE.store(true, Ordering::Relaxed);
        }
    }
}

/// Adds to `fields` the decisions of limits checked inside the handler
/// ([`crate::check`]), which the request carries in its extensions; returns what a
/// success takes back of them.
#[inline]
pub(crate) fn take_inline_checks(
    fields: &mut RateLimitFields,
    req: &actix_web::HttpRequest,
    declared: impl FnOnce() -> Vec<Member>,
) -> Vec<Refund> {
    match ANY_INLINE.load(Ordering::Relaxed) {
        false => Vec::new(),
        true => take_inline_checks_made(fields, req, declared),
    }
}

/// [`take_inline_checks`] once this process has checked a limit inside a handler: out of
/// line, so that every other response pays a load.
#[inline(never)]
fn take_inline_checks_made(
    fields: &mut RateLimitFields,
    req: &actix_web::HttpRequest,
    declared: impl FnOnce() -> Vec<Member>,
) -> Vec<Refund> {
    use actix_web::HttpMessage;
    let Some(checked) = req.extensions_mut().remove::<InlineChecks>() else {
        return Vec::new();
    };
    fields.add_checked(checked.checks, checked.let_through, declared);
    checked.refunds
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::HeaderMap;
    use limiter_http::Field;

    #[test]
    fn numbers_as_header_values() {
        for n in [0, 1, 9, 10, 42, 99, 100, 3_600, u64::MAX, 3_600] {
            let value = limiter_http::number_value::<super::Headers<HeaderMap>>(n);
            assert_eq!(value.to_str().unwrap(), n.to_string());
        }
    }

    #[test]
    fn the_answers_on_actix_header_maps() {
        limiter_http::conformance::run_answers(|| super::Headers(HeaderMap::new()));
    }

    #[test]
    fn every_field_under_its_name() {
        for field in Field::ALL {
            assert_eq!(super::name(field).as_str(), field.name(), "{field:?}");
        }
    }
}
