//! The two types a front end's users meet when they replace its answers
//! (`rejection_response`, `failure_response`): [`Rejection`](crate::Rejection) and
//! [`Failure`](crate::Failure), each wrapped so that its default response is the front
//! end's own response type. One macro writes both for every front end, so that they are
//! one code.

/// Writes a front end's `Rejection` and `Failure`: `limiter_http`'s, with their default
/// responses in the front end's types. The attributes before `rejection;` and `failure;`
/// are the types' docs (their examples name the front end's crate). Not a public API.
#[doc(hidden)]
#[macro_export]
macro_rules! front_answers {
    (
        front: $front:ty,
        response: $response:ty,
        status: $status:ty,
        $(#[$rejection:meta])*
        rejection;
        $(#[$failure:meta])*
        failure;
    ) => {
        $(#[$rejection])*
        #[derive(Debug, Clone)]
        pub struct Rejection<'a>($crate::Rejection<'a>);

        impl<'a> From<$crate::Rejection<'a>> for Rejection<'a> {
            fn from(rejection: $crate::Rejection<'a>) -> Rejection<'a> {
                Rejection(rejection)
            }
        }

        impl<'a> ::std::ops::Deref for Rejection<'a> {
            type Target = $crate::Rejection<'a>;

            fn deref(&self) -> &$crate::Rejection<'a> {
                &self.0
            }
        }

        impl Rejection<'_> {
            /// The default response: `429 Too Many Requests`, `Retry-After`,
            /// `Cache-Control: no-store` and an `application/problem+json` body with
            /// `type`, `title`, `status`, `detail` and `retry_after` — the same bytes on
            /// every front end for the same decision.
            ///
            /// A request that can never be admitted
            /// ([`never_admitted`](limiter_http::Rejection::never_admitted)) gets no
            /// `Retry-After`, `"retry_after": null`, and a detail that says why. With
            /// [`quota_exceeded_problems`](crate::LimiterBuilder::quota_exceeded_problems),
            /// the type is the IETF draft's `…#quota-exceeded`, with `violated-policies`
            /// naming the limit.
            pub fn problem_response(&self) -> $response {
                $crate::pipeline::problem_response::<$front>(&self.0, self.0.problem_body())
            }
        }

        $(#[$failure])*
        ///
        /// Every one carries `Cache-Control: no-store` and the handler's `RateLimit-Policy`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[non_exhaustive]
        pub enum Failure {
            /// [`limiter_http::Failure::StoreUnavailable`]: the store failed, failing closed.
            StoreUnavailable,
            /// [`limiter_http::Failure::NoClientAddress`]: no address to count by.
            NoClientAddress,
            /// [`limiter_http::Failure::ContradictoryForwarding`]: forwarding headers that
            /// disagree.
            ContradictoryForwarding,
        }

        impl From<$crate::Failure> for Failure {
            fn from(failure: $crate::Failure) -> Failure {
                match failure {
                    $crate::Failure::NoClientAddress => Failure::NoClientAddress,
                    $crate::Failure::ContradictoryForwarding => Failure::ContradictoryForwarding,
                    _ => Failure::StoreUnavailable,
                }
            }
        }

        impl ::std::ops::Deref for Failure {
            type Target = $crate::Failure;

            fn deref(&self) -> &$crate::Failure {
                match self {
                    Failure::StoreUnavailable => &$crate::Failure::StoreUnavailable,
                    Failure::NoClientAddress => &$crate::Failure::NoClientAddress,
                    Failure::ContradictoryForwarding => &$crate::Failure::ContradictoryForwarding,
                }
            }
        }

        impl Failure {
            /// The response status.
            pub fn status(&self) -> $status {
                <$status>::from_u16(self.status_code())
                    .unwrap_or(<$status>::INTERNAL_SERVER_ERROR)
            }

            /// The default response: an RFC 9457 problem with the status, title and
            /// detail above.
            pub fn problem_response(&self) -> $response {
                $crate::pipeline::failure_response::<$front>(**self)
            }
        }
    };
}
