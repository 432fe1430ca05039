//! Parses `#[rate_limit(MAX, per = "...", key = ..., algorithm = "...", scope = "...",
//! burst = N)]`, keeping each value with its span and checking every value on its own.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{Expr, Ident, Lit, LitStr, Token};

use crate::errors::Errors;
use crate::period;

const ARGUMENTS: &str = "`per`, `key`, `algorithm`, `scope`, `burst`, `crate`";
const ALGORITHMS: [&str; 4] = [
    "sliding_window",
    "fixed_window",
    "sliding_window_counter",
    "token_bucket",
];
const KEYS: &str = "\"ip\", \"user\", \"global\", \"header:NAME\", or a path to a `fn(&HttpRequest) -> Option<String>`";

/// The largest `max` per algorithm (`limiter_core::Policy::max_limit`).
pub(crate) fn max_limit(algorithm: &str) -> u64 {
    match algorithm {
        "sliding_window" => u64::from(u16::MAX),
        "sliding_window_counter" => (1 << 24) - 1,
        _ => u64::from(u32::MAX),
    }
}

/// One limit, validated.
pub(crate) struct LimitArgs {
    pub(crate) max: Max,
    pub(crate) window_ms: u64,
    pub(crate) window_text: String,
    pub(crate) key: Key,
    pub(crate) algorithm: String,
    pub(crate) scope: Option<String>,
    pub(crate) burst: Option<u32>,
    pub(crate) krate: Option<syn::Path>,
}

pub(crate) enum Max {
    Literal(u32),
    /// A `u32` const expression, checked at compile time by the expansion.
    Expr(Box<Expr>),
}

pub(crate) enum Key {
    Ip,
    User,
    Global,
    Header(String),
    Function(syn::Path),
}

/// One comma-separated piece of the attribute, as written.
enum RawArg {
    Positional(Expr),
    Named { name: Ident, value: Expr },
}

impl Parse for RawArg {
    fn parse(input: ParseStream<'_>) -> syn::Result<RawArg> {
        if (input.peek(Ident::peek_any)) && input.peek2(Token![=]) && !input.peek2(Token![==]) {
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

/// Parses and checks one attribute's arguments. `attribute` is the span to blame for a
/// missing argument. Returns `None` when anything is wrong; every problem is in `errors`.
pub(crate) fn parse(
    tokens: proc_macro2::TokenStream,
    attribute: Span,
    errors: &mut Errors,
) -> Option<LimitArgs> {
    let raw = match syn::parse2::<RawArgs>(tokens) {
        Ok(raw) => raw.0,
        Err(error) => {
            errors.push(error);
            return None;
        }
    };
    let errors_before = errors.count();

    let mut max = None;
    let mut per: Option<(u64, String)> = None;
    let mut key = None;
    let mut algorithm: Option<(String, Span)> = None;
    let mut scope = None;
    let mut burst: Option<(u32, Span)> = None;
    let mut krate = None;
    let mut seen: Vec<String> = Vec::new();

    let raw_len = raw.len();
    for (index, arg) in raw.into_iter().enumerate() {
        match arg {
            RawArg::Positional(expr) if index == 0 => max = parse_max(expr, errors),
            RawArg::Positional(expr) => {
                errors.at(
                    &expr,
                    format!(
                        "unexpected value: only the maximum comes without a name; the others are `name = value` with name one of {ARGUMENTS}"
                    ),
                );
            }
            RawArg::Named { name, value } => {
                let text = name.to_string();
                if seen.contains(&text) {
                    errors.at(&name, format!("duplicate argument `{text}`: give it once"));
                    continue;
                }
                seen.push(text.clone());
                match text.as_str() {
                    "per" => per = parse_per(&value, errors),
                    "key" => key = parse_key(&value, errors),
                    "algorithm" => algorithm = parse_algorithm(&value, errors),
                    "scope" => scope = parse_scope(&value, errors),
                    "burst" => burst = parse_burst(&value, errors),
                    "crate" => krate = parse_crate(&value, errors),
                    _ => {
                        errors.at(
                            &name,
                            format!("unknown argument `{text}`: expected one of {ARGUMENTS}"),
                        );
                    }
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
    if raw_len == 0 {
        errors.at(
            attribute,
            "missing the maximum and the window: write e.g. #[rate_limit(5, per = \"1m\")]",
        );
        return None;
    }
    if !seen.iter().any(|s| s == "per") {
        errors.at(
            attribute,
            "missing `per`: say the window, e.g. #[rate_limit(5, per = \"1m\")]",
        );
    }
    let algorithm_name = algorithm
        .as_ref()
        .map_or("sliding_window", |(name, _)| name.as_str())
        .to_string();
    if let Some((_, span)) = burst {
        if algorithm_name != "token_bucket" {
            errors.at(
                span,
                format!(
                    "`burst` only applies to algorithm = \"token_bucket\" (this limit uses {algorithm_name}): remove it or set the algorithm"
                ),
            );
        }
    }
    if let Some(Max::Literal(value)) = &max {
        let limit = max_limit(&algorithm_name);
        if u64::from(*value) > limit {
            let span = algorithm.as_ref().map_or(attribute, |(_, span)| *span);
            errors.at(
                span,
                format!(
                    "{algorithm_name} counts at most {limit} requests per window, got {value}: use a shorter window, or sliding_window_counter or token_bucket"
                ),
            );
        }
        if let (Some((burst, span)), Some((window_ms, _))) = (burst, &per) {
            let interval_ns = (u128::from(*window_ms) * 1_000_000).div_ceil(u128::from(*value));
            if u128::from(burst) * interval_ns > 100 * 365 * 86_400 * 1_000_000_000 {
                errors.at(
                    span,
                    "this burst takes more than 100 years to refill: lower it",
                );
            }
        }
    }
    if errors.count() != errors_before {
        return None;
    }
    let (window_ms, window_text) = per?;
    Some(LimitArgs {
        max: max?,
        window_ms,
        window_text,
        key: key.unwrap_or(Key::Ip),
        algorithm: algorithm_name,
        scope,
        burst: burst.map(|(value, _)| value),
        krate,
    })
}

fn string(value: &Expr, what: &str, errors: &mut Errors) -> Option<LitStr> {
    if let Expr::Lit(syn::ExprLit {
        lit: Lit::Str(text),
        ..
    }) = value
    {
        return Some(text.clone());
    }
    errors.at(value, format!("{what} must be a string literal"));
    None
}

fn parse_max(expr: Expr, errors: &mut Errors) -> Option<Max> {
    if let Expr::Lit(syn::ExprLit {
        lit: Lit::Int(int), ..
    }) = &expr
    {
        return match int.base10_parse::<u32>() {
            Ok(0) => {
                errors.at(
                    int,
                    "the maximum must be at least 1: a limit of 0 admits nothing; to close a route, remove it",
                );
                None
            }
            Ok(value) => Some(Max::Literal(value)),
            Err(_) => {
                errors.at(int, "the maximum must fit in a u32 (at most 4294967295)");
                None
            }
        };
    }
    if let Expr::Lit(lit) = &expr {
        errors.at(
            lit,
            "the maximum must be an integer, e.g. 5, or a u32 constant",
        );
        return None;
    }
    Some(Max::Expr(Box::new(expr)))
}

fn parse_per(value: &Expr, errors: &mut Errors) -> Option<(u64, String)> {
    let text = string(value, "`per` (the window, e.g. \"1m\")", errors)?;
    match period::parse(&text.value()) {
        Ok(ms) => Some((ms, text.value())),
        Err(message) => {
            errors.at(&text, message);
            None
        }
    }
}

fn parse_key(value: &Expr, errors: &mut Errors) -> Option<Key> {
    if let Expr::Path(path) = value {
        if path.qself.is_none() {
            return Some(Key::Function(path.path.clone()));
        }
    }
    let Expr::Lit(syn::ExprLit {
        lit: Lit::Str(text),
        ..
    }) = value
    else {
        errors.at(value, format!("`key` must be one of {KEYS}"));
        return None;
    };
    let key = text.value();
    match key.as_str() {
        "ip" => Some(Key::Ip),
        "user" => Some(Key::User),
        "global" => Some(Key::Global),
        _ => match key.strip_prefix("header:") {
            Some(name) if is_token(name) => Some(Key::Header(name.to_ascii_lowercase())),
            Some(name) => {
                errors.at(
                    text,
                    format!(
                        "`{name}` is not a valid header name: use letters, digits and `-`, e.g. \"header:x-api-key\""
                    ),
                );
                None
            }
            None => {
                errors.at(text, format!("unknown key \"{key}\": expected {KEYS}"));
                None
            }
        },
    }
}

/// An HTTP token (RFC 9110): what a header name may be made of.
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn parse_algorithm(value: &Expr, errors: &mut Errors) -> Option<(String, Span)> {
    let text = string(value, "`algorithm`", errors)?;
    let name = text.value();
    if ALGORITHMS.contains(&name.as_str()) {
        return Some((name, text.span()));
    }
    errors.at(
        &text,
        format!(
            "unknown algorithm \"{name}\": expected one of \"sliding_window\" (exact, the default), \"fixed_window\", \"sliding_window_counter\", \"token_bucket\""
        ),
    );
    None
}

fn parse_scope(value: &Expr, errors: &mut Errors) -> Option<String> {
    let text = string(
        value,
        "`scope` (a name shared by the handlers that share a budget)",
        errors,
    )?;
    let scope = text.value();
    let printable = scope
        .bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\');
    if scope.is_empty() || !printable {
        errors.at(
            &text,
            "`scope` must be a non-empty name of printable ASCII without quotes or backslashes, e.g. \"auth\"",
        );
        return None;
    }
    Some(scope)
}

fn parse_burst(value: &Expr, errors: &mut Errors) -> Option<(u32, Span)> {
    let Expr::Lit(syn::ExprLit {
        lit: Lit::Int(int), ..
    }) = value
    else {
        errors.at(value, "`burst` must be an integer literal, e.g. burst = 20");
        return None;
    };
    match int.base10_parse::<u32>() {
        Ok(0) => {
            errors.at(int, "`burst` must be at least 1");
            None
        }
        Ok(burst) => Some((burst, int.span())),
        Err(_) => {
            errors.at(int, "`burst` must fit in a u32");
            None
        }
    }
}

fn parse_crate(value: &Expr, errors: &mut Errors) -> Option<syn::Path> {
    let text = string(
        value,
        "`crate` (the path of the limiter crate, e.g. \"::limiter\")",
        errors,
    )?;
    match text.parse::<syn::Path>() {
        Ok(path) => Some(path),
        Err(_) => {
            errors.at(&text, "`crate` must be a path, e.g. \"::limiter\"");
            None
        }
    }
}
