//! Each algorithm at the exact edges of its window, driven by the manual clock.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use std::time::Duration;

use limiter_core::{Algorithm, Decision, Limit, Limiter, ManualClock, Policy};

const SECOND: Duration = Duration::from_secs(1);
const MINUTE: Duration = Duration::from_secs(60);
const MS: Duration = Duration::from_millis(1);

struct Harness {
    clock: ManualClock,
    limiter: Limiter,
    limit: Limit,
}

impl Harness {
    fn new(algorithm: Algorithm, max: u32, window: Duration) -> Harness {
        Harness::with_policy(Policy::for_algorithm(algorithm, max, window).unwrap())
    }

    fn with_policy(policy: Policy) -> Harness {
        // Start far from zero, where the 32-bit stamps wrap soon: edges must not care.
        let clock = ManualClock::starting_at(Duration::from_millis(u64::from(u32::MAX) - 30_000));
        let limiter = Limiter::builder().clock(clock.clone()).build();
        Harness {
            clock,
            limiter,
            limit: Limit::new("test", policy),
        }
    }

    fn hit(&self) -> Decision {
        self.hit_as("client")
    }

    fn hit_as(&self, key: &str) -> Decision {
        self.limiter
            .check(&self.limit, key.as_bytes())
            .now_or_never()
            .expect("the memory store decides at once")
            .expect("the memory store never fails")
    }

    fn admitted(&self, n: usize) -> usize {
        (0..n).filter(|_| self.hit().allowed()).count()
    }

    fn advance(&self, by: Duration) {
        self.clock.advance(by);
    }
}

#[test]
fn sliding_window_frees_a_slot_exactly_t_after_it_was_taken() {
    let h = Harness::new(Algorithm::SlidingWindow, 5, MINUTE);
    for (i, remaining) in (0..5).rev().enumerate() {
        let d = h.hit();
        assert!(d.allowed());
        assert_eq!(d.remaining(), remaining);
        // Used quota next comes back when the first instant leaves the window.
        assert_eq!(d.reset_after(), MINUTE - SECOND * i as u32);
        h.advance(SECOND);
    }
    // Now at t + 5s; the first instant (t) leaves the window at t + 60s.
    let rejected = h.hit();
    assert_eq!(rejected.retry_after(), Some(Duration::from_secs(55)));
    assert_eq!(rejected.reset_after(), Duration::from_secs(55));
    h.advance(Duration::from_secs(55) - MS); // t + T − 1ms
    assert_eq!(h.hit().retry_after(), Some(MS));
    h.advance(MS); // t + T
    let d = h.hit();
    assert!(d.allowed());
    assert_eq!(d.remaining(), 0);
    // The oldest counted instant is now t + 1s.
    assert_eq!(d.reset_after(), SECOND);
    assert_eq!(h.hit().retry_after(), Some(SECOND));
}

#[test]
fn fixed_window_reopens_exactly_t_after_its_first_request() {
    let h = Harness::new(Algorithm::FixedWindow, 5, MINUTE);
    h.advance(Duration::from_secs(10));
    assert_eq!(h.admitted(5), 5);
    h.advance(Duration::from_secs(20));
    let rejected = h.hit();
    assert_eq!(rejected.retry_after(), Some(Duration::from_secs(40)));
    h.advance(Duration::from_secs(40) - MS);
    assert_eq!(h.hit().retry_after(), Some(MS));
    h.advance(MS);
    let d = h.hit();
    assert!(d.allowed());
    assert_eq!((d.remaining(), d.reset_after()), (4, MINUTE));
}

#[test]
fn token_bucket_refills_one_token_per_interval() {
    let policy = Policy::for_algorithm(Algorithm::TokenBucket, 6, MINUTE)
        .unwrap()
        .with_burst(3)
        .unwrap();
    let h = Harness::with_policy(policy);
    // A full bucket: 3 at once, then one every 10 s.
    let first = h.hit();
    assert_eq!(
        (first.remaining(), first.reset_after()),
        (2, Duration::from_secs(10))
    );
    assert_eq!(h.admitted(2), 2);
    let rejected = h.hit();
    assert_eq!(rejected.retry_after(), Some(Duration::from_secs(10)));
    h.advance(Duration::from_secs(10) - MS);
    assert_eq!(h.hit().retry_after(), Some(MS));
    h.advance(MS);
    let d = h.hit();
    assert!(d.allowed());
    assert_eq!(
        (d.remaining(), d.reset_after()),
        (0, Duration::from_secs(10))
    );
    // After 30 s idle the bucket is full again, and no fuller.
    h.advance(Duration::from_secs(30));
    assert_eq!(h.admitted(4), 3);
}

#[test]
fn sliding_window_counter_weighs_the_previous_window() {
    let h = Harness::new(Algorithm::SlidingWindowCounter, 4, MINUTE);
    // Align to a window edge, then fill the window at its start.
    let into = h.clock.now_ms() % 60_000;
    h.advance(Duration::from_millis(60_000 - into));
    assert_eq!(h.admitted(5), 4);
    // At 45 s into the next window, the old window weighs 4 × 15/60 = 1: 3 fit.
    h.advance(Duration::from_secs(60 + 45));
    assert_eq!(h.admitted(5), 3);
    // The estimate is exactly 1 + 3 = 4; a millisecond later the old window weighs less.
    let rejected = h.hit();
    assert_eq!(rejected.retry_after(), Some(MS));
    h.advance(MS);
    assert!(h.hit().allowed());
    // Now 4 in this window: at its edge the estimate is still 4 × 60/60, a millisecond
    // later 4 × 59.999/60.
    let rejected = h.hit();
    assert_eq!(rejected.retry_after(), Some(Duration::from_secs(15)));
    h.advance(Duration::from_secs(15) - MS);
    assert_eq!(h.hit().retry_after(), Some(MS));
    h.advance(MS);
    assert!(h.hit().allowed());
    assert!(!h.hit().allowed());
}

#[test]
fn fixed_window_admits_twice_the_limit_across_an_edge_and_sliding_window_does_not() {
    // The boundary attack, 5 per minute: one request at t opens the fixed window; the
    // client then sends 5 at t + 59.5s and 5 at t + 60s, when the window reopens.
    let attack = |algorithm| {
        let h = Harness::new(algorithm, 5, MINUTE);
        assert!(h.hit().allowed());
        h.advance(Duration::from_millis(59_500));
        let before_edge = h.admitted(5);
        h.advance(Duration::from_millis(500));
        let after_edge = h.admitted(5);
        (1 + before_edge + after_edge, before_edge + after_edge)
    };
    // Fixed: 10 within [t, t + 60s] and 9 within half a second. The opener of a window
    // always sits at its start, so 2N − 1 is the most in an interval shorter than T.
    assert_eq!(attack(Algorithm::FixedWindow), (10, 9));
    // Sliding: never more than 5 in any 60 s, so 5 within that half second too (4 before
    // the edge, 1 once the opener's instant has left the window).
    assert_eq!(attack(Algorithm::SlidingWindow), (6, 5));
}

#[test]
fn keys_and_scopes_have_separate_budgets() {
    let h = Harness::new(Algorithm::SlidingWindow, 1, MINUTE);
    assert!(h.hit_as("a").allowed());
    assert!(h.hit_as("b").allowed());
    assert!(!h.hit_as("a").allowed());
    let other = Limit::new("other", *h.limit.policy());
    let d = h
        .limiter
        .check(&other, b"a")
        .now_or_never()
        .unwrap()
        .unwrap();
    assert!(d.allowed());
}

trait NowMs {
    fn now_ms(&self) -> u64;
}

impl NowMs for ManualClock {
    fn now_ms(&self) -> u64 {
        use limiter_core::Clock;
        self.now().as_millis() as u64
    }
}
