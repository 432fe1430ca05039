//! Parses one `#[rate_limit(MAX, per = "...", key = ..., algorithm = "...", scope = "...",
//! burst = N, crate = "...")]` into the [`ast`](crate::ast)'s typed values, each kept with
//! its span. Every value is checked on its own here; what depends on several (and on the
//! other limits of a stack) is [`valid`](crate::valid)'s.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, Token};

use crate::ast::LimitAttr;
use crate::errors::Errors;
use crate::key::parse_key;
use crate::penalty::{parse_block, parse_delay, parse_jitter, parse_penalty};
use crate::share::parse_share;
use crate::values::{
    parse_algorithm, parse_bool, parse_burst, parse_cost, parse_count, parse_crate, parse_function,
    parse_max, parse_per, parse_scope,
};

pub(crate) const ARGUMENTS: &str = "`per`, `key`, `algorithm`, `scope`, `burst`, `cost`, `count`, `exempt`, `dry_run`, `enforce`, `policy`, `block`, `penalty`, `jitter`, `delay`, `crate`";

/// One comma-separated piece of the attribute, as written.
enum RawArg {
    Positional(Expr),
    Named { name: Ident, value: Expr },
}

impl Parse for RawArg {
    fn parse(input: ParseStream<'_>) -> syn::Result<RawArg> {
        if input.peek(Ident::peek_any) && input.peek2(Token![=]) && !input.peek2(Token![==]) {
            let name = Ident::parse_any(input)?;
            input.parse::<Token![=]>()?;
            let value = input.parse()?;
            return Ok(RawArg::Named { name, value });
        }
        Ok(RawArg::Positional(input.parse()?))
    }
}

struct RawArgs(Punctuated<RawArg, Token![,]>);

impl Parse for RawArgs {
    fn parse(input: ParseStream<'_>) -> syn::Result<RawArgs> {
        Ok(RawArgs(Punctuated::parse_terminated(input)?))
    }
}

/// Parses one attribute's arguments; `span` is the attribute's. Every problem with a single
/// value goes to `errors`; `None` when the arguments are not even a list, or empty.
pub(crate) fn parse(
    tokens: proc_macro2::TokenStream,
    span: Span,
    errors: &mut Errors,
) -> Option<LimitAttr> {
    let raw = match syn::parse2::<RawArgs>(tokens) {
        Ok(raw) => raw.0,
        Err(error) => {
            errors.push(error);
            return None;
        }
    };
    let mut attr = LimitAttr {
        span,
        max: None,
        per: None,
        key: None,
        algorithm: None,
        scope: None,
        burst: None,
        cost: None,
        count: None,
        exempt: None,
        dry_run: None,
        enforce: None,
        policy: None,
        block: None,
        penalty: None,
        jitter: None,
        delay: None,
        krate: None,
        per_given: false,
        algorithm_given: false,
    };
    if raw.is_empty() {
        errors.at(
            span,
            "missing the maximum and the window: write e.g. #[rate_limit(5, per = \"1m\")]",
        );
        return None;
    }
    let mut seen: Vec<String> = Vec::new();
    for (index, arg) in raw.into_iter().enumerate() {
        match arg {
            RawArg::Positional(expr) if index == 0 => attr.max = parse_max(expr, errors),
            RawArg::Positional(expr) => errors.at(
                &expr,
                format!(
                    "unexpected value: only the maximum comes without a name; the others are `name = value` with name one of {ARGUMENTS}"
                ),
            ),
            RawArg::Named { name, value } => {
                let text = name.to_string();
                if seen.contains(&text) {
                    errors.at(&name, format!("duplicate argument `{text}`: give it once"));
                    continue;
                }
                seen.push(text.clone());
                match text.as_str() {
                    "per" => {
                        attr.per_given = true;
                        attr.per = parse_per(&value, errors);
                    }
                    "key" => attr.key = parse_key(&value, errors),
                    "algorithm" => {
                        attr.algorithm_given = true;
                        attr.algorithm = parse_algorithm(&value, errors);
                    }
                    "scope" => attr.scope = parse_scope(&value, errors),
                    "burst" => attr.burst = parse_burst(&value, errors),
                    "cost" => attr.cost = parse_cost(&value, errors),
                    "count" => attr.count = parse_count(&value, errors),
                    "exempt" => attr.exempt = parse_function(&value, "exempt", "fn(&HttpRequest) -> bool", errors),
                    "dry_run" => attr.dry_run = parse_bool(&value, "dry_run", errors),
                    "enforce" => attr.enforce = parse_share(&value, errors),
                    "policy" => {
                        attr.policy = parse_function(
                            &value,
                            "policy",
                            "fn(&HttpRequest) -> Option<Policy>` or an `async fn(&HttpRequest) -> Option<Policy>",
                            errors,
                        )
                    }
                    "block" => attr.block = parse_block(&value, errors),
                    "penalty" => attr.penalty = parse_penalty(&value, errors),
                    "jitter" => attr.jitter = parse_jitter(&value, errors),
                    "delay" => attr.delay = parse_delay(&value, errors),
                    "crate" => attr.krate = parse_crate(&value, errors),
                    _ => errors.at(
                        &name,
                        format!("unknown argument `{text}`: expected one of {ARGUMENTS}"),
                    ),
                }
                if index == 0 {
                    errors.at(
                        &name,
                        "the maximum comes first: #[rate_limit(5, per = \"1m\")]",
                    );
                }
            }
        }
    }
    Some(attr)
}

/// The `crate = "..."` of an attribute, if it parses: the marker a stack is carried in must
/// be named through it before anything else is checked.
pub(crate) fn crate_path(tokens: proc_macro2::TokenStream) -> Option<syn::Path> {
    let raw = syn::parse2::<RawArgs>(tokens).ok()?;
    raw.0.into_iter().find_map(|arg| match arg {
        RawArg::Named { name, value } if name == "crate" => {
            parse_crate(&value, &mut Errors::default())
        }
        _ => None,
    })
}
