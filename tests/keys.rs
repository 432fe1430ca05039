//! Who is counted, through actix services: spoofing, proxy chains, IPv6 prefixes, users,
//! API keys and computed keys.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::time::Duration;

use actix_web::dev::{Service, ServiceResponse};
use actix_web::{test, web, App, HttpRequest};
use common::peer;
use limiter::{rate_limit, ForwardingHeaders, Limiter, ManualClock};

#[rate_limit(1, per = "1h")]
async fn by_ip() -> &'static str {
    "ok"
}

#[rate_limit(1, per = "1h", key = "user")]
async fn by_user() -> &'static str {
    "ok"
}

#[rate_limit(1, per = "1h", key = "header:x-api-key")]
async fn by_api_key() -> &'static str {
    "ok"
}

fn tenant(req: &HttpRequest) -> Option<String> {
    req.headers()
        .get("x-tenant")?
        .to_str()
        .ok()
        .map(str::to_owned)
}

#[rate_limit(1, per = "1h", key = tenant)]
async fn by_tenant() -> &'static str {
    "ok"
}

fn builder() -> limiter::LimiterBuilder {
    Limiter::builder().clock(ManualClock::starting_at(Duration::from_secs(600)))
}

async fn make_app(
    limiter: Limiter,
) -> impl Service<actix_http::Request, Response = ServiceResponse, Error = actix_web::Error> {
    test::init_service(
        App::new()
            .app_data(limiter)
            .route("/ip", web::get().to(by_ip))
            .route("/user", web::get().to(by_user))
            .route("/key", web::get().to(by_api_key))
            .route("/tenant", web::get().to(by_tenant)),
    )
    .await
}

/// Sends `GET path` from `from` with `headers`, and returns the status.
async fn status_of(
    app: &impl Service<actix_http::Request, Response = ServiceResponse, Error = actix_web::Error>,
    path: &str,
    from: &str,
    headers: &[(&str, &str)],
) -> u16 {
    let mut req = test::TestRequest::get().uri(path).peer_addr(peer(from));
    for &(name, value) in headers {
        req = req.insert_header((name, value));
    }
    test::call_service(app, req.to_request())
        .await
        .status()
        .as_u16()
}

/// Sends `GET path` from `from` with `headers`, and says whether it was admitted.
async fn admitted(
    app: &impl Service<actix_http::Request, Response = ServiceResponse, Error = actix_web::Error>,
    path: &str,
    from: &str,
    headers: &[(&str, &str)],
) -> bool {
    let mut req = test::TestRequest::get().uri(path).peer_addr(peer(from));
    for &(name, value) in headers {
        req = req.insert_header((name, value));
    }
    let status = test::call_service(app, req.to_request()).await.status();
    assert!(status == 200 || status == 429, "{status}");
    status == 200
}

#[actix_web::test]
async fn an_untrusted_peer_cannot_pick_its_key_with_forwarding_headers() {
    let app = make_app(builder().trusted_proxies(["10.0.0.0/8"]).build()).await;
    let from = "203.0.113.7:4000";
    assert!(admitted(&app, "/ip", from, &[("x-forwarded-for", "198.51.100.1")]).await);
    // Spoofed headers from the same peer: the same budget, already spent.
    for spoof in [
        ("x-forwarded-for", "198.51.100.2"),
        ("forwarded", "for=198.51.100.3"),
        ("x-forwarded-for", "10.0.0.1"),
    ] {
        assert!(!admitted(&app, "/ip", from, &[spoof]).await, "{spoof:?}");
    }
}

#[actix_web::test]
async fn behind_trusted_proxies_the_right_most_untrusted_address_is_the_client() {
    let app = make_app(builder().trusted_proxies(["10.0.0.0/8"]).build()).await;
    let proxy = "10.0.0.1:4000";
    // Client 203.0.113.9 through two of our proxies; its left-most entry is forged.
    let chain = |forged: &'static str| ("x-forwarded-for", forged);
    assert!(
        admitted(
            &app,
            "/ip",
            proxy,
            &[chain("1.1.1.1, 203.0.113.9, 10.0.0.2")]
        )
        .await
    );
    assert!(
        !admitted(
            &app,
            "/ip",
            proxy,
            &[chain("2.2.2.2, 203.0.113.9, 10.0.0.2")]
        )
        .await
    );
    assert!(!admitted(&app, "/ip", proxy, &[chain("203.0.113.9")]).await);
    // Another client through the same proxies has a budget of its own.
    assert!(admitted(&app, "/ip", proxy, &[chain("203.0.113.10, 10.0.0.2")]).await);
    // RFC 7239, with a bracketed, quoted IPv6 and a port.
    let fwd = (
        "forwarded",
        "for=\"[2001:db8:cafe::17]:4711\";proto=https, for=10.0.0.2",
    );
    assert!(admitted(&app, "/ip", proxy, &[fwd]).await);
    assert!(
        !admitted(
            &app,
            "/ip",
            proxy,
            &[("forwarded", "for=\"[2001:db8:cafe::99]\"")]
        )
        .await
    );
}

/// By default the header nginx, HAProxy and the balancers write is believed: a client whose
/// own office proxy added `Forwarded` is counted by the `X-Forwarded-For` your proxy wrote,
/// never refused (it got 400, as did everyone in that office), and the header passed
/// through is reported once as a `warn` naming the setting.
#[actix_web::test]
async fn a_forwarded_header_passed_through_never_refuses_anyone_by_default() {
    common::events::record();
    let app = make_app(builder().trusted_proxies(["10.0.0.0/8"]).build()).await;
    let proxy = "10.0.0.1:4000";
    let office = [
        ("forwarded", "for=192.168.1.20"),
        ("x-forwarded-for", "198.51.100.60"),
    ];
    assert_eq!(status_of(&app, "/ip", proxy, &office).await, 200);
    // Counted as the X-Forwarded-For client: that one's budget is spent.
    assert!(!admitted(&app, "/ip", proxy, &[("x-forwarded-for", "198.51.100.60")]).await);
    let office2 = [
        ("forwarded", "for=192.168.1.21"),
        ("x-forwarded-for", "198.51.100.61"),
    ];
    assert_eq!(status_of(&app, "/ip", proxy, &office2).await, 200);
    let warned = common::events::warnings("counted by the one believed");
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned[0].contains("forwarding_headers"), "{}", warned[0]);
}

/// `ForwardingHeaders::Both`, for proxies that write both, is strict: two headers naming
/// different clients are a contradiction the request cannot be counted through (400).
#[actix_web::test]
async fn forwarded_and_x_forwarded_for_together_when_both_are_believed() {
    let app = make_app(
        builder()
            .trusted_proxies(["10.0.0.0/8"])
            .forwarding_headers(ForwardingHeaders::Both)
            .build(),
    )
    .await;
    let proxy = "10.0.0.1:4000";
    let agree = [
        ("forwarded", "for=198.51.100.1"),
        ("x-forwarded-for", "198.51.100.1"),
    ];
    assert!(admitted(&app, "/ip", proxy, &agree).await);
    assert!(!admitted(&app, "/ip", proxy, &[("x-forwarded-for", "198.51.100.1")]).await);
    // Contradictory: one of them was written by the client, so the request cannot be
    // counted through them. It is refused (400), which gives the client neither an address
    // of its choosing nor the proxy's own budget — that stays whole.
    let contradict =
        |forged: &'static str| [("forwarded", forged), ("x-forwarded-for", "198.51.100.50")];
    for forged in ["for=6.6.6.1", "for=6.6.6.2", "for=_hidden"] {
        assert_eq!(
            status_of(&app, "/ip", proxy, &contradict(forged)).await,
            400
        );
    }
    assert!(
        admitted(&app, "/ip", proxy, &[]).await,
        "the proxy's own budget is untouched"
    );
    assert!(admitted(&app, "/ip", proxy, &[("x-forwarded-for", "198.51.100.50")]).await);
    // A forged header that names nobody, or cannot be read, leaves the answer to the other.
    for silent in ["proto=https", "for=unknown", "for=\"open"] {
        let headers = [("forwarded", silent), ("x-forwarded-for", "198.51.100.50")];
        assert!(!admitted(&app, "/ip", proxy, &headers).await, "{silent}");
    }

    // Told which header the proxy writes, the other one is ignored.
    let app = make_app(
        builder()
            .trusted_proxies(["10.0.0.0/8"])
            .forwarding_headers(ForwardingHeaders::XForwardedFor)
            .build(),
    )
    .await;
    assert!(admitted(&app, "/ip", proxy, &contradict("for=6.6.6.1")).await);
    assert!(!admitted(&app, "/ip", proxy, &contradict("for=6.6.6.2")).await);
}

#[actix_web::test]
async fn a_long_or_malformed_forged_part_cannot_move_the_client_to_the_proxys_budget() {
    let app = make_app(builder().trusted_proxies(["10.0.0.0/8"]).build()).await;
    let proxy = "10.0.0.1:4000";
    // The proxy's budget is spent by a request that really came from it.
    assert!(admitted(&app, "/ip", proxy, &[]).await);
    // A client pads the part it controls past 2 KB, or breaks its grammar: it is still
    // counted as itself (its first request passes, its second does not), never as the proxy.
    let padded = format!("{}198.51.100.9", "6.6.6.6, ".repeat(400));
    assert!(padded.len() > 2_048);
    assert!(admitted(&app, "/ip", proxy, &[("x-forwarded-for", &padded)]).await);
    assert!(!admitted(&app, "/ip", proxy, &[("x-forwarded-for", "198.51.100.9")]).await);
    // The same through `Forwarded`, for a proxy that writes that one.
    let app = make_app(
        builder()
            .trusted_proxies(["10.0.0.0/8"])
            .forwarding_headers(ForwardingHeaders::Forwarded)
            .build(),
    )
    .await;
    assert!(admitted(&app, "/ip", proxy, &[]).await);
    let open_quote = "for=\"6.6.6.6, for=198.51.100.10";
    assert!(admitted(&app, "/ip", proxy, &[("forwarded", open_quote)]).await);
    assert!(!admitted(&app, "/ip", proxy, &[("forwarded", "for=198.51.100.10")]).await);
}

#[actix_web::test]
async fn proxies_written_as_ipv4_mapped_ipv6_are_trusted() {
    let app = make_app(builder().trusted_proxies(["::ffff:10.0.0.0/104"]).build()).await;
    let proxy = "10.0.0.1:4000";
    assert!(admitted(&app, "/ip", proxy, &[("x-forwarded-for", "198.51.100.20")]).await);
    // The client is the forwarded address, not the proxy: the proxy still has its budget.
    assert!(admitted(&app, "/ip", proxy, &[]).await);
}

#[actix_web::test]
async fn ipv6_clients_are_grouped_by_prefix_and_mapped_ipv4_is_ipv4() {
    let app = make_app(builder().build()).await;
    assert!(admitted(&app, "/ip", "[2001:db8:1:2ff::1]:4000", &[]).await);
    // Same /56: same budget.
    assert!(!admitted(&app, "/ip", "[2001:db8:1:200:aaaa::9]:4000", &[]).await);
    // Next /56: a budget of its own.
    assert!(admitted(&app, "/ip", "[2001:db8:1:300::1]:4000", &[]).await);

    let app64 = make_app(builder().ipv6_prefix(64).build()).await;
    assert!(admitted(&app64, "/ip", "[2001:db8:1:2ff::1]:4000", &[]).await);
    assert!(admitted(&app64, "/ip", "[2001:db8:1:2fe::1]:4000", &[]).await);
    assert!(!admitted(&app64, "/ip", "[2001:db8:1:2fe::2]:5000", &[]).await);

    let app = make_app(builder().build()).await;
    assert!(admitted(&app, "/ip", "[::ffff:198.51.100.4]:4000", &[]).await);
    assert!(!admitted(&app, "/ip", "198.51.100.4:5000", &[]).await);
}

#[actix_web::test]
async fn users_are_counted_apart_and_anonymous_requests_by_address() {
    let limiter = builder()
        .user_key(|req: &HttpRequest| {
            req.headers()
                .get("x-user")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        })
        .build();
    let app = make_app(limiter).await;
    let from = "203.0.113.7:4000";
    assert!(admitted(&app, "/user", from, &[("x-user", "alice")]).await);
    assert!(!admitted(&app, "/user", from, &[("x-user", "alice")]).await);
    assert!(admitted(&app, "/user", from, &[("x-user", "bob")]).await);
    // A user named like the address does not share the address's budget, nor it theirs.
    assert!(admitted(&app, "/user", from, &[("x-user", "203.0.113.7")]).await);
    assert!(
        admitted(&app, "/user", from, &[]).await,
        "anonymous: by address"
    );
    assert!(!admitted(&app, "/user", from, &[]).await);
    assert!(admitted(&app, "/user", "203.0.113.8:4000", &[]).await);
}

#[actix_web::test]
async fn header_and_function_keys_fall_back_to_the_address() {
    let app = make_app(builder().build()).await;
    let from = "203.0.113.7:4000";
    assert!(admitted(&app, "/key", from, &[("x-api-key", "k1")]).await);
    assert!(!admitted(&app, "/key", "198.51.100.1:1", &[("x-api-key", "k1")]).await);
    assert!(admitted(&app, "/key", from, &[("x-api-key", "k2")]).await);
    assert!(
        admitted(&app, "/key", from, &[]).await,
        "no key: by address"
    );
    assert!(!admitted(&app, "/key", from, &[]).await);
    // An absurdly long key is bounded (hashed), and still counted exactly.
    let long = "k".repeat(5_000);
    assert!(admitted(&app, "/key", from, &[("x-api-key", &long)]).await);
    assert!(!admitted(&app, "/key", from, &[("x-api-key", &long)]).await);

    assert!(admitted(&app, "/tenant", from, &[("x-tenant", "acme")]).await);
    assert!(!admitted(&app, "/tenant", "198.51.100.1:1", &[("x-tenant", "acme")]).await);
    assert!(
        admitted(&app, "/tenant", from, &[]).await,
        "None: by address"
    );
    assert!(!admitted(&app, "/tenant", from, &[]).await);
}

#[actix_web::test]
#[should_panic(expected = "invalid trusted proxy: `10.0.0.0/99` is not an address or a CIDR")]
async fn a_bad_trusted_proxy_in_code_fails_at_start_up() {
    let _ = Limiter::builder().trusted_proxies(["10.0.0.0/8", "10.0.0.0/99"]);
}

// ---- one-address CDN headers --------------------------------------------------------------

#[actix_web::test]
async fn a_cdns_one_address_header_is_believed_from_a_trusted_peer_only() {
    for (headers, name) in [
        (ForwardingHeaders::CfConnectingIp, "cf-connecting-ip"),
        (ForwardingHeaders::TrueClientIp, "true-client-ip"),
        (ForwardingHeaders::XRealIp, "x-real-ip"),
    ] {
        let limiter = Limiter::builder()
            .clock(ManualClock::starting_at(Duration::from_secs(600)))
            .trusted_proxies(["10.0.0.0/8"])
            .forwarding_headers(headers)
            .build();
        let client = |from: &str, values: &[&str]| {
            let mut req = test::TestRequest::get().peer_addr(peer(from));
            for value in values {
                req = req.append_header((name, *value));
            }
            // A client's own X-Forwarded-For, passed through: not what this setup reads.
            req = req.insert_header(("x-forwarded-for", "6.6.6.6"));
            limiter.client(&req.to_http_request()).unwrap()
        };
        let address = |a: &str| limiter::Client::Address(a.parse().unwrap());
        assert_eq!(
            client("10.0.0.1:1", &["198.51.100.7"]),
            address("198.51.100.7")
        );
        assert_eq!(
            client("10.0.0.1:1", &[" 2001:db8::7 "]),
            address("2001:db8::7")
        );
        assert_eq!(
            client("10.0.0.1:1", &["[2001:db8::8]"]),
            address("2001:db8::8")
        );
        // Absent, repeated or not an address: the peer.
        assert_eq!(client("10.0.0.1:1", &[]), address("10.0.0.1"));
        assert_eq!(
            client("10.0.0.1:1", &["198.51.100.7", "6.6.6.6"]),
            address("10.0.0.1")
        );
        assert_eq!(
            client("10.0.0.1:1", &["198.51.100.7, 6.6.6.6"]),
            address("10.0.0.1")
        );
        assert_eq!(client("10.0.0.1:1", &["unknown"]), address("10.0.0.1"));
        // From a peer nobody trusts, the header is the client's own: ignored.
        assert_eq!(
            client("203.0.113.5:1", &["198.51.100.7"]),
            address("203.0.113.5")
        );

        // And counted so, through a limited handler: one budget per address the CDN names.
        let app = test::init_service(
            App::new()
                .app_data(limiter.clone())
                .route("/", web::get().to(by_ip)),
        )
        .await;
        let call = |value: &'static str| {
            let req = test::TestRequest::get()
                .peer_addr(peer("10.0.0.1:1"))
                .insert_header((name, value))
                .to_request();
            test::call_service(&app, req)
        };
        assert_eq!(call("198.51.100.7").await.status(), 200);
        assert_eq!(call("198.51.100.8").await.status(), 200);
        assert_eq!(call("198.51.100.7").await.status(), 429);
    }
}
