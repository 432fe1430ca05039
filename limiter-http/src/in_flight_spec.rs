//! A handler's concurrency limits as `#[concurrency_limit]` declares them: each one's
//! limit, key and name in the header fields.

use std::borrow::Cow;
use std::num::NonZeroU32;

use limiter_core::Concurrency;

use crate::handler_path::handler_path;
use crate::{field_name, Front, KeySpec};

/// One concurrency limit of a handler, as `#[concurrency_limit]` declares it. Not a public
/// API: the attribute makes it.
#[doc(hidden)]
#[derive(Debug)]
pub struct InFlightSpec<F: Front> {
    #[doc(hidden)]
    pub limit: Concurrency,
    #[doc(hidden)]
    pub key: KeySpec<F>,
    /// Its name in the header fields.
    #[doc(hidden)]
    pub name: Cow<'static, str>,
    handler: String,
}

impl<F: Front> InFlightSpec<F> {
    /// At most `max` requests of a client in flight on the handler at `path` (its
    /// `module_path!()` and fn name; `marker` the `type_name` of a type in the generated
    /// handler, as for [`LimitSpec::new`](crate::LimitSpec::new)). Without a `scope` it is the handler's own,
    /// named after it with `#in-flight` (and its place among the handler's concurrency
    /// limits after the first).
    pub fn new(
        scope: Option<&'static str>,
        path: &'static str,
        marker: &'static str,
        position: usize,
        max: u32,
        key: KeySpec<F>,
    ) -> InFlightSpec<F> {
        let handler = handler_path(marker);
        let own = match limiter_core::__private::path_is_shared(path) {
            true => handler.clone(),
            false => path.to_string(),
        };
        let scope: Cow<'static, str> = match (scope, position) {
            (Some(scope), _) => Cow::Borrowed(scope),
            (None, 0) => Cow::Owned(format!("{own}#in-flight")),
            (None, n) => Cow::Owned(format!("{own}#in-flight{}", n + 1)),
        };
        let max = NonZeroU32::new(max).unwrap_or(NonZeroU32::MIN);
        let name = field_name(scope.clone());
        InFlightSpec {
            limit: Concurrency::of(scope, max),
            key,
            name,
            handler,
        }
    }

    /// The path of the handler it limits.
    pub fn handler(&self) -> &str {
        &self.handler
    }

    /// The limit of a concurrency middleware (actix's `ConcurrencyLimit`, the tower
    /// layer's): named after its scope.
    #[doc(hidden)]
    pub fn for_middleware(scope: Cow<'static, str>, max: u32, key: KeySpec<F>) -> InFlightSpec<F> {
        let max = NonZeroU32::new(max).unwrap_or(NonZeroU32::MIN);
        InFlightSpec {
            handler: format!("ConcurrencyLimit middleware \"{scope}\""),
            name: field_name(scope.clone()),
            limit: Concurrency::of(scope, max),
            key,
        }
    }

    /// The limit.
    pub fn limit(&self) -> &Concurrency {
        &self.limit
    }

    /// Who it counts.
    pub fn key(&self) -> &KeySpec<F> {
        &self.key
    }

    /// `"NAME";q=4;qu="concurrent-requests"`: its `RateLimit-Policy` member.
    #[doc(hidden)]
    pub fn policy_member(&self) -> String {
        crate::concurrency_policy_member(&self.name, self.limit.max().get())
    }
}
