//! The `#[rate_limit]` attribute of [limiter](https://docs.rs/limiter). Use it through the
//! `limiter` crate, which also holds the runtime it expands to.
//!
//! The pipeline, one file each: `args.rs` parses and checks the attribute, `period.rs` the
//! window grammar, `input.rs` the function, `expand.rs` writes the guarded handler.

mod args;
mod errors;
mod expand;
mod input;
mod period;

use proc_macro::TokenStream;

/// Rate limits an actix-web handler: `#[rate_limit(5, per = "1m", key = "ip")]`.
///
/// See the `limiter` crate for the arguments, the responses and the configuration.
#[proc_macro_attribute]
pub fn rate_limit(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::rate_limit(args.into(), item.into()).into()
}
