//! Parses one `#[rate_limit(MAX, per = "...", key = ..., algorithm = "...", scope = "...",
//! burst = N, crate = "...")]` into typed values, each kept with its span. Every value is
//! checked on its own here; what depends on several (and on the other limits of a stack) is
//! [`valid`](crate::valid)'s.

use proc_macro2::Span;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned as _;
use syn::{Expr, Ident, Lit, LitStr, Token};

use crate::errors::Errors;
use crate::period;

pub(crate) const ARGUMENTS: &str = "`per`, `key`, `algorithm`, `scope`, `burst`, `cost`, `count`, `exempt`, `dry_run`, `policy`, `crate`";
const KEYS: &str = "\"ip\", \"user\", \"global\", \"header:NAME\", or a path to a `fn(&HttpRequest) -> Option<String>`";

/// A value and the tokens it was written as.
#[derive(Clone)]
pub(crate) struct Spanned<T> {
    pub(crate) value: T,
    pub(crate) span: Span,
}

/// The counting algorithms, as the attribute names them.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Algorithm {
    SlidingWindow,
    FixedWindow,
    SlidingWindowCounter,
    TokenBucket,
}

impl Algorithm {
    const ALL: [Algorithm; 4] = [
        Algorithm::SlidingWindow,
        Algorithm::FixedWindow,
        Algorithm::SlidingWindowCounter,
        Algorithm::TokenBucket,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Algorithm::SlidingWindow => "sliding_window",
            Algorithm::FixedWindow => "fixed_window",
            Algorithm::SlidingWindowCounter => "sliding_window_counter",
            Algorithm::TokenBucket => "token_bucket",
        }
    }

    /// The variant of `limiter_core::Algorithm`.
    pub(crate) fn variant(self) -> &'static str {
        match self {
            Algorithm::SlidingWindow => "SlidingWindow",
            Algorithm::FixedWindow => "FixedWindow",
            Algorithm::SlidingWindowCounter => "SlidingWindowCounter",
            Algorithm::TokenBucket => "TokenBucket",
        }
    }

    /// The largest `max` with a window of `window_ms` (`limiter_core::Policy::max_limit_for`).
    pub(crate) fn max_limit(self, window_ms: u64) -> u64 {
        match self {
            Algorithm::SlidingWindow => u64::from(u16::MAX),
            Algorithm::SlidingWindowCounter => {
                ((1u64 << 24) - 1).min(((1u64 << 52) - 1) / window_ms)
            }
            Algorithm::FixedWindow | Algorithm::TokenBucket => u64::from(u32::MAX),
        }
    }
}

pub(crate) enum Max {
    Literal(u32),
    /// A `u32` const expression, checked at compile time by the expansion (a `const`).
    Expr(Box<Expr>),
}

pub(crate) enum Key {
    Ip,
    User,
    Global,
    Header(String),
    Function(syn::Path),
}

/// The units a request takes.
pub(crate) enum Cost {
    Literal(u32),
    /// A constant, by Rust's naming convention (`cost = BATCH`): checked when compiled.
    Const(syn::Path),
    Function(syn::Path),
}

/// Which requests count.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Count {
    All,
    Failures,
}

/// The window: milliseconds, and the text as written (stacked limits are named after it).
pub(crate) struct Window {
    pub(crate) ms: u64,
    pub(crate) text: String,
}

/// One attribute, parsed. Only `max` is always there: the rest are checked by `valid`.
pub(crate) struct LimitAttr {
    /// The whole attribute, blamed for what is missing.
    pub(crate) span: Span,
    pub(crate) max: Option<Spanned<Max>>,
    pub(crate) per: Option<Spanned<Window>>,
    pub(crate) key: Option<Spanned<Key>>,
    pub(crate) algorithm: Option<Spanned<Algorithm>>,
    pub(crate) scope: Option<Spanned<String>>,
    pub(crate) burst: Option<Spanned<u32>>,
    pub(crate) cost: Option<Spanned<Cost>>,
    pub(crate) count: Option<Spanned<Count>>,
    pub(crate) exempt: Option<Spanned<syn::Path>>,
    pub(crate) dry_run: Option<Spanned<bool>>,
    pub(crate) policy: Option<Spanned<syn::Path>>,
    pub(crate) krate: Option<syn::Path>,
    /// Whether `per` was written at all (even with a bad value).
    pub(crate) per_given: bool,
    /// Whether `algorithm` was written at all (even with a bad value).
    pub(crate) algorithm_given: bool,
}

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
        policy: None,
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
                    "policy" => {
                        attr.policy = parse_function(
                            &value,
                            "policy",
                            "fn(&HttpRequest) -> Option<Policy>",
                            errors,
                        )
                    }
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

fn parse_max(expr: Expr, errors: &mut Errors) -> Option<Spanned<Max>> {
    let span = expr.span();
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
            Ok(value) => Some(Spanned {
                value: Max::Literal(value),
                span,
            }),
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
    Some(Spanned {
        value: Max::Expr(Box::new(expr)),
        span,
    })
}

fn parse_per(value: &Expr, errors: &mut Errors) -> Option<Spanned<Window>> {
    let text = string(value, "`per` (the window, e.g. \"1m\")", errors)?;
    match period::parse(&text.value()) {
        Ok(ms) => Some(Spanned {
            value: Window {
                ms,
                text: text.value(),
            },
            span: text.span(),
        }),
        Err(message) => {
            errors.at(&text, message);
            None
        }
    }
}

fn parse_key(value: &Expr, errors: &mut Errors) -> Option<Spanned<Key>> {
    let span = value.span();
    if let Expr::Path(path) = value {
        // `key = ip` means the key kind, written without its quotes: a function of that
        // name would be a surprising coincidence, and its error a confusing cascade.
        if let Some(ident) = path.path.get_ident() {
            let name = ident.to_string();
            if ["ip", "user", "global"].contains(&name.as_str()) {
                errors.at(
                    ident,
                    format!("the key kinds are strings: write key = \"{name}\""),
                );
                return None;
            }
        }
        if path.qself.is_none() {
            return Some(Spanned {
                value: Key::Function(path.path.clone()),
                span,
            });
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
    let value = match key.as_str() {
        "ip" => Key::Ip,
        "user" => Key::User,
        "global" => Key::Global,
        _ => match key.strip_prefix("header:") {
            Some(name) if is_token(name) => Key::Header(name.to_ascii_lowercase()),
            Some(name) => {
                errors.at(
                    text,
                    format!(
                        "`{name}` is not a valid header name: use letters, digits and `-`, e.g. \"header:x-api-key\""
                    ),
                );
                return None;
            }
            None => {
                let meant = match key_suggestion(&key) {
                    Some(meant) => format!("; did you mean \"{meant}\"?"),
                    None => String::new(),
                };
                errors.at(
                    text,
                    format!("unknown key \"{key}\": expected {KEYS}{meant}"),
                );
                return None;
            }
        },
    };
    Some(Spanned { value, span })
}

/// The key a slip most likely stands for.
fn key_suggestion(key: &str) -> Option<String> {
    let plain: String = key
        .to_ascii_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    match plain.as_str() {
        "ipaddress" | "ipaddr" | "address" | "addr" | "remoteaddr" | "remoteip" | "clientip"
        | "peer" | "peeraddr" | "realip" => Some("ip".to_string()),
        "userid" | "users" | "username" | "session" | "account" => Some("user".to_string()),
        "all" | "everyone" | "shared" | "none" => Some("global".to_string()),
        // A header's name: it needs its prefix.
        _ if key.contains('-') && is_token(key) => Some(format!("header:{key}")),
        _ if key.to_ascii_lowercase().starts_with("header") => {
            let name = key[6..].trim_start_matches([':', '=', ' ', '_']);
            is_token(name).then(|| format!("header:{name}"))
        }
        _ => None,
    }
}

/// An HTTP token (RFC 9110): what a header name may be made of.
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

fn parse_algorithm(value: &Expr, errors: &mut Errors) -> Option<Spanned<Algorithm>> {
    let text = string(value, "`algorithm`", errors)?;
    let name = text.value();
    if let Some(algorithm) = Algorithm::ALL.into_iter().find(|a| a.name() == name) {
        return Some(Spanned {
            value: algorithm,
            span: text.span(),
        });
    }
    let meant = match algorithm_suggestion(&name) {
        Some(meant) => format!("; did you mean \"{}\"?", meant.name()),
        None => String::new(),
    };
    errors.at(
        &text,
        format!(
            "unknown algorithm \"{name}\": expected one of \"sliding_window\" (exact, the default), \"fixed_window\", \"sliding_window_counter\", \"token_bucket\"{meant}"
        ),
    );
    None
}

/// The algorithm a slip (a dash, a capital, a common other name) most likely stands for.
fn algorithm_suggestion(name: &str) -> Option<Algorithm> {
    let plain: String = name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if let Some(algorithm) = Algorithm::ALL.into_iter().find(|a| a.name() == plain) {
        return Some(algorithm);
    }
    match plain.replace('_', "").as_str() {
        "sliding" | "slidinglog" | "log" | "slidingwindowlog" | "exact" => {
            Some(Algorithm::SlidingWindow)
        }
        "fixed" | "window" | "fixedwindowcounter" => Some(Algorithm::FixedWindow),
        "counter" | "slidingcounter" | "approximate" => Some(Algorithm::SlidingWindowCounter),
        "bucket" | "tokens" | "gcra" | "leakybucket" | "leaky" => Some(Algorithm::TokenBucket),
        _ => None,
    }
}

fn parse_scope(value: &Expr, errors: &mut Errors) -> Option<Spanned<String>> {
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
    Some(Spanned {
        value: scope,
        span: text.span(),
    })
}

fn parse_burst(value: &Expr, errors: &mut Errors) -> Option<Spanned<u32>> {
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
        Ok(burst) => Some(Spanned {
            value: burst,
            span: int.span(),
        }),
        Err(_) => {
            errors.at(int, "`burst` must fit in a u32");
            None
        }
    }
}

fn parse_cost(value: &Expr, errors: &mut Errors) -> Option<Spanned<Cost>> {
    let span = value.span();
    match value {
        Expr::Lit(syn::ExprLit {
            lit: Lit::Int(int), ..
        }) => match int.base10_parse::<u32>() {
            Ok(0) => {
                errors.at(int, "`cost` must be at least 1: a request that costs nothing is not counted; leave the limit off it");
                None
            }
            Ok(units) => Some(Spanned {
                value: Cost::Literal(units),
                span,
            }),
            Err(_) => {
                errors.at(int, "`cost` must fit in a u32");
                None
            }
        },
        Expr::Path(path) if path.qself.is_none() => {
            let path = path.path.clone();
            let constant = path
                .segments
                .last()
                .is_some_and(|last| is_constant_name(&last.ident.to_string()));
            Some(Spanned {
                value: if constant {
                    Cost::Const(path)
                } else {
                    Cost::Function(path)
                },
                span,
            })
        }
        _ => {
            errors.at(
                value,
                "`cost` is an integer (cost = 10), a constant (cost = BATCH) or a path to a `fn(&HttpRequest) -> u32`",
            );
            None
        }
    }
}

/// `SCREAMING_SNAKE_CASE`: a constant, as Rust names them.
fn is_constant_name(name: &str) -> bool {
    name.chars().any(|c| c.is_ascii_uppercase())
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

fn parse_count(value: &Expr, errors: &mut Errors) -> Option<Spanned<Count>> {
    let text = string(value, "`count` (\"all\" or \"failures\")", errors)?;
    let count = match text.value().as_str() {
        "all" => Count::All,
        "failures" => Count::Failures,
        other => {
            let plain = other.to_ascii_lowercase();
            let meant = if plain.starts_with("fail") || plain.contains("error") {
                "; did you mean \"failures\"?"
            } else {
                ""
            };
            errors.at(
                &text,
                format!("unknown count \"{other}\": expected \"all\" (the default) or \"failures\" (only responses with status 400 or above count){meant}"),
            );
            return None;
        }
    };
    Some(Spanned {
        value: count,
        span: text.span(),
    })
}

fn parse_bool(value: &Expr, name: &str, errors: &mut Errors) -> Option<Spanned<bool>> {
    if let Expr::Lit(syn::ExprLit {
        lit: Lit::Bool(flag),
        ..
    }) = value
    {
        return Some(Spanned {
            value: flag.value,
            span: flag.span(),
        });
    }
    errors.at(value, format!("`{name}` must be `true` or `false`"));
    None
}

fn parse_function(
    value: &Expr,
    name: &str,
    signature: &str,
    errors: &mut Errors,
) -> Option<Spanned<syn::Path>> {
    if let Expr::Path(path) = value {
        if path.qself.is_none() {
            return Some(Spanned {
                value: path.path.clone(),
                span: value.span(),
            });
        }
    }
    errors.at(value, format!("`{name}` must be a path to a `{signature}`"));
    None
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
