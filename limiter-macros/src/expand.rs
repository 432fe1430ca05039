//! Writes the guarded handler.
//!
//! The user's function stays as written, nested inside a new handler of the same name that
//! takes the request and the payload (or, when it names `Self`, beside it in the `impl`
//! block). The new handler decides every limit first — all of them at once — and only then
//! runs the user's extractors and the user's function, so a rejected request's body is
//! never read. The user's `?`, `return` and errors keep their types and spans, since their
//! function is untouched. Each policy is built in a `const`, so a constant `MAX` out of
//! bounds is a compile error on it; every handler registers its limits, so that conflicts
//! between handlers are found when the `Limiter` is built, before any request.

use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::{Attribute, FnArg, ItemFn};

use crate::ast::{Cost, Key, Max, Spanned};
use crate::in_flight::InFlight;
use crate::input;
use crate::valid::{self, Limit};

pub(crate) fn handler(
    function: ItemFn,
    limits: &[Limit],
    in_flight: &[InFlight],
    krate: &syn::Path,
) -> TokenStream {
    let private = quote!(#krate::__private);
    let uses_self = input::uses_self(&function);
    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = function;
    let ident = &sig.ident;
    let lint_attrs: Vec<&Attribute> = attrs.iter().filter(|a| is_lint(a)).collect();

    let mut arg_names = Vec::new();
    let mut arg_types = Vec::new();
    for (index, input) in sig.inputs.iter().enumerate() {
        if let FnArg::Typed(arg) = input {
            arg_names.push(format_ident!("__limiter_arg{}", index));
            arg_types.push(arg.ty.clone());
        }
    }

    // The user's function: nested, or beside the handler when it names `Self`.
    let (beside, nested, call) = if uses_self {
        let inner = format_ident!("__limiter_{}", ident.unraw());
        let mut inner_sig = sig.clone();
        inner_sig.ident = inner.clone();
        (
            quote! {
                #[doc(hidden)]
                #(#lint_attrs)*
                #inner_sig #block
            },
            TokenStream::new(),
            quote!(Self::#inner),
        )
    } else {
        (
            TokenStream::new(),
            quote! {
                #(#lint_attrs)*
                #sig #block
            },
            quote!(#ident),
        )
    };

    let fn_path = ident.unraw().to_string();
    let path = quote!(::core::concat!(::core::module_path!(), "::", #fn_path));
    let (policies, made_limits) = declared(ident, limits, in_flight, &private, &path);
    quote! {
        #beside
        #(#attrs)*
        #vis async fn #ident(
            __limiter_request: #private::RequestParts,
        ) -> impl #private::Responder {
            #nested

            /// Tells the handler apart: its `type_name` is the handler's full path.
            struct __LimiterHandler;
            #(#policies)*
            static __LIMITER_LIMITS: #private::LazyLock<#private::HandlerLimits> =
                #private::LazyLock::new(|| #made_limits);
            fn __limiter_declares() -> &'static dyn #private::Declares {
                &*__LIMITER_LIMITS
            }
            #private::inventory::submit! {
                #private::Registration::new(__limiter_declares, ::core::file!(), ::core::line!())
            }
            #private::inventory::submit! {
                #private::HandlerPath::new(
                    ::core::concat!(::core::module_path!(), "::", #fn_path),
                    ::core::file!(),
                    ::core::line!(),
                    ::core::column!(),
                )
            }

            #private::handle(
                &__LIMITER_LIMITS,
                __limiter_request,
                move |(#(#arg_names,)*): (#(#arg_types,)*)| #call(#(#arg_names),*),
            )
            .await
        }
    }
}

/// What a handler declares, front end aside: a `const` per policy (and per constant cost),
/// checked when compiled on the tokens written, and the expression that makes its
/// `HandlerLimits`, naming `__LimiterHandler`, the type that tells the handler apart, and
/// `path`, the handler's path as text.
pub(crate) fn declared(
    ident: &syn::Ident,
    limits: &[Limit],
    in_flight: &[InFlight],
    private: &TokenStream,
    path: &TokenStream,
) -> (Vec<TokenStream>, TokenStream) {
    let names = valid::field_names(&ident.unraw().to_string(), limits);
    let private = private.clone();
    let mut policies = Vec::new();
    let mut specs = Vec::new();
    for (index, (limit, name)) in limits.iter().zip(&names).enumerate() {
        let policy = format_ident!("__LIMITER_POLICY_{}", index);
        let max = match &limit.max.value {
            Max::Literal(value) => quote!(#value),
            Max::Expr(expr) => quote!(#expr),
        };
        let window_ms = limit.window.ms;
        let algorithm = format_ident!("{}", limit.algorithm.variant());
        let burst = limit.burst.unwrap_or(0);
        // On the maximum's tokens: a constant out of bounds fails to evaluate right there.
        let private_here = respan(private.clone(), limit.max.span);
        // A penalty's numbers were checked when parsed: it cannot fail here.
        let penalized = match limit.penalty {
            Some((block, escalation)) => {
                let (after, within, long) =
                    escalation.map_or((0, 0, 0), |e| (e.after, e.within_ms, e.block_ms));
                quote! {
                    match #private_here::Penalty::__from_attribute(#block, #after, #within, #long) {
                        ::core::result::Result::Ok(penalty) => policy.with_penalty(penalty),
                        ::core::result::Result::Err(error) => ::core::panic!("{}", error.message()),
                    }
                }
            }
            None => quote!(policy),
        };
        // A delay's length was checked when parsed, and its algorithm: it cannot fail here.
        let penalized = match limit.delay {
            Some(delay) => quote! {{
                let policy = match policy.with_delay(::core::time::Duration::from_millis(#delay)) {
                    ::core::result::Result::Ok(policy) => policy,
                    ::core::result::Result::Err(error) => ::core::panic!("{}", error.message()),
                };
                #penalized
            }},
            None => penalized,
        };
        let made = match limit.window.calendar {
            Some(period) => {
                let period = format_ident!("{}", period);
                quote! {
                    #private_here::Policy::per_calendar(#max, #private_here::Period::#period)
                }
            }
            None => quote! {
                #private_here::Policy::__try_from_attribute(
                    #max, #window_ms, #private_here::Algorithm::#algorithm, #burst,
                )
            },
        };
        // Bound under the span `penalized` reads it with (the call site's), not the
        // maximum's: the maximum's tokens may come through a `macro_rules!`, whose hygiene
        // would keep the two apart.
        let bound = format_ident!("policy");
        policies.push(quote_spanned! {limit.max.span=>
            const #policy: #private_here::Policy = match #made {
                ::core::result::Result::Ok(#bound) => #penalized,
                ::core::result::Result::Err(error) => ::core::panic!("{}", error.message()),
            };
        });
        let key = key_spec(&private, &limit.key);
        let scope = scope_option(&limit.scope);
        // Each option a method of its own, on the tokens it was written with: a function of
        // the wrong type is a type mismatch right there.
        let mut options = TokenStream::new();
        let call = |method: &str, span: Span, argument: TokenStream| {
            let method = respan(
                quote::ToTokens::to_token_stream(&format_ident!("{}", method)),
                span,
            );
            quote_spanned! {span=> .#method(#argument) }
        };
        if let Some(exempt) = &limit.exempt {
            options.extend(call("exempt_when", first_span(exempt), quote!(#exempt)));
        }
        match &limit.cost {
            Some(Spanned {
                value: Cost::Literal(units),
                span,
            }) => {
                // Against a constant maximum, checked when compiled, on the cost: a cost no
                // request could pass would answer 429 forever.
                if matches!(limit.max.value, Max::Expr(_)) {
                    policies.push(quote_spanned! {*span=>
                        const _: () = ::core::assert!(
                            #units <= #policy.capacity(),
                            "`cost` is more than this limit ever admits at once (its maximum, or a token bucket's burst): no request could pass; lower it, or raise the maximum"
                        );
                    });
                }
                options.extend(call("cost", *span, quote!(#units)));
            }
            Some(Spanned {
                value: Cost::Const(path),
                span,
            }) => {
                // Checked when compiled, on the constant: at least 1, at most what the limit
                // admits at once.
                let cost = format_ident!("__LIMITER_COST_{}", index);
                policies.push(quote_spanned! {*span=>
                    const #cost: u32 = {
                        let units: u32 = #path;
                        ::core::assert!(
                            units >= 1 && units <= #policy.capacity(),
                            "`cost` must be at least 1 and at most what the limit admits at once (its maximum, or a token bucket's burst)"
                        );
                        units
                    };
                });
                options.extend(call("cost", *span, quote!(#cost)));
            }
            Some(Spanned {
                value: Cost::Function(path),
                ..
            }) => {
                options.extend(call("cost_of", first_span(path), quote!(#path)));
            }
            None => {}
        }
        if limit.failures_only {
            options.extend(quote!(.failures_only()));
        }
        if let Some(counts) = &limit.count_when {
            options.extend(call("count_when", first_span(counts), quote!(#counts)));
        }
        if limit.dry_run {
            options.extend(quote!(.dry_run()));
        }
        if let Some(share) = limit.enforce {
            options.extend(quote!(.enforce(#private::Share::per_million_of(#share))));
        }
        // A plain or an `async` function: `Resolver::new` tells them apart, and a
        // function of neither kind is its error, on the path.
        if let Some(policy) = &limit.policy {
            let span = first_span(policy);
            let resolver = respan(quote!(#private::Resolver::<#private::Policy>::new), span);
            let argument = quote_spanned! {span=> #resolver(#policy) };
            options.extend(call("resolve_policy", span, argument));
        }
        if let Some(jitter) = limit.jitter {
            options.extend(quote!(.jitter(::core::time::Duration::from_millis(#jitter))));
        }
        specs.push(quote! {
            #private::LimitSpec::new(
                #scope,
                #path,
                ::core::any::type_name::<__LimiterHandler>(),
                #index,
                #name,
                #policy,
                #key,
            )#options
        });
    }

    let mut in_flight_specs = Vec::new();
    for (index, limit) in in_flight.iter().enumerate() {
        let max = limit.max;
        let key = key_spec(&private, &limit.key);
        let scope = scope_option(&limit.scope);
        in_flight_specs.push(quote! {
            #private::InFlightSpec::new(
                #scope,
                #path,
                ::core::any::type_name::<__LimiterHandler>(),
                #index,
                #max,
                #key,
            )
        });
    }
    let made_limits = if in_flight_specs.is_empty() {
        quote!(#private::HandlerLimits::new(::std::vec![#(#specs),*]))
    } else {
        quote! {
            #private::HandlerLimits::new(::std::vec![#(#specs),*])
                .in_flight(::std::vec![#(#in_flight_specs),*])
        }
    };
    (policies, made_limits)
}

/// `Some("scope")` when the attribute names one, else `None`.
fn scope_option(scope: &Option<Spanned<String>>) -> TokenStream {
    match scope {
        Some(scope) => {
            let scope = &scope.value;
            quote!(::core::option::Option::Some(#scope))
        }
        None => quote!(::core::option::Option::None),
    }
}

/// The [`KeySpec`] a key kind is made with.
fn key_spec(private: &TokenStream, key: &Key) -> TokenStream {
    match key {
        Key::Ip => quote!(#private::KeySpec::Ip),
        Key::User => quote!(#private::KeySpec::User),
        Key::Global => quote!(#private::KeySpec::Global),
        Key::Header(name) => {
            quote!(#private::KeySpec::Header(#private::HeaderName::from_static(#name)))
        }
        // Spanned on the path: a function of the wrong type — neither a plain nor an
        // `async` key function — is its error right there.
        Key::Function(path) => {
            let span = first_span(path);
            let key_spec = respan(quote!(#private::KeySpec::Resolved), span);
            let resolver = respan(
                quote!(#private::Resolver::<::std::string::String>::new),
                span,
            );
            quote_spanned! {span=> #key_spec(#resolver(#path)) }
        }
    }
}

/// The span of a path's last segment: what a type error about it should point at.
fn first_span(path: &syn::Path) -> Span {
    path.segments
        .last()
        .map_or_else(Span::call_site, |segment| segment.ident.span())
}

/// The same tokens, all blamed on `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut tree| {
            if let TokenTree::Group(group) = &tree {
                let mut inner = Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                tree = TokenTree::Group(inner);
            } else {
                tree.set_span(span);
            }
            tree
        })
        .collect()
}

pub(crate) fn is_lint(attr: &Attribute) -> bool {
    ["allow", "expect", "warn", "deny", "forbid"]
        .iter()
        .any(|lint| attr.path().is_ident(lint))
}
