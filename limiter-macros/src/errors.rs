//! Every mistake in an attribute, collected so that all of them are reported at once, each on
//! its own token.

use proc_macro2::TokenStream;

#[derive(Default)]
pub(crate) struct Errors {
    first: Option<syn::Error>,
    count: usize,
}

impl Errors {
    pub(crate) fn push(&mut self, error: syn::Error) {
        self.count += 1;
        match &mut self.first {
            Some(first) => first.combine(error),
            None => self.first = Some(error),
        }
    }

    pub(crate) fn at(&mut self, span: impl syn::spanned::Spanned, message: impl std::fmt::Display) {
        self.push(syn::Error::new(span.span(), message));
    }

    /// How many errors were reported so far.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    pub(crate) fn to_compile_errors(&self) -> Option<TokenStream> {
        self.first.as_ref().map(syn::Error::to_compile_error)
    }
}
