//! The RateLimit header fields on http 1's header maps (axum's, tower's): what
//! `limiter_http` writes (the same bytes for every front end), under http 1's header names.

use std::borrow::BorrowMut;

use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use limiter_http::{Field, FieldMap};

/// The names of the fields that are no standard header of http 1's, made once: a
/// `HeaderName::from_static` called at run time checks its text on every call.
const RATELIMIT_POLICY: HeaderName = HeaderName::from_static(Field::RateLimitPolicy.name());
const RATELIMIT: HeaderName = HeaderName::from_static(Field::RateLimit.name());
const LIMIT: HeaderName = HeaderName::from_static(Field::Limit.name());
const REMAINING: HeaderName = HeaderName::from_static(Field::Remaining.name());
const RESET: HeaderName = HeaderName::from_static(Field::Reset.name());
const DRY_RUN: HeaderName = HeaderName::from_static(Field::DryRun.name());

/// `field`'s name in http 1's header map. Always inlined: each call names its field, so the
/// match folds into the one name.
#[inline(always)]
fn name(field: Field) -> HeaderName {
    match field {
        Field::RateLimitPolicy => RATELIMIT_POLICY,
        Field::RateLimit => RATELIMIT,
        Field::Limit => LIMIT,
        Field::Remaining => REMAINING,
        Field::Reset => RESET,
        Field::RetryAfter => header::RETRY_AFTER,
        Field::CacheControl => header::CACHE_CONTROL,
        Field::ContentType => header::CONTENT_TYPE,
        Field::AccessControlAllowMethods => header::ACCESS_CONTROL_ALLOW_METHODS,
        // `Field` is non-exhaustive: a field the shared code adds is named here before the
        // glue writes it (`every_field_under_its_name` fails until then).
        _ => DRY_RUN,
    }
}

/// An http 1 header map (`&mut HeaderMap`, or one of its own), as the shared code writes it.
#[derive(Debug)]
pub struct Headers<M>(pub(crate) M);

impl<M: BorrowMut<HeaderMap>> FieldMap for Headers<M> {
    type Value = HeaderValue;

    #[inline(always)]
    fn insert(&mut self, field: Field, value: HeaderValue) {
        self.0.borrow_mut().insert(name(field), value);
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
    fn value(bytes: bytes::Bytes) -> Option<HeaderValue> {
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
    use axum::http::header::HeaderMap;
    use limiter_http::Field;

    #[test]
    fn the_answers_on_http_1_header_maps() {
        limiter_http::conformance::run_answers(|| super::Headers(HeaderMap::new()));
    }

    #[test]
    fn every_field_under_its_name() {
        for field in Field::ALL {
            assert_eq!(super::name(field).as_str(), field.name(), "{field:?}");
        }
    }
}
