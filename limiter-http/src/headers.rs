//! The response header fields the limiter writes, named framework-neutrally: a front end
//! maps each [`Field`] to its own header name (actix-web 4 is on http 0.2, axum on http 1)
//! and writes them through [`FieldMap`], its header map seen as the limiter needs it.

use bytes::Bytes;

/// A response header field the limiter writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Field {
    /// `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers-10).
    RateLimitPolicy,
    /// `RateLimit` (draft-ietf-httpapi-ratelimit-headers-10).
    RateLimit,
    /// `X-RateLimit-Dry-Run`: the limits that would have rejected a request that was let
    /// through (a dry run, or a client outside the share a limit is enforced on).
    DryRun,
    /// `X-RateLimit-Limit` (legacy).
    Limit,
    /// `X-RateLimit-Remaining` (legacy).
    Remaining,
    /// `X-RateLimit-Reset` (legacy).
    Reset,
    /// `Retry-After`.
    RetryAfter,
    /// `Cache-Control`.
    CacheControl,
    /// `Content-Type`.
    ContentType,
    /// `Access-Control-Allow-Methods`: a CORS layer's answer to a preflight carries it.
    AccessControlAllowMethods,
}

impl Field {
    /// Its name, in lower case as HTTP/2 writes it.
    pub const fn name(self) -> &'static str {
        match self {
            Field::RateLimitPolicy => "ratelimit-policy",
            Field::RateLimit => "ratelimit",
            Field::DryRun => "x-ratelimit-dry-run",
            Field::Limit => "x-ratelimit-limit",
            Field::Remaining => "x-ratelimit-remaining",
            Field::Reset => "x-ratelimit-reset",
            Field::RetryAfter => "retry-after",
            Field::CacheControl => "cache-control",
            Field::ContentType => "content-type",
            Field::AccessControlAllowMethods => "access-control-allow-methods",
        }
    }

    /// Every field, for a front end's test that its names are these.
    pub const ALL: [Field; 10] = [
        Field::RateLimitPolicy,
        Field::RateLimit,
        Field::DryRun,
        Field::Limit,
        Field::Remaining,
        Field::Reset,
        Field::RetryAfter,
        Field::CacheControl,
        Field::ContentType,
        Field::AccessControlAllowMethods,
    ];
}

/// A front end's response header map, as the limiter writes it: the fields by [`Field`],
/// their values of the front end's own type (which a response moves and clones as it is).
///
/// ```
/// use std::collections::HashMap;
/// use limiter_http::{Field, FieldMap};
///
/// struct Plain(HashMap<&'static str, Vec<u8>>);
///
/// impl FieldMap for Plain {
///     type Value = Vec<u8>;
///     fn insert(&mut self, field: Field, value: Vec<u8>) {
///         self.0.insert(field.name(), value);
///     }
///     fn get(&self, field: Field) -> Option<&Vec<u8>> {
///         self.0.get(field.name())
///     }
///     fn value(bytes: bytes::Bytes) -> Option<Vec<u8>> {
///         Some(bytes.to_vec())
///     }
///     fn value_static(text: &'static str) -> Vec<u8> {
///         text.as_bytes().to_vec()
///     }
///     fn bytes_of(value: &Vec<u8>) -> &[u8] {
///         value
///     }
/// }
///
/// let mut headers = Plain(HashMap::new());
/// limiter_http::complete_rejection(&mut headers, Some(60));
/// assert_eq!(headers.0["retry-after"], b"60");
/// assert_eq!(headers.0["cache-control"], b"no-store");
/// ```
pub trait FieldMap {
    /// A field's value.
    type Value: Clone;

    /// Sets `field` to `value`, replacing what it held.
    fn insert(&mut self, field: Field, value: Self::Value);

    /// The (first) value of `field`.
    fn get(&self, field: Field) -> Option<&Self::Value>;

    /// Whether the map has `field`.
    #[inline]
    fn contains(&self, field: Field) -> bool {
        self.get(field).is_some()
    }

    /// `bytes` as a value; `None` where they are not a valid one (the limiter writes
    /// visible ASCII only, so this is a check, never a refusal of its own values).
    fn value(bytes: Bytes) -> Option<Self::Value>;

    /// A fixed text as a value.
    fn value_static(text: &'static str) -> Self::Value;

    /// What `value` holds.
    fn bytes_of(value: &Self::Value) -> &[u8];
}
