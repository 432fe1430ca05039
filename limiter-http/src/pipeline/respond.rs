//! How a front end answers what the pipeline decided, and where a request keeps the
//! decisions of limits checked inside its handler: what the pipeline asks of a front end
//! beyond [`Front`].

use limiter_core::Decision;

use super::inline::InlineChecks;
use crate::limits::HandlerLimits;
use crate::{Front, KeyError, Limiter, Member, RateLimitFields};

/// A front end's answers: its 429s and failures (their bytes are the shared code's, their
/// response type the framework's), and the place in a request where the decisions of
/// limits checked inside its handler wait for its response.
pub trait Respond: Front {
    /// Adds to what `req`'s limits checked inside its handler left for its response.
    fn inline_checks(req: &Self::Request, add: impl FnOnce(&mut InlineChecks<Self>));

    /// What `req`'s limits checked inside its handler left for its response, taken out.
    fn take_inline_checks(req: &Self::Request) -> Option<InlineChecks<Self>>;

    /// The 429 (or the configured rejection response) of a request some limits rejected:
    /// `decision` says when every one of them admits it again. `fields` are the handler's
    /// limits and their fields, when the response carries them (none for a check inside a
    /// handler, whose fields the handler's response carries).
    fn rejection(
        limiter: &Limiter<Self>,
        fields: Option<(&HandlerLimits<Self>, &RateLimitFields)>,
        name: &str,
        decision: Decision,
    ) -> Self::Response;

    /// The 429 of a request that costs more than the limit `member` ever allows at once:
    /// `units` are its cost, the limit's capacity and its maximum.
    fn never_admitted(
        limiter: &Limiter<Self>,
        limits: Option<&HandlerLimits<Self>>,
        name: &str,
        member: Member,
        units: (u32, u32, u32),
    ) -> Self::Response;

    /// The failure of a request whose key could not be read.
    fn key_failure(
        limiter: &Limiter<Self>,
        limits: &HandlerLimits<Self>,
        error: &KeyError,
    ) -> Self::Response;

    /// The 503 (or the configured failure response) of a request whose store failed closed.
    fn store_unavailable(
        limiter: &Limiter<Self>,
        limits: Option<&HandlerLimits<Self>>,
    ) -> Self::Response;
}
