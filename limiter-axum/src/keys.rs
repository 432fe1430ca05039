//! An http 1 request (its head, `Parts`) as the key logic reads it: who the client is by
//! address — trusted proxies, forwarding headers, IPv6 prefixes — and the keys' bytes are
//! `limiter_http`'s, which every front end shares. The peer is the `ConnectInfo<SocketAddr>`
//! axum leaves in a request served by `into_make_service_with_connect_info::<SocketAddr>()`
//! (or a `SocketAddr` extension a tower stack put there).

use std::net::{IpAddr, SocketAddr};

use axum::extract::ConnectInfo;
use axum::http::header::{self, HeaderName};
use axum::http::request::Parts;
use limiter_http::{Header, RequestHead};

/// A request's head as the key logic reads it.
pub(crate) struct Head<'a>(pub(crate) &'a Parts);

impl RequestHead for Head<'_> {
    #[inline]
    fn peer_ip(&self) -> Option<IpAddr> {
        peer(self.0).map(|peer| peer.ip())
    }

    #[inline]
    fn header_values(&self, header: Header) -> impl Iterator<Item = &[u8]> {
        self.0
            .headers
            .get_all(header_name(header))
            .into_iter()
            .map(|value| value.as_bytes())
    }
}

/// The connection's peer, as axum or the tower stack left it.
#[inline]
pub(crate) fn peer(parts: &Parts) -> Option<SocketAddr> {
    match parts.extensions.get::<ConnectInfo<SocketAddr>>() {
        Some(ConnectInfo(peer)) => Some(*peer),
        None => parts.extensions.get::<SocketAddr>().copied(),
    }
}

/// http 1's name of a header the key logic reads.
#[inline]
fn header_name(header: Header) -> HeaderName {
    match header {
        Header::Forwarded => header::FORWARDED,
        Header::XForwardedFor => HeaderName::from_static("x-forwarded-for"),
        Header::CfConnectingIp => HeaderName::from_static("cf-connecting-ip"),
        Header::TrueClientIp => HeaderName::from_static("true-client-ip"),
        Header::XRealIp => HeaderName::from_static("x-real-ip"),
    }
}

#[cfg(test)]
mod tests {
    use axum::http::Request;

    use super::Head;

    /// The key logic's cases, on http 1's requests: what the actix front end runs on its
    /// own (`the_key_logic_on_actix_requests`), the same cases and answers.
    #[test]
    fn the_key_logic_on_http_1_requests() {
        limiter_http::conformance::run_all(|peer, headers| {
            let mut req = Request::builder();
            for (name, value) in headers {
                req = req.header(*name, *value);
            }
            let (mut parts, ()) = req.body(()).expect("a request of valid parts").into_parts();
            if let Some(peer) = peer {
                let peer = std::net::SocketAddr::new(peer, 40_000);
                parts.extensions.insert(axum::extract::ConnectInfo(peer));
            }
            Owned(parts)
        });
    }

    /// A request the cases can own (`Head` borrows one).
    struct Owned(axum::http::request::Parts);

    impl limiter_http::RequestHead for Owned {
        fn peer_ip(&self) -> Option<std::net::IpAddr> {
            Head(&self.0).peer_ip()
        }

        fn header_values(&self, header: limiter_http::Header) -> impl Iterator<Item = &[u8]> {
            self.0
                .headers
                .get_all(super::header_name(header))
                .into_iter()
                .map(|value| value.as_bytes())
        }
    }
}
