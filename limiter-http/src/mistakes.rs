//! The setups (forwarding headers and their contradictions, a `key = "user"` limit without a user resolver) that
//! cannot do what their author meant, and that would otherwise show up only as wrong limits
//! in production: each is reported once, at its first
//! occurrence, as a `warn` event that names the mistake and the fix. After that, checking
//! for it costs a relaxed load of one flag.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A mistake reported at most once per process.
#[derive(Default)]
pub struct Once(AtomicBool);

impl Once {
    /// Not reported yet.
    pub const fn new() -> Once {
        Once(AtomicBool::new(false))
    }

    /// Whether it was reported already.
    #[inline]
    pub fn reported(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// True for the first caller only.
    pub fn first(&self) -> bool {
        !self.0.swap(true, Ordering::Relaxed)
    }
}

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

static UNTRUSTED_PROXY: Once = Once::new();
static UNTRUSTED_LOOPBACK_PROXY: Once = Once::new();

/// A request from a private address carries forwarding headers while no proxy is trusted:
/// the service sits behind a proxy it was not told about, and every client behind it shares
/// the proxy's budget. A proxy on loopback gets other advice: trusting a loopback address
/// other processes of the host connect from too would let any of them claim any address.
#[inline]
pub(crate) fn forwarded_by_an_untrusted_private_peer(
    peer: IpAddr,
    has_forwarding: impl FnOnce() -> bool,
) {
    let once = match peer.is_loopback() {
        true => &UNTRUSTED_LOOPBACK_PROXY,
        false => &UNTRUSTED_PROXY,
    };
    if once.reported() || !is_private(peer) || !has_forwarding() {
        return;
    }
    if !once.first() {
        return;
    }
    if peer.is_loopback() {
        tracing::warn!(
            %peer,
            "rate limit: requests from {peer}, on loopback, carry Forwarded or \
             X-Forwarded-For, but the limiter trusts no proxy, so every client behind it is \
             counted as the proxy and shares its budget. Do not trust {peer} itself: any \
             process of this host could then claim any address. Have the proxy connect from \
             a loopback address of its own (`proxy_bind 127.0.0.2;` in nginx) and trust \
             only that one: `Limiter::builder().trusted_proxies([\"127.0.0.2\"])`"
        );
    } else {
        tracing::warn!(
            %peer,
            "rate limit: requests from {peer}, a private address, carry Forwarded or \
             X-Forwarded-For, but no proxy is trusted, so every client behind that proxy is \
             counted as the proxy and shares its budget: name your proxies with \
             `Limiter::builder().trusted_proxies([\"{peer}\"])` (or their network)"
        );
    }
}

static SILENT_PROXY: Once = Once::new();
static SILENT_PROXY_REQUESTS: AtomicUsize = AtomicUsize::new(0);
/// How many requests in a row from trusted proxies may carry nothing to read before it is a
/// pattern (a health check now and then is not).
const SILENT_PROXY_AFTER: usize = 100;

/// A request from a trusted proxy carried no forwarding header that the limiter reads (or
/// one it reads, it did): after [`SILENT_PROXY_AFTER`] in a row without, every client behind
/// the proxy is being counted as the proxy.
#[inline]
pub(crate) fn trusted_proxy_said(anything: bool, other_header_present: bool) {
    if SILENT_PROXY.reported() {
        return;
    }
    if anything {
        SILENT_PROXY_REQUESTS.store(0, Ordering::Relaxed);
        return;
    }
    let silent = SILENT_PROXY_REQUESTS.fetch_add(1, Ordering::Relaxed) + 1;
    if silent >= SILENT_PROXY_AFTER && SILENT_PROXY.first() {
        let fix = if other_header_present {
            "they carry the other forwarding header: tell the limiter which one your proxy \
             writes with `.forwarding_headers(...)`"
        } else {
            "configure your proxy to send X-Forwarded-For (or Forwarded)"
        };
        tracing::warn!(
            "rate limit: {SILENT_PROXY_AFTER} requests in a row came from trusted proxies \
             without the forwarding header the limiter reads, so every client behind them is \
             counted as the proxy: {fix}"
        );
    }
}

static PASSED_THROUGH: Once = Once::new();

/// Whether the header passed through was reported already (then it is not even read).
#[inline]
pub(crate) fn passed_through_reported() -> bool {
    PASSED_THROUGH.reported()
}

/// A trusted proxy's request carried, beside the header the limiter believes, the other
/// one naming another client: written by the client (or a proxy of its own) and passed on.
/// The request is counted by the believed header; if the proxy in fact writes the other
/// one, every client behind it is being counted wrongly.
pub(crate) fn passed_through_header(
    believed: crate::proxy::ForwardingHeaders,
    counted: &crate::proxy::Client,
    other: &crate::proxy::Client,
) {
    if PASSED_THROUGH.first() {
        tracing::warn!(
            ?believed,
            ?counted,
            ?other,
            "rate limit: a request through a trusted proxy carried both forwarding headers, \
             naming different clients; it is counted by the one believed ({believed:?}) and \
             the other is ignored as passed through from the client. If your proxy writes \
             the other one, name it with `Limiter::builder().forwarding_headers(...)`"
        );
    }
}

/// Loopback, private (RFC 1918), shared (RFC 6598), link-local and unique-local addresses:
/// where a reverse proxy in front of a service usually sits.
fn is_private(ip: IpAddr) -> bool {
    match crate::proxy::unmap(ip) {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || (a == 100 && (64..128).contains(&b))
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            v6.is_loopback() || (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfe80
        }
    }
}

static NO_USER_RESOLVER: Once = Once::new();

/// A `key = "user"` limit ran on a limiter that cannot tell users apart: it counts by
/// address, which is not what it says.
#[inline]
pub(crate) fn user_key_without_resolver() {
    if !NO_USER_RESOLVER.reported() && NO_USER_RESOLVER.first() {
        tracing::warn!(
            "rate limit: a handler limited with key = \"user\" ran on a `Limiter` without a user \
             resolver, so it counts by address: give the limiter one with \
             `Limiter::builder().user_key(|req| ...)`, returning the signed-in user's id"
        );
    }
}
