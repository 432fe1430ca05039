//! The RateLimit header fields on actix's responses: what `limiter_http` writes (the same
//! bytes for every front end), onto actix's header map, under actix's header names.

use std::borrow::BorrowMut;

use actix_web::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use limiter_http::{Field, FieldMap};

pub(crate) use limiter_http::{RateLimitFields, Write};

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
pub struct Headers<M>(pub(crate) M);

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
