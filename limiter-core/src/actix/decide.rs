//! The one decide path of the glue, shared by `#[rate_limit]` and the [`RateLimit`]
//! middleware: the limiter a request is counted by, the keys of its limits, one check of
//! them all, and the header fields or the response that come of it.
//!
//! [`RateLimit`]: super::RateLimit

use actix_web::{HttpRequest, HttpResponse};

use super::attribute::HandlerLimits;
use super::keys::KeyError;
use super::response::{complete_rejection, Failure, RateLimitFields, Rejection, Write};
use crate::{Decision, Limit, Limiter, Verdict};

impl Limiter {
    /// The limiter a request is counted by: the `Limiter` in its app data (given as
    /// `.app_data(limiter)` or, as actix habits go, `.app_data(web::Data::new(limiter))`),
    /// else [`Limiter::global`].
    ///
    /// A program that built a `Limiter` and handed it to no `App` gets one `warn` event at
    /// the first request that falls back to the global one.
    pub fn of(req: &HttpRequest) -> &Limiter {
        let found = req
            .app_data::<Limiter>()
            .or_else(|| {
                req.app_data::<actix_web::web::Data<Limiter>>()
                    .map(|d| d.as_ref())
            })
            .or_else(|| req.app_data::<std::sync::Arc<Limiter>>().map(|a| &**a));
        match found {
            Some(limiter) => {
                super::mistakes::serving(limiter);
                limiter
            }
            None => {
                super::mistakes::counted_by_the_global_limiter();
                Limiter::global()
            }
        }
    }
}

impl Limiter {
    /// Reads and drops the body of a refused request when its `Content-Length` is small
    /// enough ([`LimiterBuilder::keep_alive_body_limit`](crate::LimiterBuilder)): a body
    /// left unread makes actix close the connection, and a client that is told to wait
    /// would then pay a new connection for its next request. Larger bodies, and bodies of
    /// unknown length, are not read: their connection closes. Nothing is ever parsed.
    pub(crate) async fn discard_small_body(
        &self,
        req: &HttpRequest,
        payload: &mut actix_web::dev::Payload,
    ) {
        let limit = self.http().keep_alive_body_limit;
        let length = req
            .headers()
            .get(actix_web::http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<usize>().ok());
        let Some(length) = length.filter(|&n| n > 0 && n <= limit) else {
            return;
        };
        let mut read = 0;
        while read < length {
            let next = std::future::poll_fn(|cx| {
                futures_core::Stream::poll_next(std::pin::Pin::new(&mut *payload), cx)
            });
            match next.await {
                Some(Ok(chunk)) => read += chunk.len(),
                _ => break,
            }
        }
    }

    /// Decides `req` against every limit of a handler, all or nothing: the header fields
    /// for an admitted request, or the response for one that is not.
    pub(crate) async fn decide(
        &self,
        req: &HttpRequest,
        limits: &HandlerLimits,
    ) -> Result<RateLimitFields, Box<HttpResponse>> {
        let mut keys = Vec::with_capacity(limits.limits.len());
        for spec in &limits.limits {
            match spec.key.key_of(req, self) {
                Ok(key) => keys.push(key),
                Err(error) => return Err(Box::new(self.key_failure(limits, &error))),
            }
        }
        let decided = match (limits.limits.as_slice(), keys.as_slice()) {
            ([spec], [key]) => {
                let mut check = self.check(&spec.limit, key.as_bytes());
                let result = match check.take_ready() {
                    Some(result) => result,
                    None => check.await,
                };
                result.map(RateLimitFields::one)
            }
            _ => {
                let requests: Vec<(&Limit, &[u8])> = limits
                    .limits
                    .iter()
                    .zip(&keys)
                    .map(|(spec, key)| (&spec.limit, key.as_bytes()))
                    .collect();
                let mut check = self.check_all(&requests);
                let result = match check.take_ready() {
                    Some(result) => result,
                    None => check.await,
                };
                result.map(RateLimitFields::many)
            }
        };
        match self.verdict(decided) {
            Verdict::Decided(fields) => match fields.rejection() {
                None => Ok(fields),
                Some((index, decision)) => {
                    Err(Box::new(self.rejection(limits, &fields, index, decision)))
                }
            },
            // Unlimited meanwhile; the RateLimit fields are left out.
            Verdict::Unlimited => Ok(RateLimitFields::undecided()),
            Verdict::Unavailable => Err(Box::new(self.failure(limits, Failure::StoreUnavailable))),
        }
    }

    /// The 429 (or the configured rejection response) for a request some limits rejected:
    /// `decision` says when every one of them admits it again.
    fn rejection(
        &self,
        limits: &HandlerLimits,
        fields: &RateLimitFields,
        index: usize,
        decision: Decision,
    ) -> HttpResponse {
        let name = &limits.limits[index].name;
        let rejection = Rejection::new(name, decision, &self.http().rejection_message);
        let custom = self.http().rejection_response.is_some();
        let mut response = match self.http().rejection_response.as_deref() {
            Some(build) => {
                let mut response = build(&rejection);
                complete_rejection(&mut response, rejection.retry_after_secs());
                response
            }
            None => rejection.problem_response(),
        };
        fields.apply(
            response.headers_mut(),
            &limits.policy,
            &limits.prefixes,
            self.http().headers,
            if custom {
                Write::KeepExisting
            } else {
                Write::Replace
            },
        );
        response
    }

    fn key_failure(&self, limits: &HandlerLimits, error: &KeyError) -> HttpResponse {
        match error {
            KeyError::NoClientAddress => {
                tracing::debug!(
                    "rate limit: a request without a peer address on a route keyed by address"
                );
                self.failure(limits, Failure::NoClientAddress)
            }
            KeyError::Contradiction(contradiction) => {
                tracing::debug!(%contradiction, "rate limit: contradictory forwarding headers");
                super::mistakes::contradictory_forwarding(contradiction);
                self.failure(limits, Failure::ContradictoryForwarding)
            }
        }
    }

    /// The response for a request the limiter could not decide: the default problem, or
    /// the configured one, with what every such response carries.
    fn failure(&self, limits: &HandlerLimits, failure: Failure) -> HttpResponse {
        let mut response = match self.http().failure_response.as_deref() {
            Some(build) => build(&failure),
            None => failure.problem_response(),
        };
        failure.complete(&mut response, &limits.policy, self.http().headers);
        response
    }
}
