//! The checks that look at several arguments at once — within one attribute, and across the
//! limits stacked on one handler — turning parsed attributes into complete limits.

use crate::ast::Escalation;
use crate::ast::{Algorithm, Cost, Count, Key, LimitAttr, Max, Spanned, Window};
use crate::errors::Errors;

/// The longest a token bucket may take to refill (`limiter_core::Policy::MAX_REFILL`).
const MAX_REFILL_NS: u128 = 49 * 86_400 * 1_000_000_000;

/// One limit, complete and consistent.
pub(crate) struct Limit {
    pub(crate) max: Spanned<Max>,
    pub(crate) window: Window,
    pub(crate) key: Key,
    pub(crate) algorithm: Algorithm,
    pub(crate) scope: Option<Spanned<String>>,
    pub(crate) burst: Option<u32>,
    pub(crate) cost: Option<Spanned<Cost>>,
    pub(crate) failures_only: bool,
    /// `count = path`.
    pub(crate) count_when: Option<syn::Path>,
    pub(crate) exempt: Option<syn::Path>,
    pub(crate) dry_run: bool,
    /// The share of clients it is enforced on, in millionths, when not all.
    pub(crate) enforce: Option<u32>,
    pub(crate) policy: Option<syn::Path>,
    /// `block` in ms, and its escalation.
    pub(crate) penalty: Option<(u64, Option<Escalation>)>,
    /// `jitter`, in ms.
    pub(crate) jitter: Option<u64>,
    /// `delay`, in ms.
    pub(crate) delay: Option<u64>,
}

/// Checks one attribute on its own; `None` when something is wrong (reported in `errors`)
/// or missing.
pub(crate) fn limit(attr: LimitAttr, errors: &mut Errors) -> Option<Limit> {
    let before = errors.count();
    if !attr.per_given {
        errors.at(
            attr.span,
            "missing `per`: say the window, e.g. #[rate_limit(5, per = \"1m\")]",
        );
    }
    // A misspelled algorithm is reported once, by the parser: checks that depend on the
    // algorithm wait until it is known, rather than blame `burst` for it.
    let calendar = attr.per.as_ref().and_then(|per| per.value.calendar);
    if let (Some(_), Some(algorithm)) = (calendar, &attr.algorithm) {
        errors.at(
            algorithm.span,
            "a calendar quota (per = \"day\", \"week\" or \"month\") is counted in periods of the calendar, reset at their boundary: it takes no `algorithm`; remove it, or give a rolling window such as per = \"7d\"",
        );
    }
    let algorithm = match (&attr.algorithm, attr.algorithm_given, calendar) {
        (_, _, Some(_)) => Some(Algorithm::FixedWindow),
        (Some(algorithm), _, None) => Some(algorithm.value),
        (None, false, None) => Some(Algorithm::SlidingWindow),
        (None, true, None) => None,
    };
    if let (Some(delay), Some(algorithm)) = (&attr.delay, algorithm) {
        if algorithm != Algorithm::TokenBucket {
            errors.at(
                delay.span,
                format!(
                    "`delay` needs algorithm = \"token_bucket\": a bucket says exactly when a refused request would be admitted and holds its place until then (this limit uses {}); set the algorithm, or remove `delay`",
                    algorithm.name()
                ),
            );
        }
    }
    if let (Some(burst), Some(algorithm)) = (&attr.burst, algorithm) {
        if algorithm != Algorithm::TokenBucket {
            errors.at(
                burst.span,
                format!(
                    "`burst` only applies to algorithm = \"token_bucket\" (this limit uses {}): remove it or set the algorithm",
                    algorithm.name()
                ),
            );
        }
    }
    if let (
        Some(Spanned {
            value: Max::Literal(max),
            span: max_span,
        }),
        Some(per),
        Some(algorithm),
    ) = (&attr.max, &attr.per, algorithm)
    {
        let limit = algorithm.max_limit(per.value.ms);
        if u64::from(*max) > limit {
            let span = attr.algorithm.as_ref().map_or(*max_span, |a| a.span);
            let hint = match algorithm {
                Algorithm::SlidingWindowCounter => {
                    "use a shorter window, or fixed_window or token_bucket"
                }
                _ => "use a shorter window, or sliding_window_counter or token_bucket",
            };
            errors.at(
                span,
                format!(
                    "{} counts at most {limit} requests per window of {}, got {max}: {hint}",
                    algorithm.name(),
                    per.value.text
                ),
            );
        }
        if let Some(burst) = &attr.burst {
            let interval_ns = (u128::from(per.value.ms) * 1_000_000).div_ceil(u128::from(*max));
            if u128::from(burst.value) * interval_ns > MAX_REFILL_NS {
                errors.at(
                    burst.span,
                    "this burst takes more than 49 days to refill at this rate: lower it",
                );
            }
        }
    }
    // A literal cost beyond what the limit admits at once would never be admitted.
    if let (
        Some(Spanned {
            value: Cost::Literal(cost),
            span,
        }),
        Some(Spanned {
            value: Max::Literal(max),
            ..
        }),
        Some(algorithm),
    ) = (&attr.cost, &attr.max, algorithm)
    {
        let capacity = match (algorithm, &attr.burst) {
            (Algorithm::TokenBucket, Some(burst)) => burst.value,
            _ => *max,
        };
        if cost > &capacity {
            errors.at(
                *span,
                format!(
                    "a cost of {cost} is more than this limit ever admits at once ({capacity}): no request could pass; lower it, or raise the maximum{}",
                    if algorithm == Algorithm::TokenBucket { " or the burst" } else { "" }
                ),
            );
        }
    }
    if let (
        Some(enforce),
        Some(Spanned {
            value: Key::Global, ..
        }),
    ) = (&attr.enforce, &attr.key)
    {
        errors.at(
            enforce.span,
            "`enforce` takes a share of the clients, and `key = \"global\"` counts everyone as one: the share would enforce on all or none; use `dry_run = true` to try the limit out",
        );
    }
    if let (Some(enforce), Some(Spanned { value: true, .. })) = (&attr.enforce, &attr.dry_run) {
        errors.at(
            enforce.span,
            "`dry_run = true` enforces the limit on no client, and `enforce` on a share of them: give one of the two (`enforce = \"0%\"` is a dry run)",
        );
    }
    if let (Some(penalty), None) = (&attr.penalty, &attr.block) {
        errors.at(
            penalty.span,
            "`penalty` makes a repeat offender's block longer, and this limit blocks no one: add the first block's length, e.g. block = \"15m\"",
        );
    }
    if let (Some(block), Some(per), Some(algorithm)) = (&attr.block, &attr.per, algorithm) {
        block_shows(block, per, algorithm, attr.max.as_ref(), errors);
    }
    names_self(&attr, errors);
    if errors.count() != before {
        return None;
    }
    Some(Limit {
        max: attr.max?,
        window: attr.per?.value,
        key: attr.key.map_or(Key::Ip, |k| k.value),
        algorithm: algorithm?,
        scope: attr.scope,
        burst: attr.burst.map(|b| b.value),
        cost: attr.cost,
        failures_only: attr
            .count
            .as_ref()
            .is_some_and(|c| matches!(c.value, Count::Failures)),
        count_when: match &attr.count {
            Some(Spanned {
                value: Count::Function(path),
                ..
            }) => Some(path.clone()),
            _ => None,
        },
        exempt: attr.exempt.map(|e| e.value),
        dry_run: attr.dry_run.is_some_and(|d| d.value),
        enforce: attr
            .enforce
            .map(|e| e.value)
            .filter(|&share| share < 1_000_000),
        policy: attr.policy.map(|p| p.value),
        penalty: attr
            .block
            .map(|block| (block.value, attr.penalty.map(|p| p.value))),
        jitter: attr.jitter.map(|j| j.value),
        delay: attr.delay.map(|d| d.value),
    })
}

/// A `block` that a rejected client's own wait would hide: a block never ends before the
/// limit admits the client again (it is stretched to that wait), so one no longer than the
/// window (a burst's wait under a window algorithm) or than a token's return (a bucket's) is
/// a no-op in the common case — an error on it, with the fix. A calendar quota takes any
/// block: rejected late in its period, a client waits less than the block.
fn block_shows(
    block: &Spanned<u64>,
    per: &Spanned<Window>,
    algorithm: Algorithm,
    max: Option<&Spanned<Max>>,
    errors: &mut Errors,
) {
    if per.value.calendar.is_some() {
        return;
    }
    let (shortest, waits) = match (algorithm, max.map(|m| &m.value)) {
        (Algorithm::TokenBucket, Some(Max::Literal(max))) => {
            let token = per.value.ms / u64::from(*max).max(1);
            (token, format!("a client this bucket rejects waits for a token to come back (the window over the maximum: {})", span_text(token)))
        }
        (Algorithm::TokenBucket, _) => return,
        _ => (per.value.ms, format!("after a burst, a client this limit rejects waits the whole window ({}) to be admitted again", span_text(per.value.ms))),
    };
    if block.value <= shortest {
        errors.at(
            block.span,
            format!(
                "`block` must outlast the wait the limit already makes: {waits}, and a block never ends before that, so this one would do nothing; make it longer (e.g. block = \"{}\"), or remove it",
                span_text(shortest.saturating_mul(5).max(60_000)),
            ),
        );
    }
}

/// A duration in ms as the attribute writes it: `"90s"`, `"5m"`, `"1h"`.
fn span_text(ms: u64) -> String {
    match ms {
        ms if ms % 3_600_000 == 0 => format!("{}h", ms / 3_600_000),
        ms if ms % 60_000 == 0 => format!("{}m", ms / 60_000),
        ms if ms % 1_000 == 0 => format!("{}s", ms / 1_000),
        ms => format!("{ms}ms"),
    }
}

/// `Self` in an argument (`key = Self::client`, `cost = Self::COST`, a maximum of
/// `Self::MAX`): the limits are built in items beside the handler, outside its `impl`
/// block, where `Self` names nothing — an error on it, with the fix.
fn names_self(attr: &LimitAttr, errors: &mut Errors) {
    let mut paths: Vec<&syn::Path> = Vec::new();
    if let Some(Spanned {
        value: Key::Function(path),
        ..
    }) = &attr.key
    {
        paths.push(path);
    }
    if let Some(Spanned {
        value: Cost::Const(path) | Cost::Function(path),
        ..
    }) = &attr.cost
    {
        paths.push(path);
    }
    paths.extend(attr.exempt.as_ref().map(|e| &e.value));
    if let Some(Spanned {
        value: Count::Function(path),
        ..
    }) = &attr.count
    {
        paths.push(path);
    }
    paths.extend(attr.policy.as_ref().map(|p| &p.value));
    let mut spans: Vec<proc_macro2::Span> = paths
        .iter()
        .filter_map(|path| path.segments.first())
        .filter(|segment| segment.ident == "Self")
        .map(|segment| segment.ident.span())
        .collect();
    if let Some(Spanned {
        value: Max::Expr(expr),
        ..
    }) = &attr.max
    {
        spans.extend(self_in(quote::ToTokens::to_token_stream(&**expr)));
    }
    for span in spans {
        errors.at(
            span,
            "`Self` cannot be named in #[rate_limit]: its limits are built beside the handler, \
             outside the `impl` block, where `Self` names nothing; write the type's name \
             instead (`Admin::client` for `Self::client`)",
        );
    }
}

/// Where `Self` appears in `tokens`.
fn self_in(tokens: proc_macro2::TokenStream) -> Vec<proc_macro2::Span> {
    let mut spans = Vec::new();
    for tree in tokens {
        match tree {
            proc_macro2::TokenTree::Ident(ident) if ident == "Self" => spans.push(ident.span()),
            proc_macro2::TokenTree::Group(group) => spans.extend(self_in(group.stream())),
            _ => {}
        }
    }
    spans
}

/// Checks the limits stacked on one handler together: each scope once.
pub(crate) fn stack(limits: &[Limit], errors: &mut Errors) {
    for (index, limit) in limits.iter().enumerate() {
        let Some(scope) = &limit.scope else { continue };
        if limits[..index]
            .iter()
            .any(|l| l.scope.as_ref().map(|s| &s.value) == Some(&scope.value))
        {
            errors.at(
                scope.span,
                format!(
                    "scope \"{}\" is given to two limits of this handler: a scope is one budget, so give each limit its own",
                    scope.value
                ),
            );
        }
    }
}

/// Names each limit in the header fields: the function's name for the first, then
/// `NAME-WINDOW` (or the scope, when one is given), made unique within the handler.
pub(crate) fn field_names(fn_name: &str, limits: &[Limit]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (index, limit) in limits.iter().enumerate() {
        let mut name = match (&limit.scope, index) {
            (Some(scope), _) => scope.value.clone(),
            (None, 0) => fn_name.to_string(),
            (None, _) => format!("{fn_name}-{}", limit.window.text),
        };
        if names.contains(&name) {
            name = format!("{name}-{}", index + 1);
        }
        names.push(name);
    }
    names
}
