//! Writes the guarded handler for axum.
//!
//! axum runs a handler's extractors in order, the body's last, and lets any of them answer
//! instead of the handler. So the guarded handler takes one more argument, first: the
//! decision (`Decide`), an extractor that decides every limit of the handler at once
//! before the user's extractors run — a rejected request's body is never read — and whose
//! rejection is the 429. Its type names the handler's limits through a module of the
//! handler's name (modules and functions are apart in Rust's namespaces), which holds them:
//! the extractor has no value to be handed them by. The user's function stays as written,
//! nested inside the guarded one, so that its `?`, `return` and errors keep their types and
//! spans; the guarded one answers with its response and the fields. Each of the user's
//! extractors comes wrapped (`Extracted`), so that its rejection is answered the same way:
//! with the fields, and what its status does not count given back.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{Attribute, FnArg, ItemFn};

use crate::expand;
use crate::in_flight::InFlight;
use crate::input;
use crate::valid::Limit;

pub(crate) fn handler(
    function: ItemFn,
    limits: &[Limit],
    in_flight: &[InFlight],
    krate: &syn::Path,
) -> TokenStream {
    let private = quote!(#krate::__private);
    if input::uses_self(&function) {
        let error = syn::Error::new_spanned(
            &function.sig.ident,
            "on axum, a rate-limited handler is a free function: move it out of the `impl` \
             block (the extractor that decides its limits names them by the function's path)",
        )
        .to_compile_error();
        return quote!(#function #error);
    }
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = function;
    let ident = &sig.ident;
    let lint_attrs: Vec<&Attribute> = attrs.iter().filter(|a| expand::is_lint(a)).collect();

    let mut arg_names = Vec::new();
    let mut arg_types = Vec::new();
    for (index, input) in sig.inputs.iter().enumerate() {
        if let FnArg::Typed(arg) = input {
            arg_names.push(format_ident!("__limiter_arg{}", index));
            arg_types.push(arg.ty.clone());
        }
    }
    // Inside the module of the handler's name, `module_path!()` is the handler's path.
    let path = quote!(::core::module_path!());
    let (policies, made_limits) = expand::declared(ident, limits, in_flight, &private, &path);
    quote! {
        /// The limits of the handler of the same name.
        #[doc(hidden)]
        // Public inside, as reachable as the handler whose signature names it.
        #[allow(non_snake_case, unreachable_pub)]
        #vis mod #ident {
            #[allow(unused_imports)]
            use super::*;

            /// Tells the handler apart: its `type_name` is the handler's full path.
            pub struct __LimiterHandler;

            impl #private::Limits for __LimiterHandler {
                fn limits() -> &'static #private::HandlerLimits {
                    #(#policies)*
                    static __LIMITER_LIMITS: #private::LazyLock<#private::HandlerLimits> =
                        #private::LazyLock::new(|| #made_limits);
                    &__LIMITER_LIMITS
                }
            }

            fn __limiter_declares() -> &'static dyn #private::Declares {
                <__LimiterHandler as #private::Limits>::limits()
            }
            #private::inventory::submit! {
                #private::Registration::new(__limiter_declares, ::core::file!(), ::core::line!())
            }
            #private::inventory::submit! {
                #private::HandlerPath::new(
                    ::core::module_path!(),
                    ::core::file!(),
                    ::core::line!(),
                    ::core::column!(),
                )
            }
        }

        #(#attrs)*
        #vis async fn #ident(
            __limiter_decide: #private::Decide<#ident::__LimiterHandler>,
            #(#arg_names: #private::Extracted<#arg_types>),*
        ) -> #private::Response {
            #(#lint_attrs)*
            #sig #block

            // An extractor's rejection is answered as the handler's response would be.
            #(
                let #arg_names = match #arg_names.0 {
                    ::core::result::Result::Ok(extracted) => extracted,
                    ::core::result::Result::Err(rejected) => {
                        return __limiter_decide.answer(rejected).await;
                    }
                };
            )*
            __limiter_decide.answer(#ident(#(#arg_names),*).await).await
        }
    }
}
