//! The fixed-size states (fixed window, counter, token bucket: 8 bytes each, so a table
//! entry is 16), their table, and what a check changed, to undo it.

use std::time::Duration;

use super::fingerprint_table::FingerprintTable;
use super::table::Moved;
use crate::algorithm::fixed_window::FixedWindow;
use crate::algorithm::sliding_window_counter::SlidingWindowCounter;
use crate::algorithm::token_bucket::TokenBucket;
use crate::{Decision, Policy};

/// A mark in whole milliseconds (saturating).
pub(super) fn millis(mark: Duration) -> u64 {
    u64::try_from(mark.as_millis()).unwrap_or(u64::MAX)
}

/// The fixed-size states, all 8 bytes, so a table entry is 16.
pub(super) trait CompactState: Copy + Default {
    fn check(&mut self, now_ms: u64, policy: &Policy, cost: u32) -> Decision;
    /// The mark of the check just admitted, in the units [`refund`](Self::refund) takes.
    fn mark(&self, now_ms: u64, policy: &Policy) -> Duration;
    fn refund(&mut self, mark: Duration, now_ms: u64, policy: &Policy, cost: u32);
    fn status(&self, now_ms: u64, policy: &Policy) -> Decision;
    fn is_expired(&self, now_ms: u64, policy: &Policy) -> bool;
    fn expires_in(&self, now_ms: u64, policy: &Policy) -> u64;
    /// The state as 64 bits, for a saved file.
    fn to_raw(self) -> u64;
    fn from_raw(raw: u64) -> Self;
    /// The same state on a clock `by_ms` ahead of the one it was counted on.
    fn shifted(self, by_ms: i64, policy: &Policy) -> Self;
    /// Whether a state read from a file could have been counted before `saved_ms`.
    fn plausible(self, saved_ms: u64, policy: &Policy) -> bool;
}

impl CompactState for FixedWindow {
    fn check(&mut self, now_ms: u64, policy: &Policy, cost: u32) -> Decision {
        FixedWindow::check_cost(self, now_ms, policy, cost)
    }
    fn mark(&self, now_ms: u64, policy: &Policy) -> Duration {
        Duration::from_millis(FixedWindow::mark_for(self, now_ms, policy))
    }
    fn refund(&mut self, mark: Duration, now_ms: u64, policy: &Policy, cost: u32) {
        FixedWindow::refund(self, millis(mark), now_ms, policy, cost)
    }
    fn status(&self, now_ms: u64, policy: &Policy) -> Decision {
        FixedWindow::status(self, now_ms, policy)
    }
    fn is_expired(&self, now_ms: u64, policy: &Policy) -> bool {
        FixedWindow::is_expired(self, now_ms, policy)
    }
    fn expires_in(&self, now_ms: u64, policy: &Policy) -> u64 {
        FixedWindow::expires_in(self, now_ms, policy)
    }
    fn to_raw(self) -> u64 {
        FixedWindow::to_raw(self)
    }
    fn from_raw(raw: u64) -> Self {
        FixedWindow::from_raw(raw)
    }
    fn shifted(self, by_ms: i64, policy: &Policy) -> Self {
        FixedWindow::shifted_for(self, by_ms, policy)
    }
    fn plausible(self, saved_ms: u64, policy: &Policy) -> bool {
        FixedWindow::plausible(self, saved_ms, policy)
    }
}

impl CompactState for SlidingWindowCounter {
    fn check(&mut self, now_ms: u64, policy: &Policy, cost: u32) -> Decision {
        SlidingWindowCounter::check_cost(self, now_ms, policy, cost)
    }
    fn mark(&self, now_ms: u64, policy: &Policy) -> Duration {
        Duration::from_millis(SlidingWindowCounter::mark(self, now_ms, policy))
    }
    fn refund(&mut self, mark: Duration, _: u64, policy: &Policy, cost: u32) {
        SlidingWindowCounter::refund(self, millis(mark), policy, cost)
    }
    fn status(&self, now_ms: u64, policy: &Policy) -> Decision {
        SlidingWindowCounter::status(self, now_ms, policy)
    }
    fn is_expired(&self, now_ms: u64, policy: &Policy) -> bool {
        SlidingWindowCounter::is_expired(self, now_ms, policy)
    }
    fn expires_in(&self, now_ms: u64, policy: &Policy) -> u64 {
        SlidingWindowCounter::expires_in(self, now_ms, policy)
    }
    fn to_raw(self) -> u64 {
        SlidingWindowCounter::to_raw(self)
    }
    fn from_raw(raw: u64) -> Self {
        SlidingWindowCounter::from_raw(raw)
    }
    fn shifted(self, by_ms: i64, policy: &Policy) -> Self {
        SlidingWindowCounter::shifted(self, by_ms, policy)
    }
    fn plausible(self, saved_ms: u64, policy: &Policy) -> bool {
        SlidingWindowCounter::plausible(self, saved_ms, policy)
    }
}

impl CompactState for TokenBucket {
    fn check(&mut self, now_ms: u64, policy: &Policy, cost: u32) -> Decision {
        TokenBucket::check_cost(self, now_ms, policy, cost)
    }
    fn mark(&self, _: u64, _: &Policy) -> Duration {
        Duration::from_nanos(TokenBucket::mark(self))
    }
    fn refund(&mut self, mark: Duration, now_ms: u64, policy: &Policy, cost: u32) {
        let back_ns = u64::try_from(mark.as_nanos()).unwrap_or(u64::MAX);
        TokenBucket::refund(self, back_ns, now_ms, policy, cost)
    }
    fn status(&self, now_ms: u64, policy: &Policy) -> Decision {
        TokenBucket::status(self, now_ms, policy)
    }
    // Forgotten a window after it is full again, not at once: a check whose reading lags
    // the sweep's (another worker's, or another shard's housekeeping) would otherwise start
    // a fresh bucket ahead of the full one and gain up to that lag in credit, once per
    // forgetting. A window later, any reading within the lag finds the kept bucket full
    // anyway, so dropping it gives nothing.
    fn is_expired(&self, now_ms: u64, policy: &Policy) -> bool {
        TokenBucket::is_expired(self, now_ms.saturating_sub(policy.window_ms()))
    }
    fn expires_in(&self, now_ms: u64, policy: &Policy) -> u64 {
        TokenBucket::expires_in(self, now_ms.saturating_sub(policy.window_ms()))
    }
    fn to_raw(self) -> u64 {
        TokenBucket::to_raw(self)
    }
    fn from_raw(raw: u64) -> Self {
        TokenBucket::from_raw(raw)
    }
    fn shifted(self, by_ms: i64, _: &Policy) -> Self {
        TokenBucket::shifted(self, by_ms)
    }
    fn plausible(self, saved_ms: u64, policy: &Policy) -> bool {
        TokenBucket::plausible(self, saved_ms, policy)
    }
}

/// A check's decision, what it changed (to undo it when another limit of the same request
/// rejects it), and its mark for a receipt (when it counted).
pub(super) type Counted = (Decision, Prior, Option<Duration>);

/// What a check changed, so that it can be taken back when another limit of the same
/// request rejects it.
#[derive(Clone, Copy)]
pub(super) enum Prior {
    /// Nothing changed (a rejection).
    Unchanged,
    Fixed(FixedWindow),
    Counter(SlidingWindowCounter),
    Bucket(TokenBucket),
    /// The log gained this many instants.
    Pushed(u32),
}

pub(super) trait Compact: CompactState {
    fn prior(self) -> Prior;
    fn from_prior(prior: Prior) -> Option<Self>;
}

impl Compact for FixedWindow {
    fn prior(self) -> Prior {
        Prior::Fixed(self)
    }
    fn from_prior(prior: Prior) -> Option<Self> {
        match prior {
            Prior::Fixed(state) => Some(state),
            _ => None,
        }
    }
}

impl Compact for SlidingWindowCounter {
    fn prior(self) -> Prior {
        Prior::Counter(self)
    }
    fn from_prior(prior: Prior) -> Option<Self> {
        match prior {
            Prior::Counter(state) => Some(state),
            _ => None,
        }
    }
}

impl Compact for TokenBucket {
    fn prior(self) -> Prior {
        Prior::Bucket(self)
    }
    fn from_prior(prior: Prior) -> Option<Self> {
        match prior {
            Prior::Bucket(state) => Some(state),
            _ => None,
        }
    }
}

/// States of fixed size.
pub(super) struct CompactTable<S> {
    pub(super) map: FingerprintTable<S>,
}

impl<S: Compact> CompactTable<S> {
    pub(super) fn new() -> Self {
        CompactTable {
            map: FingerprintTable::new(),
        }
    }

    #[inline]
    pub(super) fn check(
        &mut self,
        slot: usize,
        now_ms: u64,
        policy: &Policy,
        cost: u32,
    ) -> Counted {
        let state = self.map.at(slot);
        let before = *state;
        let decision = CompactState::check(state, now_ms, policy, cost);
        if decision.allowed() {
            let mark = state.mark(now_ms, policy);
            (decision, before.prior(), Some(mark))
        } else {
            (decision, Prior::Unchanged, None)
        }
    }

    pub(super) fn undo(&mut self, fp: u64, prior: Prior) {
        if let (Some(slot), Some(state)) = (self.map.find(fp), S::from_prior(prior)) {
            *self.map.at(slot) = state;
        }
    }

    pub(super) fn status(&self, fp: u64, now_ms: u64, policy: &Policy) -> Decision {
        self.map.get(fp).unwrap_or_default().status(now_ms, policy)
    }

    pub(super) fn refund(
        &mut self,
        fp: u64,
        mark: Duration,
        now_ms: u64,
        policy: &Policy,
        cost: u32,
    ) {
        if let Some(slot) = self.map.find(fp) {
            CompactState::refund(self.map.at(slot), mark, now_ms, policy, cost);
        }
    }

    pub(super) fn evict(&mut self, start: u64, keep: u64, now_ms: u64, policy: &Policy) -> bool {
        self.map
            .evict(start, keep, |state| Some(state.expires_in(now_ms, policy)))
            .is_some()
    }

    pub(super) fn shrink(&mut self, now_ms: u64, policy: &Policy) -> usize {
        self.map
            .shrink_half(|state| state.expires_in(now_ms, policy))
            .len()
    }

    pub(super) fn sweep(&mut self, now_ms: u64, policy: &Policy) -> usize {
        let before = self.map.len();
        self.map.retain(|state| !state.is_expired(now_ms, policy));
        before - self.map.len()
    }

    pub(super) fn clear(&mut self) -> usize {
        let removed = self.map.len();
        *self = CompactTable::new();
        removed
    }

    /// Every key held, with its state as 64 bits.
    pub(super) fn saved(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.map.entries().map(|(fp, state)| (fp, state.to_raw()))
    }

    /// Holds `fp` with the saved state `raw`, moved as `moved` says, unless it could not have
    /// been counted, no longer counts, or `fp` is held already. Whether it was added.
    pub(super) fn restore(&mut self, fp: u64, raw: u64, moved: Moved, policy: &Policy) -> bool {
        let saved = S::from_raw(raw);
        // Judged on the clock it was counted on: its life then is exact, where a stamp
        // moved past weeks of downtime would wrap.
        if !saved.plausible(moved.saved_ms, policy)
            || saved.expires_in(moved.saved_ms, policy) <= moved.elapsed_ms
            || self.map.find(fp).is_some()
        {
            return false;
        }
        let state = saved.shifted(moved.by_ms, policy);
        let slot = self.map.insert(fp);
        *self.map.at(slot) = state;
        true
    }
}
