//! Checks on the function under `#[rate_limit]`: an async, non-const, non-generic function
//! without `self`, with at most 16 extractors, as actix handlers are (15 on axum, whose
//! guarded handler takes its decision as one more).

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{FnArg, ItemFn, Type};

use crate::errors::Errors;
use crate::front::Front;

/// actix-web and axum extract at most 16 arguments per handler.
const MAX_EXTRACTORS: usize = 16;

pub(crate) fn check(item: &ItemFn, errors: &mut Errors, front: Front) {
    let (framework, handlers, most) = match front {
        Front::Actix => ("actix", "actix-web handlers", MAX_EXTRACTORS),
        // The decision is the guarded handler's first argument.
        Front::Axum => (
            "axum",
            "axum handlers under #[rate_limit] (whose decision is one more)",
            MAX_EXTRACTORS - 1,
        ),
    };
    let sig = &item.sig;
    if let Some(constness) = &sig.constness {
        errors.at(
            constness,
            "#[rate_limit] goes on an `async fn` handler, not a `const fn`",
        );
    }
    if sig.asyncness.is_none() {
        errors.at(
            sig.fn_token,
            "#[rate_limit] goes on an `async fn` handler: write `async fn`",
        );
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        errors.at(
            &sig.generics,
            format!("a rate-limited handler cannot be generic: {framework} registers one concrete function per route; write a concrete handler that calls your generic code"),
        );
    }
    if let Some(variadic) = &sig.variadic {
        errors.at(variadic, "a handler cannot be variadic");
    }
    for input in &sig.inputs {
        match input {
            FnArg::Receiver(receiver) => errors.at(
                receiver,
                format!("a rate-limited handler cannot take `self`: {framework} handlers are free functions; move it out of the `impl` block"),
            ),
            FnArg::Typed(arg) => {
                if let Type::ImplTrait(impl_trait) = &*arg.ty {
                    errors.at(
                        impl_trait,
                        "a handler's arguments must be concrete extractor types, not `impl Trait`",
                    );
                }
            }
        }
    }
    if sig.inputs.len() > most {
        errors.at(
            sig.inputs.span(),
            format!(
                "{handlers} take at most {most} extractors, this one has {}: group some in a tuple or a struct",
                sig.inputs.len()
            ),
        );
    }
}

/// Whether the function names `Self`: then it is a method of an `impl` block, and cannot be
/// nested inside the generated handler (an inner function cannot name the outer `Self`).
pub(crate) fn uses_self(item: &ItemFn) -> bool {
    fn mentions(tokens: TokenStream) -> bool {
        tokens.into_iter().any(|tree| match tree {
            TokenTree::Ident(ident) => ident == "Self",
            TokenTree::Group(group) => mentions(group.stream()),
            _ => false,
        })
    }
    mentions(item.sig.to_token_stream()) || mentions(item.block.to_token_stream())
}
