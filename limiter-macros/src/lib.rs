//! The `#[rate_limit]` attribute of `limiter`. Use it through the `limiter` crate.
