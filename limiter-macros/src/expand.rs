//! Writes the guarded handler.
//!
//! The user's function stays as written, nested inside a new handler of the same name that
//! takes the request and the payload. The new handler decides every limit first, in the
//! order written, and only then runs the user's extractors and the user's function, so a
//! rejected request's body is never read. The user's `?`, `return` and errors keep their
//! types and spans, since their function is untouched.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Attribute, FnArg, ItemFn, Meta};

use crate::args::{self, Key, LimitArgs, Max};
use crate::errors::Errors;
use crate::input;

pub(crate) fn rate_limit(args: TokenStream, item: TokenStream) -> TokenStream {
    let mut errors = Errors::default();
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

    // This attribute, then every other #[rate_limit] on the function, in the order written.
    let mut limits = vec![args::parse(args, Span::call_site(), &mut errors)];
    let mut attrs = Vec::new();
    for attr in std::mem::take(&mut function.attrs) {
        if !is_rate_limit(&attr) {
            attrs.push(attr);
            continue;
        }
        match &attr.meta {
            Meta::List(list) => {
                limits.push(args::parse(list.tokens.clone(), attr.span(), &mut errors))
            }
            _ => errors.at(
                &attr,
                "missing the maximum and the window: write e.g. #[rate_limit(5, per = \"1m\")]",
            ),
        }
    }
    function.attrs = attrs;
    input::check(&function, &mut errors);
    let limits: Vec<LimitArgs> = limits.into_iter().flatten().collect();
    let names = names(&function, &limits, &mut errors);

    if let Some(compile_errors) = errors.to_compile_errors() {
        // The function as written (without our attributes) plus the errors: one mistake
        // gives one message, not a cascade of type errors.
        return quote!(#function #compile_errors);
    }
    generate(function, &limits, &names)
}

fn is_rate_limit(attr: &Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|segment| segment.ident == "rate_limit")
}

/// Each limit's budget scope and header name. Unscoped limits count per handler: their scope
/// is the module path and function name (and, when stacked, their position); their name is
/// the function's, then `name-WINDOW` for the ones below it.
struct Names {
    scope: TokenStream,
    name: String,
}

fn names(function: &ItemFn, limits: &[LimitArgs], errors: &mut Errors) -> Vec<Names> {
    let fn_name = function.sig.ident.to_string();
    let mut taken: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for (index, limit) in limits.iter().enumerate() {
        let (scope, mut name) = match &limit.scope {
            Some(scope) => {
                if limits[..index]
                    .iter()
                    .any(|l| l.scope.as_ref() == Some(scope))
                {
                    errors.at(
                        &function.sig.ident,
                        format!("two limits on `{fn_name}` share the scope \"{scope}\": give each its own"),
                    );
                }
                (quote!(#scope), scope.clone())
            }
            None if index == 0 => (
                quote!(::core::concat!(::core::module_path!(), "::", #fn_name)),
                fn_name.clone(),
            ),
            None => {
                let position = (index + 1).to_string();
                (
                    quote!(::core::concat!(::core::module_path!(), "::", #fn_name, "#", #position)),
                    format!("{fn_name}-{}", limit.window_text),
                )
            }
        };
        if taken.contains(&name) {
            name = format!("{name}-{}", index + 1);
        }
        taken.push(name.clone());
        out.push(Names { scope, name });
    }
    out
}

fn generate(function: ItemFn, limits: &[LimitArgs], names: &[Names]) -> TokenStream {
    let krate = limits
        .iter()
        .find_map(|l| l.krate.clone())
        .unwrap_or_else(|| syn::parse_quote!(::limiter));
    let private = quote!(#krate::__private);

    let ItemFn {
        attrs,
        vis,
        sig,
        block,
    } = function;
    let ident = &sig.ident;
    let lint_attrs: Vec<&Attribute> = attrs
        .iter()
        .filter(|a| a.path().is_ident("allow"))
        .collect();

    let mut arg_names = Vec::new();
    let mut arg_types = Vec::new();
    for (index, input) in sig.inputs.iter().enumerate() {
        if let FnArg::Typed(arg) = input {
            arg_names.push(format_ident!("__limiter_arg{}", index));
            arg_types.push(arg.ty.clone());
        }
    }

    let mut checks = Vec::new();
    let mut specs = Vec::new();
    for (index, (limit, names)) in limits.iter().zip(names).enumerate() {
        let max = match &limit.max {
            Max::Literal(value) => quote!(#value),
            Max::Expr(expr) => {
                let constant = format_ident!("__LIMITER_MAX_{}", index);
                let most = args::max_limit(&limit.algorithm) as u32;
                let algorithm = &limit.algorithm;
                let too_many =
                    format!("rate_limit: {algorithm} counts at most {most} requests per window");
                checks.push(quote_spanned! {expr.span()=>
                    const #constant: u32 = #expr;
                    const _: () = ::core::assert!(#constant >= 1, "rate_limit: the maximum must be at least 1");
                    const _: () = ::core::assert!(#constant <= #most, #too_many);
                });
                quote!(#constant)
            }
        };
        let window_ms = limit.window_ms;
        let algorithm = match limit.algorithm.as_str() {
            "fixed_window" => quote!(FixedWindow),
            "sliding_window_counter" => quote!(SlidingWindowCounter),
            "token_bucket" => quote!(TokenBucket),
            _ => quote!(SlidingWindow),
        };
        let burst = match limit.burst {
            Some(burst) => quote!(::core::option::Option::Some(#burst)),
            None => quote!(::core::option::Option::None),
        };
        let key = match &limit.key {
            Key::Ip => quote!(#private::KeySpec::Ip),
            Key::User => quote!(#private::KeySpec::User),
            Key::Global => quote!(#private::KeySpec::Global),
            Key::Header(name) => {
                quote!(#private::KeySpec::Header(#private::HeaderName::from_static(#name)))
            }
            Key::Function(path) => quote_spanned! {path.span()=>
                #private::KeySpec::Function(
                    #path as fn(&#private::HttpRequest) -> ::core::option::Option<::std::string::String>
                )
            },
        };
        let scope = &names.scope;
        let name = &names.name;
        specs.push(quote! {
            #private::LimitSpec::new(
                #scope, #name, #max, #window_ms, #private::Algorithm::#algorithm, #burst, #key,
            )
        });
    }

    quote! {
        #(#attrs)*
        #vis async fn #ident(
            __limiter_request: #private::RequestParts,
        ) -> impl #private::Responder {
            #(#lint_attrs)*
            #sig #block

            #(#checks)*
            static __LIMITER_LIMITS: #private::LazyLock<#private::HandlerLimits> =
                #private::LazyLock::new(|| #private::HandlerLimits::new(::std::vec![#(#specs),*]));

            #private::handle(
                &*__LIMITER_LIMITS,
                __limiter_request,
                move |(#(#arg_names,)*): (#(#arg_types,)*)| #ident(#(#arg_names),*),
            )
            .await
        }
    }
}
