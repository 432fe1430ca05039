//! The bodies and fields of a request the limiter refused or could not decide, as RFC 9457
//! problems: the 429's and the failures' — the same bytes whichever front end sends them.

use bytes::Bytes;

use crate::fields::{number_value, push_decimal, set_if_absent, HeaderOptions};
use crate::headers::{Field, FieldMap};

/// The problem type of draft-ietf-httpapi-ratelimit-headers (-08 to -11) for a request
/// over its quota.
pub const QUOTA_EXCEEDED: &str = "https://iana.org/assignments/http-problem-types#quota-exceeded";

/// The media type of every problem body.
pub const PROBLEM_JSON: &str = "application/problem+json";

/// The default 429's body up to `retry_after`'s value: the problem's fixed members and
/// `message`, escaped, as its `detail`. Made once per message; [`problem_body`] ends it.
pub fn problem_head(message: &str) -> Box<[u8]> {
    head_of("about:blank", "Too Many Requests", message, None)
}

/// [`problem_head`] with the draft's problem type ([`QUOTA_EXCEEDED`]), its title, and
/// `violated-policies` naming the limit that refused (the name its RateLimit fields use).
pub fn quota_exceeded_head(message: &str, limit: &str) -> Box<[u8]> {
    let title = "Request cannot be satisfied as assigned quota has been exceeded";
    head_of(QUOTA_EXCEEDED, title, message, Some(limit))
}

/// A 429's problem body up to `retry_after`'s value, its strings escaped: `type`, `title`,
/// `status`, `detail` and, when a limit is named, `violated-policies`.
fn head_of(kind: &str, title: &str, message: &str, violated: Option<&str>) -> Box<[u8]> {
    let mut head = Vec::with_capacity(128 + kind.len() + title.len() + message.len());
    head.extend_from_slice(br#"{"type":"#);
    string(&mut head, kind);
    head.extend_from_slice(br#","title":"#);
    string(&mut head, title);
    head.extend_from_slice(br#","status":429,"detail":"#);
    string(&mut head, message);
    if let Some(limit) = violated {
        head.extend_from_slice(br#","violated-policies":["#);
        string(&mut head, limit);
        head.push(b']');
    }
    head.extend_from_slice(br#","retry_after":"#);
    head.into_boxed_slice()
}

/// `text` as a JSON string (`""` if it cannot be written).
fn string(head: &mut Vec<u8>, text: &str) {
    if serde_json::to_writer(&mut *head, text).is_err() {
        head.extend_from_slice(b"\"\"");
    }
}

/// A 429's problem body: `head` ([`problem_head`] or [`quota_exceeded_head`]) ended with
/// `retry_after` in seconds, or `null` for a request that can never be admitted.
///
/// ```
/// let head = limiter_http::problem_head("Slow down.");
/// let body = limiter_http::problem_body(&head, Some(42));
/// assert_eq!(
///     &body[..],
///     br#"{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"Slow down.","retry_after":42}"#
/// );
/// ```
pub fn problem_body(head: &[u8], retry_after: Option<u64>) -> Bytes {
    let mut body = Vec::with_capacity(head.len() + 24);
    body.extend_from_slice(head);
    match retry_after {
        Some(secs) => push_decimal(&mut body, secs),
        None => body.extend_from_slice(b"null"),
    }
    body.push(b'}');
    Bytes::from(body)
}

/// The fields of the default 429: `Content-Type: application/problem+json`, `Retry-After`
/// (none for a request that can never be admitted) and `Cache-Control: no-store`.
#[inline]
pub fn problem_fields<M: FieldMap>(headers: &mut M, retry_after: Option<u64>) {
    headers.insert(Field::ContentType, M::value_static(PROBLEM_JSON));
    if let Some(secs) = retry_after {
        headers.insert(Field::RetryAfter, number_value::<M>(secs));
    }
    headers.insert(Field::CacheControl, M::value_static("no-store"));
}

/// Adds what every rejection carries, whoever built the response: `Retry-After` and
/// `Cache-Control: no-store`, unless it set them itself.
pub fn complete_rejection<M: FieldMap>(headers: &mut M, retry_after: Option<u64>) {
    if let Some(secs) = retry_after {
        set_if_absent(headers, Field::RetryAfter, number_value::<M>(secs));
    }
    set_if_absent(headers, Field::CacheControl, M::value_static("no-store"));
}

/// The default body of a failure: an RFC 9457 problem of `status`, `title` and `detail`.
pub fn failure_body(status: u16, title: &str, detail: &str) -> String {
    serde_json::json!({
        "type": "about:blank",
        "title": title,
        "status": status,
        "detail": detail,
    })
    .to_string()
}

/// Adds what every failure's response carries, unless it set it itself:
/// `Cache-Control: no-store`, its `Retry-After` if it has one, and the handler's
/// `RateLimit-Policy` (`policy`, when not empty and the IETF fields are on).
pub fn complete_failure<M: FieldMap>(
    headers: &mut M,
    retry_after: Option<u64>,
    policy: &M::Value,
    options: HeaderOptions,
) {
    set_if_absent(headers, Field::CacheControl, M::value_static("no-store"));
    if let Some(secs) = retry_after {
        set_if_absent(headers, Field::RetryAfter, number_value::<M>(secs));
    }
    if options.ietf && !M::bytes_of(policy).is_empty() {
        set_if_absent(headers, Field::RateLimitPolicy, policy.clone());
    }
}

/// A concurrency limit's `RateLimit-Policy` member: `"NAME";q=4;qu="concurrent-requests"`.
pub fn concurrency_policy_member(name: &str, max: u32) -> String {
    format!("\"{name}\";q={max};qu=\"concurrent-requests\"")
}

/// A concurrency limit's `RateLimit` member: `"NAME";r=2`, the slots left.
pub fn concurrency_member(name: &str, remaining: u32) -> String {
    format!("\"{name}\";r={remaining}")
}

/// Adds `members` to the list field `field` after what it holds (or sets it): the
/// concurrency limits' members beside the rate limits'.
pub fn append_members<M: FieldMap>(headers: &mut M, field: Field, members: &str) {
    let present = headers.get(field).map(|v| M::bytes_of(v)).unwrap_or(b"");
    let mut value = Vec::with_capacity(present.len() + 2 + members.len());
    if !present.is_empty() {
        value.extend_from_slice(present);
        value.extend_from_slice(b", ");
    }
    value.extend_from_slice(members.as_bytes());
    if let Some(value) = M::value(Bytes::from(value)) {
        headers.insert(field, value);
    }
}

/// The fields of a request over a concurrency limit: its policy member, and no slot left.
pub fn concurrency_refused<M: FieldMap>(headers: &mut M, name: &str, max: u32) {
    let fields = [
        (Field::RateLimitPolicy, concurrency_policy_member(name, max)),
        (Field::RateLimit, concurrency_member(name, 0)),
    ];
    for (field, value) in fields {
        if let Some(value) = M::value(Bytes::from(value)) {
            headers.insert(field, value);
        }
    }
}
