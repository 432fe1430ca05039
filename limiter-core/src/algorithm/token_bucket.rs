//! Token bucket, as GCRA: a bucket of `B` tokens refilled continuously at `N` per `T`.
//!
//! The state is the theoretical arrival time (TAT): the instant the bucket would be full
//! again. With `I = T / N` (the time per token, in nanoseconds, rounded up), a request at
//! `now` finds `used = max(TAT, now) − now` of the bucket spent and is admitted iff
//! `used + I ≤ B × I`; it then moves TAT by `I`. `Retry-After = used + I − B × I`, the time
//! until one token is back. Memory: 8 bytes per key, whatever `N` and `B`.
//!
//! A reading earlier than others already counted finds more of the bucket used, never less:
//! readings that reach the store out of order can only make it stricter.

use crate::{Decision, Policy};

/// The longest wait a bucket reports: far beyond any policy's, and exact in Lua's doubles.
const MOST_WAIT: u128 = 1 << 59;

/// A policy's delay in nanoseconds (0 without one).
fn delay_ns(policy: &Policy) -> u64 {
    policy
        .delay()
        .map_or(0, |d| d.as_millis() as u64 * 1_000_000)
}

/// One key's bucket, as its theoretical arrival time in nanoseconds of the clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TokenBucket {
    tat_ns: u64,
}

impl TokenBucket {
    /// The state as 64 bits, for a store's saved file.
    pub(crate) fn to_raw(self) -> u64 {
        self.tat_ns
    }

    /// A state from [`to_raw`](Self::to_raw)'s bits.
    pub(crate) fn from_raw(raw: u64) -> TokenBucket {
        TokenBucket { tat_ns: raw }
    }

    /// Whether a state read from a file could have been counted by `policy` before
    /// `saved_ms`: no more of the bucket used than it holds.
    pub(crate) fn plausible(self, saved_ms: u64, policy: &Policy) -> bool {
        // A bucket with a delay holds tokens taken ahead, up to the delay past its capacity.
        let ahead = policy.delay().map_or(0, |d| d.as_nanos());
        let most =
            u128::from(policy.burst().get()) * u128::from(policy.emission_interval_ns()) + ahead;
        u128::from(self.tat_ns) <= u128::from(nanos(saved_ms)) + most
    }

    /// The same state on a clock `by_ms` ahead of the one it was counted on. A bucket full
    /// again before that clock's zero is a fresh one.
    pub(crate) fn shifted(self, by_ms: i64) -> TokenBucket {
        let by_ns = i128::from(by_ms) * 1_000_000;
        let tat = (i128::from(self.tat_ns) + by_ns).clamp(0, i128::from(u64::MAX));
        TokenBucket { tat_ns: tat as u64 }
    }

    /// Counts a request worth `cost` tokens at `now_ms`, all or none. A cost above the
    /// burst is never admitted.
    pub(crate) fn check_cost(&mut self, now_ms: u64, policy: &Policy, cost: u32) -> Decision {
        let max = policy.max().get();
        let interval = policy.emission_interval_ns();
        // Policy bounds B × I below 2⁵² ns, so these fit in u64 (a cost up to 2³² tokens:
        // below 2⁸⁴ in u128).
        let capacity = u64::from(policy.burst().get()) * interval;
        let taken = u128::from(cost) * u128::from(interval);
        let now = nanos(now_ms);
        let used = self.tat_ns.saturating_sub(now);
        if u128::from(used) + taken > u128::from(capacity) {
            let wait = (u128::from(used) + taken - u128::from(capacity)).min(MOST_WAIT);
            // With a delay, a request whose tokens come within it takes them now, ahead,
            // and waits for them: the bucket holds its place (a cost above the burst never
            // fits, however long it waits). One that would wait longer may come back once
            // its wait is within the delay.
            let delay = u128::from(delay_ns(policy));
            let fits = taken <= u128::from(capacity);
            if wait <= delay && fits {
                self.tat_ns = now.saturating_add((u128::from(used) + taken) as u64);
                return Decision::allow_after_ns(max, wait as u64);
            }
            let retry = if fits { wait - delay } else { wait };
            let left = (capacity.saturating_sub(used) / interval).min(u64::from(u32::MAX));
            return Decision::reject_leaving_ns(max, left as u32, retry as u64);
        }
        let used = used + taken as u64;
        self.tat_ns = now.saturating_add(used);
        // One division gives both: the whole tokens left, and (as the capacity is a whole
        // number of tokens) how far `used` is from its next whole token.
        let left = capacity - used;
        let remaining = (left / interval).min(u64::from(u32::MAX)) as u32;
        let next_back = match left % interval {
            0 => interval,
            partial => interval - partial,
        };
        Decision::allow_ns(max, remaining, next_back)
    }

    /// The mark of the check just admitted (its [`Receipt`](crate::Receipt)): the instant,
    /// in nanoseconds of the clock, by which its tokens are back anyway — the bucket's
    /// theoretical arrival time right after it.
    pub(crate) fn mark(&self) -> u64 {
        self.tat_ns
    }

    /// Gives back what is still owed of `cost` tokens taken by a check whose tokens are back
    /// anyway at `back_ns` (its [`mark`](Self::mark)), at the reading `now_ms`. Tokens come
    /// back oldest first, so at `now` the check is owed `back − now` of them (at most its
    /// cost, none once `back` has passed): a refund that arrives after its tokens came back
    /// by themselves gives nothing, and never a later request's token.
    pub(crate) fn refund(&mut self, back_ns: u64, now_ms: u64, policy: &Policy, cost: u32) {
        let taken = u64::from(cost).saturating_mul(policy.emission_interval_ns());
        let owed = back_ns.saturating_sub(nanos(now_ms)).min(taken);
        self.tat_ns = self.tat_ns.saturating_sub(owed);
    }

    /// Where the bucket stands at `now_ms`, with nothing taken: how many requests would be
    /// admitted now, and when the next whole token comes back (zero when the bucket is full).
    pub(crate) fn status(&self, now_ms: u64, policy: &Policy) -> Decision {
        let max = policy.max().get();
        let interval = policy.emission_interval_ns();
        let capacity = u64::from(policy.burst().get()) * interval;
        let used = self.tat_ns.saturating_sub(nanos(now_ms));
        if used + interval > capacity {
            // With a delay, a bucket that would hold one more request's place stands as
            // admitting it (after a wait): nothing left now, a token back in `over`.
            let over = used + interval - capacity;
            let delay = delay_ns(policy);
            if over <= delay {
                return Decision::allow_ns(max, 0, over);
            }
            return Decision::reject_ns(max, over - delay);
        }
        let left = capacity - used;
        let remaining = (left / interval).min(u64::from(u32::MAX)) as u32;
        let next_back = match (used, left % interval) {
            (0, _) => 0,
            (_, 0) => interval,
            (_, partial) => interval - partial,
        };
        Decision::allow_ns(max, remaining, next_back)
    }

    /// Whether the bucket is full at `now_ms`: the state can be forgotten.
    pub(crate) fn is_expired(&self, now_ms: u64) -> bool {
        self.tat_ns <= nanos(now_ms)
    }

    /// Milliseconds until the bucket is full again, rounded up.
    pub(crate) fn expires_in(&self, now_ms: u64) -> u64 {
        self.tat_ns
            .saturating_sub(nanos(now_ms))
            .div_ceil(1_000_000)
    }
}

/// A reading in nanoseconds. Readings are time since boot (or the epoch, for Redis): far
/// from the 584 years where this saturates rather than overflows.
#[inline]
fn nanos(now_ms: u64) -> u64 {
    now_ms.saturating_mul(1_000_000)
}
