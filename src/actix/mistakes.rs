//! The setups that cannot do what their author meant, and that would otherwise show up only
//! as wrong limits in production: each is reported once, at its first occurrence, as a
//! `warn` event that names the mistake and the fix. After that, checking for it costs a
//! relaxed load of one flag.

use std::cell::Cell;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::Limiter;

/// A mistake reported at most once per process.
pub(crate) struct Once(AtomicBool);

impl Once {
    const fn new() -> Once {
        Once(AtomicBool::new(false))
    }

    /// Whether it was reported already.
    #[inline]
    pub(crate) fn reported(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// True for the first caller only.
    fn first(&self) -> bool {
        !self.0.swap(true, Ordering::Relaxed)
    }
}

static NOT_IN_APP_DATA: Once = Once::new();

/// A request found no `Limiter` in its app data and is counted by the global one. That is
/// the design for a program that never builds one; for one that did, it is a forgotten
/// `.app_data(limiter.clone())`, and every setting of that limiter is silently ignored.
#[inline]
pub(crate) fn counted_by_the_global_limiter() {
    if NOT_IN_APP_DATA.reported() || !Limiter::any_built() {
        return;
    }
    if NOT_IN_APP_DATA.first() {
        tracing::warn!(
            "rate limit: a `Limiter` was built, but a request found none in its app's data and \
             was counted by the process-global limiter instead (its own store, no trusted \
             proxies, no user resolver): add `.app_data(limiter.clone())` to the `App` \
             (or `.app_data(web::Data::new(limiter))`)"
        );
    }
}

static PER_WORKER: Once = Once::new();
/// The in-memory stores of limiters built on actix worker threads, by identity.
static WORKER_STORES: Mutex<Vec<usize>> = Mutex::new(Vec::new());

thread_local! {
    /// The last limiter this thread saw serve a request: most threads only ever see one.
    static LAST_SERVING: Cell<usize> = const { Cell::new(0) };
}

/// A limiter serves a request. Two limiters built on actix worker threads, each with an
/// in-memory store of its own, are limiters made inside `HttpServer::new`'s closure: each
/// worker counts alone, and the limit is multiplied by the number of workers.
#[inline]
pub(crate) fn serving(limiter: &Limiter) {
    if PER_WORKER.reported() {
        return;
    }
    let id = limiter.identity();
    if LAST_SERVING.with(|last| last.replace(id)) != id {
        serving_anew(limiter);
    }
}

#[cold]
fn serving_anew(limiter: &Limiter) {
    // actix-server names its workers' threads, or runs them on actix-rt arbiters.
    let on_worker = limiter.built_on().is_some_and(|name| {
        name.starts_with("actix-server worker")
            || (name.starts_with("actix-rt|") && name.contains("arbiter"))
    });
    let Some(store) = limiter.memory_store().filter(|_| on_worker) else {
        return;
    };
    let mut stores = WORKER_STORES.lock();
    if !stores.contains(&store.identity()) {
        stores.push(store.identity());
    }
    if stores.len() > 1 && PER_WORKER.first() {
        tracing::warn!(
            "rate limit: actix workers are each building a `Limiter` with an in-memory store of \
             its own (inside `HttpServer::new`'s closure): each worker counts alone, which \
             multiplies every limit by the number of workers. Build the `Limiter` once, \
             outside the closure, and clone it in: \
             `let limiter = Limiter::builder().build(); HttpServer::new(move || \
             App::new().app_data(limiter.clone()))`"
        );
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

static UNTRUSTED_PROXY: Once = Once::new();

/// A request from a private address carries forwarding headers while no proxy is trusted:
/// the service sits behind a proxy it was not told about, and every client behind it shares
/// the proxy's budget.
#[inline]
pub(crate) fn forwarded_by_an_untrusted_private_peer(
    peer: IpAddr,
    has_forwarding: impl FnOnce() -> bool,
) {
    if UNTRUSTED_PROXY.reported() || !is_private(peer) || !has_forwarding() {
        return;
    }
    if UNTRUSTED_PROXY.first() {
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
    believed: super::proxy::ForwardingHeaders,
    counted: &super::proxy::Client,
    other: &super::proxy::Client,
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

/// Loopback, private (RFC 1918), shared (RFC 6598), link-local and unique-local addresses:
/// where a reverse proxy in front of a service usually sits.
fn is_private(ip: IpAddr) -> bool {
    match super::proxy::unmap(ip) {
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
