//! Sliding window counter: windows aligned to multiples of `T`, and the estimate
//! `previous × (T − elapsed)/T + current`, where `elapsed` is the time since the current
//! window began. A request is admitted iff the estimate is below `N`; then `current` grows.
//!
//! Memory: 8 bytes per key (a 16-bit window number and two 24-bit counts), whatever `N`.
//! Error: the estimate assumes the previous window's requests were spread evenly. On random
//! traffic at 0.5 to 4 times the limit it admits within 1% of the exact window's total and
//! its densest interval of length `T` holds at most 1.03 N (measured by the reference
//! tests, which hold it to 2% and 1.05 N). In the worst case — the previous window's
//! requests bunched at its end — an interval of length `T` can hold `2N`, as with a fixed
//! window; the property tests check that bound.
//!
//! A reading in an earlier window than the state's (it reached the store after a later one)
//! is counted at the start of the state's window: the counts never move backwards.

use super::ms;
use crate::{Decision, Policy};

const COUNT_BITS: u32 = 24;
const COUNT_MASK: u64 = (1 << COUNT_BITS) - 1;

/// One key's two counts and the (wrapped) number of the window they belong to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SlidingWindowCounter {
    packed: u64,
}

impl SlidingWindowCounter {
    /// The state as 64 bits, for a store's saved file.
    pub(crate) fn to_raw(self) -> u64 {
        self.packed
    }

    /// A state from [`to_raw`](Self::to_raw)'s bits.
    pub(crate) fn from_raw(raw: u64) -> SlidingWindowCounter {
        SlidingWindowCounter { packed: raw }
    }

    /// Whether a state read from a file could have been counted by `policy` before
    /// `saved_ms`: no count above `max`, no window later than the save's.
    pub(crate) fn plausible(self, saved_ms: u64, policy: &Policy) -> bool {
        let (window, previous, current) = self.unpack();
        let max = u64::from(policy.max().get());
        let behind = ((saved_ms / policy.window_ms()) as u16).wrapping_sub(window) as i16;
        previous <= max && current <= max && behind >= 0
    }

    /// The same state on a clock `by_ms` ahead of the one it was counted on: its windows
    /// move by `by_ms` rounded to whole windows (windows are aligned to the clock), exact
    /// when `by_ms` is a multiple of the window.
    pub(crate) fn shifted(self, by_ms: i64, policy: &Policy) -> SlidingWindowCounter {
        let t = policy.window_ms() as i64;
        let windows = (by_ms + by_ms.signum() * t / 2) / t;
        let (window, previous, current) = self.unpack();
        SlidingWindowCounter::pack(window.wrapping_add(windows as u16), previous, current)
    }

    fn unpack(self) -> (u16, u64, u64) {
        let p = self.packed;
        (
            (p >> (2 * COUNT_BITS)) as u16,
            (p >> COUNT_BITS) & COUNT_MASK,
            p & COUNT_MASK,
        )
    }

    fn pack(window: u16, previous: u64, current: u64) -> SlidingWindowCounter {
        SlidingWindowCounter {
            packed: (u64::from(window) << (2 * COUNT_BITS)) | (previous << COUNT_BITS) | current,
        }
    }

    /// The counts `(previous, current)` as they stand in the window numbered `index`, which
    /// is not earlier than the state's own (see [`catch_up`](Self::catch_up)).
    #[inline]
    fn counts_in(self, index: u64) -> (u64, u64) {
        let (window, previous, current) = self.unpack();
        match (index as u16).wrapping_sub(window) as i16 {
            // An earlier window than the state's cannot be asked about once caught up; for
            // the sweeper, whose reading may be older, such state is simply not expired.
            i16::MIN..=0 => (previous, current),
            1 => (current, 0),
            _ => (0, 0),
        }
    }

    /// The window number and the time into it of `now_ms` — or of the start of the state's
    /// window when the reading lies in an earlier one (it reached the store after a later
    /// one): counts are never shifted backwards.
    #[inline]
    fn catch_up(self, now_ms: u64, t: u64) -> (u64, u64) {
        let index = now_ms / t;
        let elapsed = now_ms - index * t;
        if self.packed >> (2 * COUNT_BITS) == u64::from(index as u16) || self.packed == 0 {
            return (index, elapsed);
        }
        let (window, previous, current) = self.unpack();
        match window.wrapping_sub(index as u16) as i16 {
            ahead @ 1.. if previous > 0 || current > 0 => (index + ahead as u64, 0),
            _ => (index, elapsed),
        }
    }

    /// Counts a request worth `cost` units at `now_ms`, all or none: admitted iff `cost`
    /// requests one after the other would each be (the estimate plus `cost − 1` is below
    /// `N`). A cost above `N` is never admitted; a cost of 0 counts as 1.
    pub(crate) fn check_cost(&mut self, now_ms: u64, policy: &Policy, cost: u32) -> Decision {
        let t = policy.window_ms();
        let max = u64::from(policy.max().get());
        let cost = u64::from(cost.max(1));
        let (index, elapsed) = self.catch_up(now_ms, t);
        let (previous, current) = self.counts_in(index);
        // Everything is scaled by T to stay in integers: estimate × T.
        let weighted = previous * (t - elapsed) + current * t;
        if cost > max || weighted + (cost - 1) * t >= max * t {
            let target = (max + 1).saturating_sub(cost).max(1);
            let wait = time_until_below(previous, current, elapsed, t, target);
            let left = (max * t).saturating_sub(weighted).div_ceil(t);
            return Decision::reject_leaving_ns(max as u32, left as u32, ms(wait));
        }
        let current = current + cost;
        *self = SlidingWindowCounter::pack(index as u16, previous, current);
        let room = (max * t).saturating_sub(weighted + cost * t);
        let remaining = room.div_ceil(t);
        let wait = time_until_below(previous, current, elapsed, t, max - remaining);
        Decision::allow_ns(max as u32, remaining as u32, ms(wait))
    }

    /// The mark of the check just admitted (its [`Receipt`](crate::Receipt)): the start of
    /// the window it counted in, as a full reading near `now_ms`.
    pub(crate) fn mark(&self, now_ms: u64, policy: &Policy) -> u64 {
        let t = policy.window_ms();
        let index = now_ms / t;
        let (window, _, _) = self.unpack();
        let ahead = window.wrapping_sub(index as u16) as i16;
        index.saturating_add_signed(i64::from(ahead)) * t
    }

    /// Takes back `cost` units a check counted in the window of `at_ms` (its
    /// [`mark`](Self::mark)), while that window still weighs: from the current count, or
    /// from the previous one once the next window has begun.
    pub(crate) fn refund(&mut self, at_ms: u64, policy: &Policy, cost: u32) {
        let (window, previous, current) = self.unpack();
        let cost = u64::from(cost);
        match window.wrapping_sub((at_ms / policy.window_ms()) as u16) {
            0 => *self = Self::pack(window, previous, current.saturating_sub(cost)),
            1 => *self = Self::pack(window, previous.saturating_sub(cost), current),
            _ => {}
        }
    }

    /// Where the key stands at `now_ms`, with nothing counted: how many requests would be
    /// admitted now, and when used quota next comes back (zero when no whole request's worth
    /// is used).
    pub(crate) fn status(&self, now_ms: u64, policy: &Policy) -> Decision {
        let t = policy.window_ms();
        let max = u64::from(policy.max().get());
        let (index, elapsed) = self.catch_up(now_ms, t);
        let (previous, current) = self.counts_in(index);
        let weighted = previous * (t - elapsed) + current * t;
        if weighted >= max * t {
            let wait = time_until_below(previous, current, elapsed, t, max);
            return Decision::reject_ns(max as u32, ms(wait));
        }
        let remaining = (max * t - weighted).div_ceil(t);
        let wait = if remaining >= max {
            0
        } else {
            time_until_below(previous, current, elapsed, t, max - remaining)
        };
        Decision::allow_ns(max as u32, remaining as u32, ms(wait))
    }

    /// Whether the counts no longer weigh on any estimate at `now_ms`.
    pub(crate) fn is_expired(&self, now_ms: u64, policy: &Policy) -> bool {
        self.counts_in(now_ms / policy.window_ms()) == (0, 0)
    }

    /// Milliseconds until the counts no longer weigh on any estimate.
    pub(crate) fn expires_in(&self, now_ms: u64, policy: &Policy) -> u64 {
        let t = policy.window_ms();
        let (window, previous, current) = self.unpack();
        if previous == 0 && current == 0 {
            return 0;
        }
        let index = now_ms / t;
        let behind = (index as u16).wrapping_sub(window) as i16;
        // The current count weighs until the end of the next window.
        let end = match behind {
            i16::MIN..=0 => (index + u64::from(behind.unsigned_abs()) + 2) * t,
            1 => (index + 1) * t,
            _ => return 0,
        };
        end - now_ms
    }
}

/// The smallest wait `Δ` (ms) after which the estimate is below `target`, with no further
/// requests admitted. `elapsed` is the time into the current window; `target ≥ 1`.
fn time_until_below(previous: u64, current: u64, elapsed: u64, t: u64, target: u64) -> u64 {
    let to_edge = t - elapsed;
    // Still in this window, the estimate × T is previous × x + current × T with x the time
    // left in the window: below target × T iff previous × x < (target − current) × T.
    if current < target && previous > 0 {
        let x_max = ((target - current) * t).div_ceil(previous) - 1;
        if x_max >= to_edge {
            return 0;
        }
        if x_max >= 1 {
            return to_edge - x_max;
        }
    }
    // In the next window `current` becomes the previous count, weighted by the time y left
    // in that window: below target iff current × y < target × T.
    if current == 0 {
        return to_edge;
    }
    let y_max = (target * t).div_ceil(current) - 1;
    if y_max >= t {
        to_edge
    } else {
        to_edge + t - y_max
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_cost_of_zero_counts_as_one() {
        let policy = Policy::for_algorithm(
            crate::Algorithm::SlidingWindowCounter,
            2,
            Duration::from_secs(60),
        )
        .unwrap();
        let mut state = SlidingWindowCounter::default();
        assert_eq!(state.check_cost(0, &policy, 0).remaining(), 1);
        assert_eq!(state.check_cost(0, &policy, 0).remaining(), 0);
        assert!(!state.check_cost(0, &policy, 0).allowed());
    }
}
