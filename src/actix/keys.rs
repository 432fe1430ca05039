//! actix's request as the key logic reads it: who is counted under a limit's `key = ...`
//! (`limiter_http::KeySpec`), who the client is by address — trusted proxies, forwarding
//! headers, IPv6 prefixes — and the keys' bytes are `limiter_http`'s, which every front end
//! shares; here actix's request is read through its [`RequestHead`].

use std::net::IpAddr;

use actix_web::http::header::{self, HeaderName};
use actix_web::HttpRequest;
use limiter_http::{Header, RequestHead};

/// An actix request as the key logic reads it.
pub(crate) struct Head<'a>(pub(crate) &'a HttpRequest);

impl RequestHead for Head<'_> {
    #[inline]
    fn peer_ip(&self) -> Option<IpAddr> {
        self.0.peer_addr().map(|peer| peer.ip())
    }

    #[inline]
    fn header_values(&self, header: Header) -> impl Iterator<Item = &[u8]> {
        header_values(self.0, header)
    }
}

/// The values of `header` in `req`, in order received.
#[inline]
fn header_values(req: &HttpRequest, header: Header) -> impl Iterator<Item = &[u8]> {
    req.headers()
        .get_all(header_name(header))
        .map(|value| value.as_bytes())
}

/// actix's name of a header the key logic reads.
#[inline]
fn header_name(header: Header) -> &'static HeaderName {
    static CF_CONNECTING_IP: HeaderName = HeaderName::from_static("cf-connecting-ip");
    static TRUE_CLIENT_IP: HeaderName = HeaderName::from_static("true-client-ip");
    static X_REAL_IP: HeaderName = HeaderName::from_static("x-real-ip");
    static X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
    match header {
        Header::Forwarded => &header::FORWARDED,
        Header::XForwardedFor => &X_FORWARDED_FOR,
        Header::CfConnectingIp => &CF_CONNECTING_IP,
        Header::TrueClientIp => &TRUE_CLIENT_IP,
        Header::XRealIp => &X_REAL_IP,
    }
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::Head;

    /// The key logic's cases, on actix's requests as its test requests build them: what the
    /// other front ends run on theirs.
    #[test]
    fn the_key_logic_on_actix_requests() {
        limiter_http::conformance::run_all(|peer, headers| {
            let mut req = TestRequest::default();
            if let Some(peer) = peer {
                req = req.peer_addr(std::net::SocketAddr::new(peer, 40_000));
            }
            for (name, value) in headers {
                req = req.append_header((*name, *value));
            }
            Owned(req.to_http_request())
        });
    }

    /// A request the cases can own (`Head` borrows one).
    struct Owned(actix_web::HttpRequest);

    impl limiter_http::RequestHead for Owned {
        fn peer_ip(&self) -> Option<std::net::IpAddr> {
            Head(&self.0).peer_ip()
        }

        fn header_values(&self, header: limiter_http::Header) -> impl Iterator<Item = &[u8]> {
            super::header_values(&self.0, header)
        }
    }
}
