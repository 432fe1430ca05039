//! Policies chosen per request (`policy = fn`) from something the client sends: however
//! many distinct ones come, what the limiter keeps for them stays bounded — the handler's
//! limits, the limiter's list of budgets, the memory store's tables.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

#[path = "../limiter-core/tests/common/counting_allocator.rs"]
mod counting_allocator;

use std::time::Duration;

use actix_web::{test, web, App, HttpRequest};
use counting_allocator::{live_bytes, Counting};
use limiter::{rate_limit, Limiter, ManualClock, MemoryStore, Policy};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The client's "plan", read from a header: any number it likes.
fn plan(req: &HttpRequest) -> Option<Policy> {
    let n: u32 = req.headers().get("x-plan")?.to_str().ok()?.parse().ok()?;
    Policy::new(1 + n % 60_000, Duration::from_secs(60)).ok()
}

#[rate_limit(5, per = "1m", policy = plan)]
async fn chosen() -> &'static str {
    "ok"
}

#[actix_web::test]
async fn distinct_policies_from_requests_keep_memory_bounded() {
    let clock = ManualClock::starting_at(Duration::from_secs(100));
    let store = MemoryStore::with_max_bytes(1 << 20);
    let limiter = Limiter::builder()
        .store(store.clone())
        .clock(clock.clone())
        .build();
    let app = test::init_service(
        App::new()
            .app_data(limiter)
            .route("/", web::get().to(chosen)),
    )
    .await;
    // Fewer in a debug build (the README's test command), where each request is slow.
    let half: u32 = if cfg!(debug_assertions) {
        5_000
    } else {
        20_000
    };
    let mut plans = 0u32;
    let mut send = |n: u32| {
        let req = test::TestRequest::get()
            .uri("/")
            .insert_header(("x-plan", n.to_string()))
            .peer_addr("203.0.113.7:4000".parse().unwrap())
            .to_request();
        plans += 1;
        req
    };
    for n in 0..half {
        let res = test::call_service(&app, send(n)).await;
        assert_eq!(res.status(), 200);
    }
    let after_first = live_bytes();
    for n in half..2 * half {
        clock.advance(Duration::from_millis(1));
        let res = test::call_service(&app, send(n)).await;
        assert_eq!(res.status(), 200);
    }
    let grown = live_bytes() - after_first;
    println!(
        "{plans} requests, each with a plan of its own: the second half grew memory by {grown} \
         bytes; the store holds {} bytes",
        store.bytes()
    );
    assert!(store.bytes() <= 1 << 20, "{}", store.bytes());
    assert!(grown < 1 << 20, "{grown}");
}
