//! The setups that cannot do what their author meant, and that would otherwise show up only
//! as wrong limits in production: each is reported once, at its first occurrence, as a
//! `warn` event that names the mistake and the fix. After that, checking for it costs a
//! relaxed load of one flag. (Those of forwarding headers and of a `key = "user"` limit without
//! a user resolver are reported by `limiter_http`, where the key logic is.)

pub(crate) use limiter_http::Once;

static CONTRADICTION: Once = Once::new();

/// A trusted proxy's two forwarding headers named different clients (the request got a
/// 400): one is written by clients, because the proxy writes only the other.
pub(crate) fn contradictory_forwarding(contradiction: &dyn std::fmt::Display) {
    if !CONTRADICTION.reported() && CONTRADICTION.first() {
        tracing::warn!(
            %contradiction,
            "rate limit: a request through a trusted proxy carried Forwarded and \
             X-Forwarded-For naming different clients, and got a 400 \
             (`ForwardingHeaders::Both` is strict); if your proxy writes only one of them, \
             name it with `Limiter::builder().forwarding_headers(ForwardingHeaders::\
             XForwardedFor)` (the default) or `Forwarded`, and the other is ignored"
        );
    }
}
