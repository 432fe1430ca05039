//! # Choosing an algorithm
//!
//! With 5 per minute, a client whose window opened at 0:00 sends 5 requests at 0:59.5 and 5
//! at 1:00.0. A fixed window admits 9 of them within half a second: its edge resets the
//! count. The sliding window admits 5 — it keeps the instants of recent requests and has no
//! edge. The picture is drawn from the code by `cargo run --example boundary`:
//!
//! # In depth
//!
//! `T` is the window, `N` the limit. Each is a pure state machine (`limiter_core::algorithm`);
//! the in-memory store is checked against small reference models of these definitions on random
//! schedules, at window edges, across 32-bit stamp wrap-around (`limiter-core/tests/reference.rs`).
//!
//! | algorithm | admits a request at `now` iff | `Retry-After` | memory per key | error |
//! | --- | --- | --- | --- | --- |
//! | `sliding_window` (default) | fewer than `N` admitted instants `t` with `now − t < T` | `oldest counted t + T − now` | a 16 B entry; `4 × N` B more once a key has 2 instants | none |
//! | `fixed_window` | the window `[s, s + T)` opened by the key's first request holds fewer than `N` | `s + T − now` | 16 B | `2N − 1` within an instant across an edge |
//! | `sliding_window_counter` | `previous × (T − elapsed)/T + current < N` (windows aligned to multiples of `T`) | exact time until the estimate drops below `N` | 16 B | within 1% of the exact total on random traffic; `2N` in the worst case |
//! | `token_bucket` | a bucket of `burst` tokens refilled at `N` per `T` (GCRA) holds a token | time until one token is back | 16 B | none (bursts of `burst` by design) |
//!
//! Each algorithm counts exactly up to a bound, checked when the policy is built (at compile
//! time for the attribute): the sliding window at most 65,535 per window; the counter at most
//! 16,777,215, and `N × T` (in ms) below 2⁵² (7,446,427 for a week); windows of 1 ms to 7
//! days; a token bucket refilling completely within 49 days.
//!
//! The sliding window's price is memory: one 32-bit instant per admitted request still in the
//! window, `O(N)` per active client. For large `N` and many clients prefer
//! `sliding_window_counter` or `token_bucket` (8 bytes of state whatever `N`).
//!
//! ## Calendar quotas
//!
//! `#[rate_limit(10_000, per = "month", key = "header:x-api-key")]` is a quota, not a rate:
//! up to `N` in each calendar period — `"day"` (midnight to midnight), `"week"` (Monday to
//! Monday), `"month"` (the first to the first) — reset at the boundary, where
//! `Retry-After` and `t` point. It is a fixed window aligned to the calendar (so `2N`
//! across a boundary, as a fixed window allows: stack a rate beside it, `5 per 1s` +
//! `10k per month`, each one holding). Periods are in UTC, or at the offset
//! `Limiter::builder().utc_offset(minutes)` gives (a fixed offset: no daylight saving time;
//! a middleware's quota takes it on its policy, `Policy::per_calendar(n,
//! Period::Month)?.with_utc_offset(60)?`). Readings are Unix time: the system clocks fix
//! their offset from the wall clock at their first reading, and Redis checks on its own
//! `TIME`, so every instance agrees on the date. `RateLimit-Policy` announces the longest
//! period (`w=2678400` for a month, 31 days), so that a client pacing itself by `q / w` never
//! overspends. A rolling window stays at most 7 days: `per = "30d"` is refused, pointing
//! here. State: 8 bytes (the period's number and the count), in memory, in Redis (a packed
//! string that expires at the period's end) and in a saved file; `tests/quotas.rs` crosses
//! day, week and month boundaries at offsets, on both stores, against each other.
#![doc = include_str!("../../docs/boundary.svg")]
//!
//! | algorithm | admits at `now` iff | in any window | memory per key |
//! | --- | --- | --- | --- |
//! | `sliding_window` (default) | fewer than `N` admitted instants in `(now − T, now]` | exactly `N` | 16 B, and 4 B per instant once it holds two |
//! | `fixed_window` | the window opened by the key's first request holds fewer than `N` | up to `2N − 1` | 16 B |
//! | `sliding_window_counter` | the weighted estimate of the last two aligned windows is below `N` | within 1% on random traffic, `2N` at worst | 16 B |
//! | `token_bucket` | a bucket of `burst` tokens refilled at `N` per `T` holds a token | `burst` at once, then `N` per `T` | 16 B |
//!
//! Measured (`cargo bench --manifest-path benches/Cargo.toml --bench memory`, 1,000,000 keys): 33.6 bytes per key for the
//! fixed-size states and for sliding logs with one request, 56.9 with five.
//!
//! **Choose** the sliding window unless `N` is large and clients are many (its memory grows
//! with `N`): then the counter (approximate, constant memory) or the token bucket (when
//! bursts are what you mean). The fixed window is there for compatibility with what other
//! systems count.
//!
//! The edge, replayed with the manual clock:
//!
//! ```
//! use std::time::Duration;
//! use limiter::{Algorithm, Limit, Limiter, ManualClock, Policy};
//!
//! let admitted = |algorithm| {
//!     let clock = ManualClock::new();
//!     let limiter = Limiter::builder().clock(clock.clone()).build();
//!     let policy = Policy::for_algorithm(algorithm, 5, Duration::from_secs(60)).unwrap();
//!     let limit = Limit::new("edge", policy);
//!     let mut check = || limiter.check(&limit, b"client").now_or_never().unwrap().unwrap().allowed();
//!     check(); // the window opens at 0:00
//!     clock.advance(Duration::from_millis(59_500));
//!     let mut burst = (0..5).filter(|_| check()).count();
//!     clock.advance(Duration::from_millis(500));
//!     burst += (0..5).filter(|_| check()).count();
//!     burst
//! };
//! assert_eq!(admitted(Algorithm::FixedWindow), 9);
//! assert_eq!(admitted(Algorithm::SlidingWindow), 5); // 4, then 1 as 0:00 leaves the window
//! ```
