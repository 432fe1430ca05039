//! What one `#[rate_limit(...)]` says, as typed values, each kept with its span: what
//! [`args`](crate::args) parses the attribute into, and [`valid`](crate::valid) checks.

use proc_macro2::Span;
use syn::Expr;

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
    pub(crate) const ALL: [Algorithm; 4] = [
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
#[derive(Clone)]
pub(crate) enum Count {
    All,
    Failures,
    /// `count = path`: a `fn(StatusCode) -> bool` says which responses count.
    Function(syn::Path),
}

/// The window: milliseconds, and the text as written (stacked limits are named after it);
/// for a calendar quota (`per = "month"`), its period's name (`Day`, `Week`, `Month`) and
/// its longest length.
pub(crate) struct Window {
    pub(crate) ms: u64,
    pub(crate) text: String,
    pub(crate) calendar: Option<&'static str>,
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
    /// `enforce = "10%"`, in millionths of the clients.
    pub(crate) enforce: Option<Spanned<u32>>,
    pub(crate) policy: Option<Spanned<syn::Path>>,
    /// `block = "15m"`, in ms.
    pub(crate) block: Option<Spanned<u64>>,
    /// `penalty = "3 in 1h -> 1d"`.
    pub(crate) penalty: Option<Spanned<Escalation>>,
    /// `jitter = "1s"`, in ms.
    pub(crate) jitter: Option<Spanned<u64>>,
    /// `delay = "2s"`, in ms.
    pub(crate) delay: Option<Spanned<u64>>,
    pub(crate) krate: Option<syn::Path>,
    /// Whether `per` was written at all (even with a bad value).
    pub(crate) per_given: bool,
    /// Whether `algorithm` was written at all (even with a bad value).
    pub(crate) algorithm_given: bool,
}

/// An escalation: after `after` blocks within `within_ms`, the next lasts `block_ms`.
#[derive(Clone, Copy)]
pub(crate) struct Escalation {
    pub(crate) after: u32,
    pub(crate) within_ms: u64,
    pub(crate) block_ms: u64,
}
