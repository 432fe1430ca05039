//! `key = ...`: which client a limit counts, parsed and checked, with the key a slip most
//! likely stands for — or, for a part of the request no key reads, how to read it.

use syn::spanned::Spanned as _;
use syn::{Expr, Lit};

use crate::ast::{Key, Spanned};
use crate::errors::Errors;

// The attribute is the same on both front ends; a key function's request is not.
const KEYS: &str = "\"ip\", \"user\", \"global\", \"header:NAME\", or a path to a key function: a `fn(&HttpRequest) -> Option<String>` (or an `async fn` of that) on actix, a `fn(&http::request::Parts) -> Option<String>` on axum";

pub(crate) fn parse_key(value: &Expr, errors: &mut Errors) -> Option<Spanned<Key>> {
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
                    None => read_by_a_function(&key),
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
        // Written in capitals: the keys are lowercase.
        "ip" | "user" | "global" if plain != key => Some(plain),
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

/// For a key of a part of the request no key reads (a cookie, a query parameter, a path
/// segment): how to read it — with a key function.
fn read_by_a_function(key: &str) -> String {
    let part = key
        .split([':', '='])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    let what = match part.as_str() {
        "cookie" => "a cookie",
        "query" | "param" | "parameter" => "a query parameter",
        "path" | "segment" => "a path segment",
        _ => return String::new(),
    };
    format!(
        "; {what} is read by a key function: key = path::to::read, a `fn(&HttpRequest) -> \
         Option<String>` returning it (None: counted by address)"
    )
}

/// An HTTP token (RFC 9110): what a header name may be made of.
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}
