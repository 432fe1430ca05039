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

/// The header fields of the limits checked for one request, built as they are decided.
pub(crate) struct RateLimitFields {
    /// The `RateLimit` value: one member per limit checked.
    value: String,
    /// The most restrictive decision so far, for the legacy fields.
    tightest: Option<Decision>,
}

impl RateLimitFields {
    pub(crate) fn new() -> RateLimitFields {
        RateLimitFields {
            value: String::new(),
            tightest: None,
        }
    }

    /// Adds `"name";r=R;t=T` for a decision.
    pub(crate) fn add(&mut self, name: &str, decision: &Decision) {
        if !self.value.is_empty() {
            self.value.push_str(", ");
        }
        let _ = write!(
            self.value,
            "\"{name}\";r={};t={}",
            decision.remaining(),
            decision.reset_after_secs()
        );
        let tighter = match &self.tightest {
            None => true,
            Some(t) => {
                (
                    decision.remaining(),
                    std::cmp::Reverse(decision.reset_after()),
                ) < (t.remaining(), std::cmp::Reverse(t.reset_after()))
            }
        };
        if tighter {
            self.tightest = Some(*decision);
        }
    }

    /// Writes the fields into a response's headers, leaving any the response set itself.
    pub(crate) fn apply(
        self,
        headers: &mut HeaderMap,
        policy: &HeaderValue,
        options: HeaderOptions,
    ) {
        if options.ietf {
            set_if_absent(headers, &RATELIMIT_POLICY, policy.clone());
            if let Ok(value) = HeaderValue::try_from(self.value) {
                set_if_absent(headers, &RATELIMIT, value);
            }
        }
        if let (true, Some(d)) = (options.legacy, self.tightest) {
            set_if_absent(headers, &X_LIMIT, HeaderValue::from(d.limit()));
            set_if_absent(headers, &X_REMAINING, HeaderValue::from(d.remaining()));
            set_if_absent(headers, &X_RESET, HeaderValue::from(d.reset_after_secs()));
        }
    }
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
        let body = serde_json::json!({
            "type": "about:blank",
            "title": "Too Many Requests",
            "status": 429,
            "detail": self.message,
            "retry_after": retry_after,
        });
        HttpResponse::TooManyRequests()
            .insert_header((header::RETRY_AFTER, retry_after))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .content_type("application/problem+json")
            .body(body.to_string())
    }
}

/// Adds what every rejection carries, whoever built the response.
pub(crate) fn complete_rejection(response: &mut HttpResponse, retry_after: u64) {
    let headers = response.headers_mut();
    set_if_absent(
        headers,
        &header::RETRY_AFTER,
        HeaderValue::from(retry_after),
    );
    set_if_absent(
        headers,
        &header::CACHE_CONTROL,
        HeaderValue::from_static("no-store"),
    );
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
        .content_type("application/problem+json")
        .body(body.to_string())
}
