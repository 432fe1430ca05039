//! `#[concurrency_limit(MAX, key = KEY, scope = "NAME")]`: at most `MAX` requests of one
//! client in flight on the handler. It rides the same marker as `#[rate_limit]` (see
//! [`stack`](crate::stack)), tagged, so that one guarded handler does both.

use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, Lit, Token};

use crate::ast::{Key, Spanned};
use crate::errors::Errors;
use crate::key::parse_key;
use crate::values::{parse_crate, parse_scope};

/// The tag a concurrency limit's arguments carry in the marker.
pub(crate) const TAG: &str = "__concurrency";

/// One concurrency limit, checked.
pub(crate) struct InFlight {
    pub(crate) max: u32,
    pub(crate) key: Key,
    pub(crate) scope: Option<Spanned<String>>,
}

enum Arg {
    Positional(Expr),
    Named(Ident, Expr),
}

impl Parse for Arg {
    fn parse(input: ParseStream<'_>) -> syn::Result<Arg> {
        if input.peek(Ident) && input.peek2(Token![=]) {
            let name: Ident = input.parse()?;
            input.parse::<Token![=]>()?;
            return Ok(Arg::Named(name, input.parse()?));
        }
        Ok(Arg::Positional(input.parse()?))
    }
}

/// Parses and checks one attribute's arguments (`span`: the attribute's, blamed for what
/// is missing).
pub(crate) fn parse(tokens: TokenStream, span: Span, errors: &mut Errors) -> Option<InFlight> {
    let args =
        match syn::parse::Parser::parse2(Punctuated::<Arg, Token![,]>::parse_terminated, tokens) {
            Ok(args) => args,
            Err(error) => {
                errors.push(error);
                return None;
            }
        };
    let before = errors.count();
    let (mut max, mut key, mut scope) = (None, None, None);
    let mut seen: Vec<String> = Vec::new();
    for (index, arg) in args.into_iter().enumerate() {
        match arg {
            Arg::Positional(expr) if index == 0 => max = parse_max(&expr, errors),
            Arg::Positional(expr) => errors.at(
                &expr,
                "unexpected value: only the maximum comes without a name; the others are `key = ...` and `scope = \"...\"`",
            ),
            Arg::Named(name, value) => {
                let text = name.to_string();
                if seen.contains(&text) {
                    errors.at(&name, format!("duplicate argument `{text}`: give it once"));
                    continue;
                }
                seen.push(text.clone());
                match text.as_str() {
                    "key" => key = parse_key(&value, errors),
                    "scope" => scope = parse_scope(&value, errors),
                    "crate" => {
                        parse_crate(&value, errors);
                    }
                    _ => errors.at(
                        &name,
                        format!("unknown argument `{text}` of #[concurrency_limit]: expected `key`, `scope` or `crate` (rates, blocks and quotas are #[rate_limit]'s)"),
                    ),
                }
            }
        }
    }
    if max.is_none() && errors.count() == before {
        errors.at(
            span,
            "missing the maximum: write e.g. #[concurrency_limit(4, key = \"user\")], at most 4 requests of a client in flight",
        );
    }
    if errors.count() != before {
        return None;
    }
    Some(InFlight {
        max: max?,
        key: key.map_or(Key::Ip, |k| k.value),
        scope,
    })
}

/// The maximum: an integer literal from 1 to 65,535 (requests in flight; more would be no
/// limit a server holds).
fn parse_max(expr: &Expr, errors: &mut Errors) -> Option<u32> {
    let Expr::Lit(syn::ExprLit {
        lit: Lit::Int(int), ..
    }) = expr
    else {
        errors.at(
            expr,
            "the maximum of requests in flight must be an integer literal, e.g. #[concurrency_limit(4)]",
        );
        return None;
    };
    match int.base10_parse::<u32>() {
        Ok(0) => {
            errors.at(
                int,
                "the maximum must be at least 1: a limit of 0 in flight admits nothing",
            );
            None
        }
        Ok(max) if max <= 65_535 => Some(max),
        _ => {
            errors.at(int, "the maximum of requests in flight is at most 65535");
            None
        }
    }
}
