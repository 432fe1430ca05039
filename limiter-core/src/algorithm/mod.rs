//! The four counting algorithms, as pure state machines: `(state, now, policy) → decision`.
//!
//! Every store — the in-memory one, the Redis scripts, the reference models in the tests —
//! follows these definitions. Terms: `now` is the clock reading in milliseconds, `T` the
//! window, `N` the policy's `max`, `B` the token bucket's `burst`.
//!
//! | algorithm | admits a request at `now` iff | `Retry-After` | state per key | error |
//! | --- | --- | --- | --- | --- |
//! | [`sliding_window`] | fewer than `N` admitted instants `t` with `now − t < T` | `oldest counted t + T − now` | one 32-bit instant per admitted request still in the window | none |
//! | [`fixed_window`] | the window `[s, s + T)` opened by the key's first request holds fewer than `N` | `s + T − now` | 8 bytes | `2N − 1` within an instant across an edge, `2N` within `[s, s + T]` |
//! | [`sliding_window_counter`] | `previous × (T − elapsed)/T + current < N`, windows aligned to multiples of `T` | exact time until the estimate drops below `N` | 8 bytes | within 1% of the exact window's total on random traffic; `2N` per interval of length `T` in the worst case |
//! | [`calendar`] | the calendar period (day, week from Monday, month; UTC or an offset) holds fewer than `N` | the period's end `− now` | 8 bytes | a fixed window's: `2N` across a boundary |
//! | [`token_bucket`] | the bucket (capacity `B`, refilled at `N` per `T`, GCRA) holds a token | time until one token is back | 8 bytes | none: it is a different contract (bursts of `B`) |
//!
//! The fixed window's defect, concretely: with 5 per minute, a client whose window opened
//! at 0:00 with one request sends 5 at 0:59.5 and 5 at 1:00.0. Fixed window admits 9 of
//! them (4 + 5) within half a second, 10 within the minute; the sliding window admits 5
//! (4 + 1). Because a window opens at the key's first request, which sits at its start,
//! `2N − 1` is the most a fixed window lets through in an interval shorter than `T`; with
//! windows aligned to the clock it would be `2N`.
//!
//! Memory of the exact sliding window, in figures: the in-memory store keeps a 16-byte table
//! entry per key (key fingerprint and the first instant inline) and, once a key has two
//! instants in the window, `4 × N` bytes of log. With `N = 5` that is about 34 bytes for a
//! client seen once and about 57 for one at its limit (measured: `cargo bench --manifest-path benches/Cargo.toml --bench memory`);
//! with `N = 1000` a client at its limit
//! costs 4 KB. For large `N` and many clients use [`sliding_window_counter`] or
//! [`token_bucket`]: 8 bytes of state whatever `N` is.

pub(crate) mod calendar;
pub(crate) mod fixed_window;
pub(crate) mod sliding_window;
pub(crate) mod sliding_window_counter;
pub(crate) mod token_bucket;

#[cfg(test)]
mod examples;

/// A millisecond instant kept in 32 bits: the compact form stores keep per request.
///
/// Differences are computed with wrapping arithmetic and read as signed, which is exact
/// while two instants are less than 2³¹ ms (24 days) apart. Stores guarantee that: they drop
/// state a few windows after its last use, and windows are at most
/// [`Policy::MAX_WINDOW`](crate::Policy::MAX_WINDOW) long.
///
/// A stamp can be *later* than a reading: two workers read the clock, and the later reader
/// takes the store's lock first. Such a reading is treated as the stamp's instant (see
/// [`Stamp::catch_up`]): an old reading never makes state look expired.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stamp(u32);

impl Stamp {
    /// The stamp of the clock reading `now_ms`.
    #[inline]
    pub(crate) const fn at(now_ms: u64) -> Stamp {
        Stamp(now_ms as u32)
    }

    /// Milliseconds from this stamp to `now_ms`: 0 when the stamp is later than `now_ms`.
    #[inline]
    pub(crate) const fn age(self, now_ms: u64) -> u64 {
        let signed = (now_ms as u32).wrapping_sub(self.0) as i32;
        if signed < 0 {
            0
        } else {
            signed as u64
        }
    }

    /// Milliseconds from this stamp to `now_ms`, negative when the stamp is later.
    #[inline]
    pub(crate) const fn signed_age(self, now_ms: u64) -> i64 {
        (now_ms as u32).wrapping_sub(self.0) as i32 as i64
    }

    /// `now_ms`, or this stamp's instant when that is later: the reading a check uses, so
    /// that state is never judged by a clock reading older than itself.
    #[inline]
    pub(crate) const fn catch_up(self, now_ms: u64) -> u64 {
        let signed = (now_ms as u32).wrapping_sub(self.0) as i32;
        if signed < 0 {
            now_ms.saturating_add(signed.unsigned_abs() as u64)
        } else {
            now_ms
        }
    }

    /// The raw 32 bits, for stores that pack stamps themselves.
    pub(crate) const fn to_bits(self) -> u32 {
        self.0
    }

    /// A stamp from raw bits written by [`Stamp::to_bits`].
    pub(crate) const fn from_bits(bits: u32) -> Stamp {
        Stamp(bits)
    }
}

/// Milliseconds as the nanoseconds a [`Decision`](crate::Decision) holds. Waits are below
/// two windows of at most 7 days, far from overflowing.
pub(crate) const fn ms(millis: u64) -> u64 {
    millis * 1_000_000
}
