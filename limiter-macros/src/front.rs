//! Which front end a handler is guarded for: the attribute is one grammar, checked the same,
//! and written into the handler each framework calls.

/// The front end an attribute was imported from.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Front {
    /// `limiter::rate_limit`: actix-web.
    Actix,
    /// `limiter_axum::rate_limit`: axum.
    Axum,
}

impl Front {
    /// The crate the expansion reaches its runtime through, unless `crate = path` says.
    pub(crate) fn default_crate(self) -> syn::Path {
        match self {
            Front::Actix => syn::parse_quote!(::limiter),
            Front::Axum => syn::parse_quote!(::limiter_axum),
        }
    }
}
