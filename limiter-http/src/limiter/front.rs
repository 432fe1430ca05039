//! What a web framework's front end gives the shared code: its request and response types,
//! where a request finds its limiter, how it reads a request and keeps what a decision
//! leaves in it. (How it answers is the pipeline's [`Respond`](crate::pipeline::Respond).)

use std::future::Future;

use crate::{FieldMap, Limiter, RequestHead};

/// A web framework's front end: the actix glue of the facade crate (`limiter::Actix`), the
/// axum/tower one. The [`Limiter`], its builder, a handler's limits and the decision every
/// request runs are generic over it, so that settings written as closures take the
/// framework's own request and build its own response, while everything else — the store,
/// the keys, the pipeline, the fields, the shares — is one code for all.
pub trait Front: Sized + Send + Sync + Copy + std::fmt::Debug + 'static {
    /// A request as the limiter reads it before the handler's extractors.
    type Request;
    /// A response.
    type Response;
    /// A response's status.
    type Status: Copy + std::fmt::Debug + Send + Sync + 'static;
    /// A header's name (`key = "header:NAME"`).
    type HeaderName: Clone + std::fmt::Debug + std::fmt::Display + Send + Sync + 'static;
    /// A response's header map, as the shared code writes the fields onto it.
    type Map: FieldMap<Value: Clone + std::fmt::Debug + Send + Sync + 'static>;
    /// What a rejection response is built from
    /// ([`rejection_response`](crate::LimiterBuilder::rejection_response)).
    type Rejection<'a>: From<crate::Rejection<'a>>;
    /// A request the limiter could not decide
    /// ([`failure_response`](crate::LimiterBuilder::failure_response)).
    type Failure: From<crate::Failure>;
    /// The future of an `async` key or policy function: what the framework's handlers may
    /// hold (actix's need not be `Send`; tower's must).
    type Pending<'a, T: 'a>: Future<Output = Option<T>> + 'a;

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

    /// The first value of the header `name` in `req` (`key = "header:NAME"`).
    fn header<'r>(req: &'r Self::Request, name: &Self::HeaderName) -> Option<&'r [u8]>;

    /// Whether `req` is a CORS preflight: `OPTIONS` with `Access-Control-Request-Method`.
    fn is_preflight(req: &Self::Request) -> bool;

    /// The status's number (`count = "failures"` keeps 400 and above).
    fn status_code(status: Self::Status) -> u16;

    /// A value the decision left in `req` for later in its life (the answers of its `async`
    /// resolvers, when they must have answered).
    fn local<T: Clone + Send + Sync + 'static>(req: &Self::Request) -> Option<T>;

    /// Leaves `value` in `req`, replacing one of its type.
    fn set_local<T: Clone + Send + Sync + 'static>(req: &Self::Request, value: T);

    /// Whether a thread of this name is one of the framework's workers (a limiter built on
    /// one is a limiter per worker).
    fn is_worker_thread(name: &str) -> bool;
}

/// A front end whose handlers may hold futures that are not `Send` (actix's, one thread per
/// worker): an `async fn(&Request)` resolves keys and policies as it is.
pub trait LocalFront: Front {
    /// `future` as the front end's [`Pending`](Front::Pending).
    fn pending<'a, T: 'a>(
        future: std::pin::Pin<Box<dyn Future<Output = Option<T>> + 'a>>,
    ) -> Self::Pending<'a, T>;
}

/// A front end whose handlers hold only `Send` futures (tower's, axum's: a handler may move
/// between threads): an `async fn(&Request)` resolves keys and policies when its future is
/// `Send`.
pub trait SendFront: Front {
    /// `future` as the front end's [`Pending`](Front::Pending).
    fn pending_send<'a, T: 'a>(
        future: std::pin::Pin<Box<dyn Future<Output = Option<T>> + Send + 'a>>,
    ) -> Self::Pending<'a, T>;
}
