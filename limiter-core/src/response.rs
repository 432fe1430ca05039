//! What a client is told: the IETF RateLimit header fields, the legacy `X-RateLimit-*`
//! ones, and the 429 itself (RFC 9457 problem details).

use std::fmt::Write as _;

use actix_web::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::HttpResponse;

use crate::Decision;

/// `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers-10).
pub(crate) static RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");
/// `RateLimit` (draft-ietf-httpapi-ratelimit-headers-10).
pub(crate) static RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
static X_LIMIT: HeaderName = HeaderName::from_static("x-ratelimit-limit");
static X_REMAINING: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
static X_RESET: HeaderName = HeaderName::from_static("x-ratelimit-reset");

/// One `RateLimit-Policy` list member: `"login";q=5;w=60` (the window in whole seconds,
/// rounded up).
pub(crate) fn policy_member(out: &mut String, name: &str, quota: u32, window_ms: u64) {
    if !out.is_empty() {
        out.push_str(", ");
    }
    let _ = write!(
        out,
        "\"{name}\";q={quota};w={}",
        window_ms.div_ceil(1000).max(1)
    );
}

/// The decisions taken for one request, in the order of the handler's limits; the header
/// fields are written from them only when the response is built, and only if enabled.
pub(crate) struct RateLimitFields {
    /// Most handlers have one limit: its decision needs no allocation.
    first: Option<Decision>,
    stacked: Vec<Decision>,
    /// A limit went undecided (the store failed open): `RateLimit` is left out, since its
    /// members would no longer line up with the limits.
    incomplete: bool,
}

impl RateLimitFields {
    pub(crate) fn new() -> RateLimitFields {
        RateLimitFields {
            first: None,
            stacked: Vec::new(),
            incomplete: false,
        }
    }

    /// Notes a limit left undecided.
    pub(crate) fn skip(&mut self) {
        self.incomplete = true;
    }

    /// Records the decision of the next limit.
    #[inline]
    pub(crate) fn add(&mut self, decision: Decision) {
        match self.first {
            None => self.first = Some(decision),
            Some(_) => self.stacked.push(decision),
        }
    }

    fn decisions(&self) -> impl Iterator<Item = &Decision> {
        self.first.iter().chain(&self.stacked)
    }

    /// Writes the fields into a response's headers. With `keep_existing`, fields the
    /// response set itself stay (a custom rejection response); otherwise they are replaced,
    /// which saves a lookup per field on every response.
    pub(crate) fn apply(
        &self,
        headers: &mut HeaderMap,
        policy: &HeaderValue,
        prefixes: &[Box<str>],
        options: HeaderOptions,
        keep_existing: bool,
    ) {
        let set = |headers: &mut HeaderMap, name: &HeaderName, value: HeaderValue| {
            if keep_existing {
                set_if_absent(headers, name, value);
            } else {
                headers.insert(name.clone(), value);
            }
        };
        if options.ietf && !self.incomplete {
            set(headers, &RATELIMIT_POLICY, policy.clone());
            let mut value = Vec::with_capacity(64);
            for (decision, prefix) in self.decisions().zip(prefixes) {
                if !value.is_empty() {
                    value.extend_from_slice(b", ");
                }
                value.extend_from_slice(prefix.as_bytes());
                push_decimal(&mut value, u64::from(decision.remaining()));
                value.extend_from_slice(b";t=");
                push_decimal(&mut value, decision.reset_after_secs());
            }
            if let Ok(value) = HeaderValue::from_maybe_shared(bytes_of(value)) {
                set(headers, &RATELIMIT, value);
            }
        }
        if options.legacy {
            // The most restrictive limit: the fewest remaining, then the longest wait.
            let tightest = self
                .decisions()
                .min_by_key(|d| (d.remaining(), std::cmp::Reverse(d.reset_after())));
            if let Some(d) = tightest {
                set(headers, &X_LIMIT, HeaderValue::from(d.limit()));
                set(headers, &X_REMAINING, HeaderValue::from(d.remaining()));
                set(headers, &X_RESET, HeaderValue::from(d.reset_after_secs()));
            }
        }
    }
}

fn bytes_of(value: Vec<u8>) -> actix_web::web::Bytes {
    actix_web::web::Bytes::from(value)
}

/// Appends `n` in decimal, without the formatting machinery (this runs on every response).
fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Which rate limit header fields responses carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HeaderOptions {
    pub(crate) ietf: bool,
    pub(crate) legacy: bool,
}

fn set_if_absent(headers: &mut HeaderMap, name: &HeaderName, value: HeaderValue) {
    if !headers.contains_key(name) {
        headers.insert(name.clone(), value);
    }
}

/// A request turned away: what the rejection response is made from.
///
/// The default response is a 429 with an RFC 9457 problem body; replace it with
/// [`LimiterBuilder::rejection_response`](crate::LimiterBuilder::rejection_response).
#[derive(Debug, Clone)]
pub struct Rejection<'a> {
    name: &'a str,
    decision: Decision,
    message: &'a str,
}

impl<'a> Rejection<'a> {
    pub(crate) fn new(name: &'a str, decision: Decision, message: &'a str) -> Rejection<'a> {
        Rejection {
            name,
            decision,
            message,
        }
    }

    /// The name of the limit that rejected the request (its scope, or the handler's name).
    pub fn limit_name(&self) -> &str {
        self.name
    }

    /// The decision, with the exact `retry_after`.
    pub fn decision(&self) -> &Decision {
        &self.decision
    }

    /// Whole seconds until one request would be admitted: rounded up, never 0.
    pub fn retry_after_secs(&self) -> u64 {
        self.decision.retry_after_secs().unwrap_or(1)
    }

    /// The configured message (the problem's `detail`).
    pub fn message(&self) -> &str {
        self.message
    }

    /// The default response: `429 Too Many Requests`, `Retry-After`, `Cache-Control:
    /// no-store` and an `application/problem+json` body with `type`, `title`, `status`,
    /// `detail` and `retry_after`.
    pub fn problem_response(&self) -> HttpResponse {
        let retry_after = self.retry_after_secs();
        let mut body = Vec::with_capacity(96 + self.message.len());
        body.extend_from_slice(
            br#"{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"#,
        );
        match serde_json::to_writer(&mut body, self.message) {
            Ok(()) => {}
            Err(_) => body.extend_from_slice(b"\"\""),
        }
        body.extend_from_slice(br#","retry_after":"#);
        push_decimal(&mut body, retry_after);
        body.push(b'}');
        let mut response = HttpResponse::with_body(StatusCode::TOO_MANY_REQUESTS, body);
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, PROBLEM_JSON.clone());
        headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
        headers.insert(header::CACHE_CONTROL, NO_STORE.clone());
        response.map_into_boxed_body()
    }
}

static PROBLEM_JSON: HeaderValue = HeaderValue::from_static("application/problem+json");
static NO_STORE: HeaderValue = HeaderValue::from_static("no-store");

/// Adds what every rejection carries, whoever built the response.
pub(crate) fn complete_rejection(response: &mut HttpResponse, retry_after: u64) {
    let headers = response.headers_mut();
    set_if_absent(
        headers,
        &header::RETRY_AFTER,
        HeaderValue::from(retry_after),
    );
    set_if_absent(headers, &header::CACHE_CONTROL, NO_STORE.clone());
}

/// A problem response for a request the limiter could not decide.
pub(crate) fn problem(status: StatusCode, title: &str, detail: &str) -> HttpResponse {
    let body = serde_json::json!({
        "type": "about:blank",
        "title": title,
        "status": status.as_u16(),
        "detail": detail,
    });
    HttpResponse::build(status)
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .content_type(PROBLEM_JSON.clone())
        .body(body.to_string())
}

/// The opening of a limit's `RateLimit` list member: `"login";r=`.
pub(crate) fn member_prefix(name: &str) -> Box<str> {
    format!("\"{name}\";r=").into_boxed_str()
}

#[cfg(test)]
mod tests {
    use super::push_decimal;

    #[test]
    fn decimals() {
        for n in [0, 7, 10, 42, 65_535, u64::MAX] {
            let mut out = Vec::new();
            push_decimal(&mut out, n);
            assert_eq!(out, n.to_string().into_bytes());
        }
    }
}
