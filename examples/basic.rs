//! The core engine on its own: five requests per minute per client, with the manual clock
//! standing in for time. (The `#[rate_limit]` attribute on actix handlers builds on this.)
//!
//! `cargo run --example basic`

use std::time::Duration;

use limiter::{Limit, Limiter, ManualClock, Policy};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let clock = ManualClock::new();
    let limiter = Limiter::builder().clock(clock.clone()).build();
    let login = Limit::new("login", Policy::new(5, Duration::from_secs(60))?);

    for second in 0..8 {
        let decision = limiter
            .check(&login, b"203.0.113.7")
            .now_or_never()
            .ok_or("the memory store decides at once")??;
        match decision.retry_after_secs() {
            None => println!("t={second}s  200  remaining {}", decision.remaining()),
            Some(wait) => println!("t={second}s  429  Retry-After: {wait}"),
        }
        clock.advance(Duration::from_secs(1));
    }
    Ok(())
}
