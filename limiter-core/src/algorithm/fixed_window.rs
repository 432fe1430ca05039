//! Fixed window: a window `[s, s + T)` opens at a key's first request when none is open; up
//! to `N` requests are admitted in it; the first request at or after `s + T` opens the next.
//!
//! Memory: 8 bytes per key. Error: a client can spend `N` at the end of one window and `N`
//! at the start of the next, `2N` within an interval far shorter than `T`.
//!
//! A reading earlier than the open window's start (it reached the store after a later one)
//! is counted at the start: it never reopens or resets the window.

use super::calendar::CalendarQuota;
use super::{ms, Stamp};
use crate::{Decision, Policy};

/// The open window of one key: when it opened and how many requests it admitted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FixedWindow {
    start: Stamp,
    count: u32,
}

impl FixedWindow {
    /// The state as 64 bits, for a store's saved file.
    pub(crate) fn to_raw(self) -> u64 {
        (u64::from(self.start.to_bits()) << 32) | u64::from(self.count)
    }

    /// A state from [`to_raw`](Self::to_raw)'s bits.
    pub(crate) fn from_raw(raw: u64) -> FixedWindow {
        FixedWindow {
            start: Stamp::from_bits((raw >> 32) as u32),
            count: raw as u32,
        }
    }

    /// A calendar quota's state in the same 64 bits (the period's number where a window
    /// keeps its start): a policy with a calendar is counted by [`CalendarQuota`].
    fn quota(self) -> CalendarQuota {
        CalendarQuota::from_raw(self.to_raw())
    }

    /// Runs `f` on the state as a calendar quota, and keeps what it made of it.
    fn as_quota<T>(&mut self, f: impl FnOnce(&mut CalendarQuota) -> T) -> T {
        let mut quota = self.quota();
        let result = f(&mut quota);
        *self = FixedWindow::from_raw(quota.to_raw());
        result
    }

    /// Whether a state read from a file could have been counted by `policy` before
    /// `saved_ms`: no more than `max` counted, no window opened later.
    pub(crate) fn plausible(self, saved_ms: u64, policy: &Policy) -> bool {
        if policy.calendar().is_some() {
            return self.quota().plausible(saved_ms, policy);
        }
        self.count <= policy.max().get() && self.start.signed_age(saved_ms) >= 0
    }

    /// The same state on a clock `by_ms` ahead of the one it was counted on (a calendar
    /// quota's period is the calendar's, whatever the clock: it stays).
    pub(crate) fn shifted_for(self, by_ms: i64, policy: &Policy) -> FixedWindow {
        match policy.calendar() {
            Some(_) => self,
            None => self.shifted(by_ms),
        }
    }

    /// The same state on a clock `by_ms` ahead of the one it was counted on.
    pub(crate) fn shifted(self, by_ms: i64) -> FixedWindow {
        FixedWindow {
            start: Stamp::from_bits(self.start.to_bits().wrapping_add(by_ms as u32)),
            count: self.count,
        }
    }

    /// Counts a request worth `cost` units at `now_ms`: all of them, or none. A cost above
    /// `max` is never admitted.
    pub(crate) fn check_cost(&mut self, now_ms: u64, policy: &Policy, cost: u32) -> Decision {
        if policy.calendar().is_some() {
            return self.as_quota(|q| q.check_cost(now_ms, policy, cost));
        }
        let now_ms = self.catch_up(now_ms);
        let window = policy.window_ms();
        let max = policy.max().get();
        if self.is_expired(now_ms, policy) {
            *self = FixedWindow {
                start: Stamp::at(now_ms),
                count: 0,
            };
        }
        let ends_in = ms(window - self.start.age(now_ms));
        // (Saturating: a state never holds more than `max`, and a damaged one must not panic.)
        if cost <= max.saturating_sub(self.count) {
            self.count += cost;
            Decision::allow_ns(max, max - self.count, ends_in)
        } else {
            Decision::reject_leaving_ns(max, max.saturating_sub(self.count), ends_in)
        }
    }

    /// [`mark`](Self::mark) under `policy`: a calendar quota's is its period's start.
    pub(crate) fn mark_for(&self, now_ms: u64, policy: &Policy) -> u64 {
        match policy.calendar() {
            Some(_) => self.quota().mark(policy),
            None => self.mark(now_ms),
        }
    }

    /// The mark of the check just admitted (its [`Receipt`](crate::Receipt)): the start of
    /// the window that counted it, as a full reading near `now_ms`.
    pub(crate) fn mark(&self, now_ms: u64) -> u64 {
        now_ms.saturating_add_signed(-self.start.signed_age(now_ms))
    }

    /// Takes back `cost` units of a check admitted by the window that started at `start_ms`
    /// (its [`mark`](Self::mark)), if that window is still the open one at `now_ms`: a unit
    /// counted by a window that has ended no longer counts, and a later window's units are
    /// not its to take back.
    pub(crate) fn refund(&mut self, start_ms: u64, now_ms: u64, policy: &Policy, cost: u32) {
        if policy.calendar().is_some() {
            return self.as_quota(|q| q.refund(start_ms, now_ms, policy, cost));
        }
        if self.count > 0 && self.start == Stamp::at(start_ms) && !self.is_expired(now_ms, policy) {
            self.count -= cost.min(self.count);
        }
    }

    /// Where the key stands at `now_ms`, with nothing counted: how many requests would be
    /// admitted now, and when used quota next comes back (zero when none is used).
    pub(crate) fn status(&self, now_ms: u64, policy: &Policy) -> Decision {
        if policy.calendar().is_some() {
            return self.quota().status(now_ms, policy);
        }
        let max = policy.max().get();
        let now_ms = self.catch_up(now_ms);
        if self.is_expired(now_ms, policy) {
            return Decision::allow_ns(max, max, 0);
        }
        let ends_in = ms(policy.window_ms() - self.start.age(now_ms));
        match max - self.count {
            0 => Decision::reject_ns(max, ends_in),
            left => Decision::allow_ns(max, left, ends_in),
        }
    }

    /// `now_ms`, or the open window's start when that is later.
    fn catch_up(&self, now_ms: u64) -> u64 {
        if self.count == 0 {
            now_ms
        } else {
            self.start.catch_up(now_ms)
        }
    }

    /// Whether no window is open at `now_ms`: the state can be forgotten.
    pub(crate) fn is_expired(&self, now_ms: u64, policy: &Policy) -> bool {
        if policy.calendar().is_some() {
            return self.quota().is_expired(now_ms, policy);
        }
        self.count == 0 || self.start.age(now_ms) >= policy.window_ms()
    }

    /// Milliseconds until the state can be forgotten.
    pub(crate) fn expires_in(&self, now_ms: u64, policy: &Policy) -> u64 {
        if policy.calendar().is_some() {
            return self.quota().expires_in(now_ms, policy);
        }
        if self.count == 0 {
            return 0;
        }
        policy.window_ms().saturating_sub(self.start.age(now_ms))
    }
}
