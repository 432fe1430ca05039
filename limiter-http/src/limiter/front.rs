//! What a web framework's front end gives the shared code: its request and response types,
//! where a request finds its limiter, and the values a service's own closures are handed.

use crate::{KeyError, Limiter, RequestHead};

/// A web framework's front end: the actix glue of the facade crate (`limiter::Actix`), the
/// axum/tower one. The [`Limiter`] and its builder are generic over it, so that settings
/// written as closures take the framework's own request and build its own response, while
/// everything else — the store, the keys, the fields, the shares — is one code for all.
pub trait Front: Sized + Send + Sync + 'static {
    /// A request as the limiter reads it before the handler's extractors.
    type Request;
    /// A response.
    type Response;
    /// What a rejection response is built from
    /// ([`rejection_response`](crate::LimiterBuilder::rejection_response)).
    type Rejection<'a>;
    /// A request the limiter could not decide
    /// ([`failure_response`](crate::LimiterBuilder::failure_response)).
    type Failure;

    /// How the front end tells a service to hand its limiter to the framework, for the
    /// `warn` event of a limiter built and handed to none.
    const HAND_IT_OVER: &'static str;

    /// The `warn` event of limiters built on each worker, each with a store of its own:
    /// what happened, and the fix in the framework's words.
    const BUILT_PER_WORKER: &'static str;

    /// The process-wide default limiter of this front end ([`Limiter::global`]): a static
    /// of the front end's own, made with [`Limiter::new_global`].
    fn global() -> &'static Limiter<Self>;

    /// The limiter the service handed to the framework, if it can be found from `req`.
    fn limiter_of(req: &Self::Request) -> Option<&Limiter<Self>>;

    /// The request's peer and header fields, as the key logic reads them.
    fn head(req: &Self::Request) -> impl RequestHead + '_;

    /// Whether a thread of this name is one of the framework's workers (a limiter built on
    /// one is a limiter per worker).
    fn is_worker_thread(name: &str) -> bool;

    /// The failure of a request whose client cannot be told.
    fn failure_of(error: &KeyError) -> Self::Failure;
}
