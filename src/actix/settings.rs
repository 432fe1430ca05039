//! The builder's HTTP settings, as the actix glue reads them: `limiter_http`'s, for actix.

pub(crate) type HttpSettings = limiter_http::plumbing::HttpSettings<super::front::Actix>;
