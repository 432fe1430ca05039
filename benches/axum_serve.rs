//! The http bench's servers on axum: bare axum, the same handler under limiter-axum's
//! attribute and under its `RateLimitLayer`, a flood the attribute rejects, a new client
//! per request, and the same three loads under tower_governor's `GovernorLayer` (the peer
//! an axum user picks). Each serves one connection's requests on a current-thread runtime
//! (as an actix worker does), with the peer's address from `ConnectInfo`, which every
//! variant is given alike.

use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use std::time::Duration;

use axum::routing::get;
use axum::{Extension, Router};
use governor::middleware::NoOpMiddleware;
use limiter_axum::{rate_limit, Limiter, Policy, RateLimitLayer};
use tower_governor::governor::{GovernorConfig, GovernorConfigBuilder};
use tower_governor::key_extractor::{PeerIpKeyExtractor, SmartIpKeyExtractor};
use tower_governor::GovernorLayer;

/// tower_governor's configuration keyed by the peer's address, without its headers (its
/// default).
type PerPeer = GovernorConfig<PeerIpKeyExtractor, NoOpMiddleware>;

/// The variants this module serves, in the order the bench runs them.
pub const VARIANTS: [&str; 11] = [
    "axum_bare",
    "axum_limiter",
    "axum_quiet",
    "axum_limiter_configured",
    "axum_layer",
    "tower_governor",
    "tower_governor_headers",
    "axum_rejecting",
    "tower_governor_rejecting",
    "axum_many",
    "tower_governor_many",
];

async fn hello() -> &'static str {
    "Hello world!"
}

/// A limit this benchmark never reaches: 65,535 per 100 ms from one address (the actix
/// `limiter` variant's).
#[rate_limit(65535, per = "100ms")]
async fn limited_hello() -> &'static str {
    "Hello world!"
}

/// Rejects every request but the first.
#[rate_limit(1, per = "1h")]
async fn rejecting_hello() -> &'static str {
    "Hello world!"
}

/// Serves `variant` on `listener` until the process is stopped.
pub fn serve(variant: &str, listener: TcpListener) -> std::io::Result<()> {
    let app = router(variant);
    listener.set_nonblocking(true)?;
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener)?;
            // Stopped by SIGINT, as actix's servers are (callgrind.sh's end of a run): a
            // background job's SIGINT is ignored unless a handler is installed.
            axum::serve(
                listener,
                app.into_make_service_with_connect_info::<SocketAddr>(),
            )
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await
        })
}

fn router(variant: &str) -> Router {
    match variant {
        // No setup: the attribute alone, on the process's limiter (what a handler with no
        // `Extension(limiter)` above it counts with, an in-memory store).
        "axum_limiter" => Router::new().route("/", get(limited_hello)),
        // The same limiter built and handed over as `Extension(limiter)`, as a service
        // that configures it does: axum clones it into every request's extensions.
        "axum_limiter_configured" => with_limiter(Router::new().route("/", get(limited_hello))),
        "axum_rejecting" => with_limiter(Router::new().route("/", get(rejecting_hello))),
        "axum_layer" => {
            // No setup either: the layer on the process's limiter.
            let policy = Policy::new(65535, Duration::from_millis(100)).expect("a policy");
            Router::new()
                .route("/", get(hello))
                .layer(RateLimitLayer::new(policy))
        }
        // The attribute with its RateLimit fields off, its limiter installed: beside
        // tower_governor, which sends none either.
        "axum_quiet" => {
            let limiter = Limiter::builder().ietf_headers(false).build();
            limiter_axum::install(limiter).expect("the first limiter of this process");
            Router::new().route("/", get(limited_hello))
        }
        // A new client per request, named by the trusted proxy (loopback) in
        // X-Forwarded-For.
        // Its limiter trusts the proxy, and is installed as the process's (no layer).
        "axum_many" => {
            let limiter = Limiter::builder().trusted_proxies(["127.0.0.1"]).build();
            limiter_axum::install(limiter).expect("the first limiter of this process");
            Router::new().route("/", get(limited_hello))
        }
        "tower_governor" => governed(per_peer(1, u32::MAX)),
        // With its own header fields on every response (`use_headers`: `x-ratelimit-limit`
        // and `x-ratelimit-remaining`), as limiter sends its RateLimit fields.
        "tower_governor_headers" => {
            let config = GovernorConfigBuilder::default()
                .per_nanosecond(1)
                .burst_size(u32::MAX)
                .use_headers()
                .finish()
                .expect("governor config");
            Router::new()
                .route("/", get(hello))
                .layer(GovernorLayer::new(Arc::new(config)))
        }
        // One request an hour per client, the first of a burst of one.
        "tower_governor_rejecting" => governed(per_peer(3_600_000_000_000, 1)),
        // Keyed by the address tower_governor's own extractor reads from X-Forwarded-For
        // (its leftmost entry, believing any peer).
        "tower_governor_many" => {
            let config = GovernorConfigBuilder::default()
                .per_nanosecond(1)
                .burst_size(u32::MAX)
                .key_extractor(SmartIpKeyExtractor)
                .finish()
                .expect("governor config");
            Router::new()
                .route("/", get(hello))
                .layer(GovernorLayer::new(Arc::new(config)))
        }
        _ => Router::new().route("/", get(hello)),
    }
}

/// `router` under a limiter of its own, handed over as `Extension(limiter)`.
fn with_limiter(router: Router) -> Router {
    router.layer(Extension(Limiter::builder().build()))
}

/// tower_governor's layer keyed by the peer's address, as its README sets it up.
fn per_peer(nanoseconds_per_request: u64, burst: u32) -> PerPeer {
    GovernorConfigBuilder::default()
        .per_nanosecond(nanoseconds_per_request)
        .burst_size(burst)
        .finish()
        .expect("governor config")
}

fn governed(config: PerPeer) -> Router {
    Router::new()
        .route("/", get(hello))
        .layer(GovernorLayer::new(Arc::new(config)))
}
