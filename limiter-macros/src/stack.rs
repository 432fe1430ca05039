//! How the attributes of one handler find each other, whatever name they are imported
//! under (`use limiter::rate_limit as limit;`) and whatever other attributes sit between
//! them (`#[tracing::instrument]`, the route macros).
//!
//! Each `#[rate_limit]` checks its own arguments, then adds them to a marker attribute it
//! keeps as the function's **last** attribute: `#[::limiter::__private::rate_limit_stack(
//! [first] [second] ...)]`. Attributes expand from the outermost in, so the marker expands
//! last, once every other attribute macro has had its turn on the user's function, and it
//! sees the limits in the order they were written. It then writes the guarded handler
//! ([`expand`](crate::expand)).

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::quote;
use syn::{Attribute, ItemFn, Meta};

use crate::errors::Errors;
use crate::front::Front;
use crate::{expand, expand_axum, in_flight, input, valid};

/// The marker's name, as `limiter::__private` exports it.
const MARKER: &str = "rate_limit_stack";

/// `#[concurrency_limit(...)]`: checks the arguments, then carries them in the marker,
/// tagged.
pub(crate) fn concurrency_limit(args: TokenStream, item: TokenStream, front: Front) -> TokenStream {
    let mut function: ItemFn = match syn::parse2(item.clone()) {
        Ok(function) => function,
        Err(_) => {
            let error = syn::Error::new(
                Span::call_site(),
                "#[concurrency_limit] goes on an `async fn` handler",
            )
            .to_compile_error();
            return quote!(#item #error);
        }
    };
    let mut errors = Errors::default();
    in_flight::parse(args.clone(), Span::call_site(), &mut errors);
    if let Some(compile_errors) = errors.to_compile_errors() {
        return with_errors(function, compile_errors);
    }
    let tag = proc_macro2::Ident::new(in_flight::TAG, Span::call_site());
    let mut tagged = quote!(#tag);
    tagged.extend(args.clone());
    carry(
        &mut function,
        Group::new(Delimiter::Bracket, tagged),
        args,
        front,
    );
    quote!(#function)
}

/// Adds `carried` to the function's marker, making the marker (with `args`' crate path)
/// if it has none yet.
fn carry(function: &mut ItemFn, carried: Group, args: TokenStream, front: Front) {
    match function.attrs.iter_mut().find(|a| is_marker(a)) {
        Some(marker) => {
            if let Meta::List(list) = &mut marker.meta {
                list.tokens.extend([TokenTree::Group(carried)]);
            }
        }
        None => {
            let krate = crate::args::crate_path(args).unwrap_or_else(|| front.default_crate());
            let marker: Attribute =
                syn::parse_quote!(#[#krate::__private::rate_limit_stack(#carried)]);
            function.attrs.push(marker);
        }
    }
}

/// `#[rate_limit(...)]`: checks the arguments, then carries them in the marker.
pub(crate) fn rate_limit(args: TokenStream, item: TokenStream, front: Front) -> TokenStream {
    let mut function: ItemFn = match syn::parse2(item.clone()) {
        Ok(function) => function,
        Err(_) => {
            let error = syn::Error::new(
                Span::call_site(),
                "#[rate_limit] goes on an `async fn` handler",
            )
            .to_compile_error();
            return quote!(#item #error);
        }
    };
    let mut errors = Errors::default();
    if let Some(attr) = crate::args::parse(args.clone(), Span::call_site(), &mut errors) {
        valid::limit(attr, &mut errors);
    }
    if let Some(compile_errors) = errors.to_compile_errors() {
        // The function as written plus the errors: one mistake, one message. Other limits on
        // it still expand (and report their own mistakes).
        return with_errors(function, compile_errors);
    }
    let carried = Group::new(Delimiter::Bracket, args.clone());
    carry(&mut function, carried, args, front);
    quote!(#function)
}

/// The function and the errors. A handler written without `async` is emitted with it, so
/// that the one mistake is not followed by actix's complaint, pointing into its own code,
/// that the function is no handler.
fn with_errors(mut function: ItemFn, errors: TokenStream) -> TokenStream {
    if function.sig.asyncness.is_none() && function.sig.constness.is_none() {
        function.sig.asyncness = Some(Default::default());
    }
    quote!(#function #errors)
}

fn is_marker(attr: &Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|segment| segment.ident == MARKER)
}

/// The marker: every limit of the handler, in the order written.
pub(crate) fn finish(args: TokenStream, item: TokenStream, front: Front) -> TokenStream {
    let function: ItemFn = match syn::parse2(item.clone()) {
        Ok(function) => function,
        Err(error) => {
            let error = error.to_compile_error();
            return quote!(#item #error);
        }
    };
    let mut errors = Errors::default();
    let mut limits = Vec::new();
    let mut krate = None;
    let mut in_flight = Vec::new();
    for tree in args {
        let TokenTree::Group(group) = tree else {
            continue;
        };
        // A concurrency limit's arguments come after its tag.
        let mut tokens = group.stream().into_iter().peekable();
        let tagged = matches!(tokens.peek(), Some(TokenTree::Ident(i)) if i == in_flight::TAG);
        if tagged {
            tokens.next();
        }
        let stream: TokenStream = tokens.collect();
        if krate.is_none() {
            krate = crate::args::crate_path(stream.clone());
        }
        if tagged {
            in_flight.extend(in_flight::parse(stream, group.span(), &mut errors));
        } else if let Some(limit) = crate::args::parse(stream, group.span(), &mut errors)
            .and_then(|attr| valid::limit(attr, &mut errors))
        {
            limits.push(limit);
        }
    }
    valid::stack(&limits, &mut errors);
    input::check(&function, &mut errors, front);
    if let Some(compile_errors) = errors.to_compile_errors() {
        return with_errors(function, compile_errors);
    }
    let krate = krate.unwrap_or_else(|| front.default_crate());
    match front {
        Front::Actix => expand::handler(function, &limits, &in_flight, &krate),
        Front::Axum => expand_axum::handler(function, &limits, &in_flight, &krate),
    }
}
