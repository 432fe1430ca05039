//! The `#[rate_limit]` attribute of [limiter](https://docs.rs/limiter). Use it through the
//! `limiter` crate, which also holds the runtime it expands to and documents the attribute.
//!
//! The pipeline, one file each: `ast.rs` parses an attribute into typed values with their
//! spans (`period.rs` the window grammar, `penalty.rs` blocks and their escalation), `valid.rs` checks what depends on several values
//! and on the other limits of a handler, `input.rs` checks the function, `stack.rs` gathers
//! the attributes of one handler, and `expand.rs` writes the guarded handler.

mod args;
mod ast;
mod errors;
mod expand;
mod expand_axum;
mod front;
mod in_flight;
mod input;
mod key;
#[cfg(test)]
mod mistakes_said;
mod penalty;
mod period;
mod share;
mod stack;
mod valid;
mod values;

use proc_macro::TokenStream;

/// Implemented in `limiter-macros`; use it through the `limiter` crate, whose
/// `rate_limit` page is the reference.
#[proc_macro_attribute]
pub fn rate_limit(args: TokenStream, item: TokenStream) -> TokenStream {
    stack::rate_limit(args.into(), item.into(), front::Front::Actix).into()
}

/// Implemented in `limiter-macros`; use it through the `limiter-axum` crate
/// (`limiter_axum::rate_limit`): the same attribute, on axum handlers.
#[proc_macro_attribute]
pub fn axum_rate_limit(args: TokenStream, item: TokenStream) -> TokenStream {
    stack::rate_limit(args.into(), item.into(), front::Front::Axum).into()
}

/// Implemented in `limiter-macros`; use it through the `limiter` crate, whose
/// `concurrency_limit` page is the reference.
#[proc_macro_attribute]
pub fn concurrency_limit(args: TokenStream, item: TokenStream) -> TokenStream {
    stack::concurrency_limit(args.into(), item.into(), front::Front::Actix).into()
}

/// Implemented in `limiter-macros`; use it through the `limiter-axum` crate
/// (`limiter_axum::concurrency_limit`): the same attribute, on axum handlers.
#[proc_macro_attribute]
pub fn axum_concurrency_limit(args: TokenStream, item: TokenStream) -> TokenStream {
    stack::concurrency_limit(args.into(), item.into(), front::Front::Axum).into()
}

/// The limits of one handler, gathered by its `#[rate_limit]` attributes. Not a public API:
/// `#[rate_limit]` adds it.
#[doc(hidden)]
#[proc_macro_attribute]
pub fn __rate_limit_stack(args: TokenStream, item: TokenStream) -> TokenStream {
    stack::finish(args.into(), item.into(), front::Front::Actix).into()
}

/// The limits of one axum handler, gathered by its `#[rate_limit]` attributes. Not a
/// public API: `limiter_axum::rate_limit` adds it.
#[doc(hidden)]
#[proc_macro_attribute]
pub fn __rate_limit_stack_axum(args: TokenStream, item: TokenStream) -> TokenStream {
    stack::finish(args.into(), item.into(), front::Front::Axum).into()
}
