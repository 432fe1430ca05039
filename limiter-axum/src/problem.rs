//! The responses of a request the limiter refused or could not decide, in axum's types:
//! [`Rejection`] and [`Failure`] are `limiter_http`'s (what every front end answers with,
//! word for word and byte for byte), with their default response as an axum [`Response`].
//! Both are written by `limiter_http::front_answers!`, as on every front end.

use axum::http::StatusCode;
use axum::response::Response;

use crate::front::Axum;

limiter_http::front_answers! {
    front: Axum,
    response: Response,
    status: StatusCode,
    /// A request turned away: what the rejection response is made from. Its limit, decision
    /// and message are those of [`limiter_http::Rejection`], which it dereferences to.
    ///
    /// The default response is a 429 with an RFC 9457 problem body; replace it with
    /// [`LimiterBuilder::rejection_response`](crate::LimiterBuilder::rejection_response).
    ///
    /// ```
    /// use axum::response::IntoResponse;
    /// use limiter_axum::Limiter;
    ///
    /// let limiter = Limiter::builder()
    ///     .rejection_response(|rejection| {
    ///         let text = format!("{} again in {}s", rejection.limit_name(), rejection.retry_after_secs());
    ///         (axum::http::StatusCode::TOO_MANY_REQUESTS, text).into_response()
    ///     })
    ///     .build();
    /// # drop(limiter);
    /// ```
    rejection;
    /// A request a limited handler could not decide: one of [`limiter_http::Failure`]'s, which
    /// it dereferences to (its `title`, `detail` and `retry_after_secs`); replace its response
    /// with [`LimiterBuilder::failure_response`](crate::LimiterBuilder::failure_response).
    ///
    /// | failure | status | when |
    /// | --- | --- | --- |
    /// | [`StoreUnavailable`](Failure::StoreUnavailable) | 503, `Retry-After: 1` | the store failed or timed out and the limiter fails closed |
    /// | [`NoClientAddress`](Failure::NoClientAddress) | 500 | a route keyed by address, and the request has no peer address (no `ConnectInfo`: serve the router with `into_make_service_with_connect_info::<SocketAddr>()`) |
    /// | [`ContradictoryForwarding`](Failure::ContradictoryForwarding) | 400 | a trusted proxy's `Forwarded` and `X-Forwarded-For` name different clients |
    failure;
}
