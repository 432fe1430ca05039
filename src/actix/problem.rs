//! The responses of a request the limiter refused or could not decide, in actix's types:
//! [`Rejection`] and [`Failure`] are `limiter_http`'s (what every front end answers with,
//! word for word and byte for byte), with their default response as an [`HttpResponse`].
//! Both are written by `limiter_http::front_answers!`, as on every front end.

use actix_web::http::StatusCode;
use actix_web::HttpResponse;

use super::front::Actix;

limiter_http::front_answers! {
    front: Actix,
    response: HttpResponse,
    status: StatusCode,
    /// A request turned away: what the rejection response is made from. Its limit, decision
    /// and message are those of [`limiter_http::Rejection`], which it dereferences to.
    ///
    /// The default response is a 429 with an RFC 9457 problem body; replace it with
    /// [`LimiterBuilder::rejection_response`](crate::LimiterBuilder::rejection_response).
    ///
    /// ```
    /// use actix_web::HttpResponse;
    /// use limiter::Limiter;
    ///
    /// let limiter = Limiter::builder()
    ///     .rejection_response(|rejection| {
    ///         HttpResponse::TooManyRequests()
    ///             .body(format!("{} again in {}s", rejection.limit_name(), rejection.retry_after_secs()))
    ///     })
    ///     .build();
    /// # drop(limiter);
    /// ```
    rejection;
    /// A request a limited handler could not decide: one of [`limiter_http::Failure`]'s, which
    /// it dereferences to (its `title`, `detail` and `retry_after_secs`). Each has a fixed,
    /// documented response that never shows clients internal details (the cause goes to
    /// `tracing`); replace it with
    /// [`LimiterBuilder::failure_response`](crate::LimiterBuilder::failure_response).
    ///
    /// | failure | status | when |
    /// | --- | --- | --- |
    /// | [`StoreUnavailable`](Failure::StoreUnavailable) | 503, `Retry-After: 1` | the store failed or timed out and the limiter fails closed |
    /// | [`NoClientAddress`](Failure::NoClientAddress) | 500 | a route keyed by address, and the request has no peer address (a Unix socket, a test request without one) |
    /// | [`ContradictoryForwarding`](Failure::ContradictoryForwarding) | 400 | a trusted proxy's `Forwarded` and `X-Forwarded-For` name different clients |
    failure;
}
