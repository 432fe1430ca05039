//! Each value of the attribute, parsed and checked on its own, with the fix in words when
//! it is wrong: the maximum, the window, the algorithm, the scope, the burst, the
//! cost, the count, flags, functions and the crate path (the key's in `key.rs`).

use syn::spanned::Spanned as _;
use syn::{Expr, Lit, LitStr};

use crate::ast::{Algorithm, Cost, Count, Max, Spanned, Window};
use crate::errors::Errors;
use crate::period;

pub(crate) fn string(value: &Expr, what: &str, errors: &mut Errors) -> Option<LitStr> {
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

pub(crate) fn parse_max(expr: Expr, errors: &mut Errors) -> Option<Spanned<Max>> {
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

pub(crate) fn parse_per(value: &Expr, errors: &mut Errors) -> Option<Spanned<Window>> {
    // A bare number of seconds, say: the unit is not guessed, but shown.
    if let Expr::Lit(syn::ExprLit {
        lit: Lit::Int(int), ..
    }) = value
    {
        let n = int.base10_digits();
        errors.at(
            value,
            format!(
                "`per` is a string with a unit: per = \"{n}s\" for {n} seconds, \"{n}m\" for \
                 minutes (units ms, s, m, h, d)"
            ),
        );
        return None;
    }
    let text = string(value, "`per` (the window, e.g. \"1m\")", errors)?;
    if let Some((period, ms)) = period::calendar(&text.value()) {
        return Some(Spanned {
            value: Window {
                ms,
                text: text.value(),
                calendar: Some(period),
            },
            span: text.span(),
        });
    }
    match period::parse(&text.value()) {
        Ok(ms) => Some(Spanned {
            value: Window {
                ms,
                text: text.value(),
                calendar: None,
            },
            span: text.span(),
        }),
        Err(message) => {
            errors.at(&text, message);
            None
        }
    }
}

pub(crate) fn parse_algorithm(value: &Expr, errors: &mut Errors) -> Option<Spanned<Algorithm>> {
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

pub(crate) fn parse_scope(value: &Expr, errors: &mut Errors) -> Option<Spanned<String>> {
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

pub(crate) fn parse_burst(value: &Expr, errors: &mut Errors) -> Option<Spanned<u32>> {
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

pub(crate) fn parse_cost(value: &Expr, errors: &mut Errors) -> Option<Spanned<Cost>> {
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

pub(crate) fn parse_count(value: &Expr, errors: &mut Errors) -> Option<Spanned<Count>> {
    if let Expr::Path(path) = value {
        if path.qself.is_none() {
            return Some(Spanned {
                value: Count::Function(path.path.clone()),
                span: value.span(),
            });
        }
    }
    let text = string(
        value,
        "`count` (\"all\", \"failures\", or a path to a `fn(StatusCode) -> bool`)",
        errors,
    )?;
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

pub(crate) fn parse_bool(value: &Expr, name: &str, errors: &mut Errors) -> Option<Spanned<bool>> {
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

pub(crate) fn parse_function(
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

pub(crate) fn parse_crate(value: &Expr, errors: &mut Errors) -> Option<syn::Path> {
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
