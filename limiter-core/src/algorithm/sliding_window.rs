//! Sliding window (exact log): a request at `now` is admitted iff fewer than `N` admitted
//! requests of its key have instants `t` with `now − t < T`. Rejected requests are not
//! recorded. `Retry-After = oldest counted t + T − now`.
//!
//! The log is a queue of instants in arrival order: expired instants leave from the front,
//! an admitted one joins at the back, so a check costs O(1) amortized and never copies the
//! log. Memory: one 32-bit instant per admitted request still in the window, at most `N`.

use super::{ms, Stamp};
use crate::{Decision, Policy};
use std::collections::VecDeque;

/// The instants of one key's admitted requests, oldest first. Stores implement it over their
/// own layout; [`VecDeque`] implements it for reference and tests.
pub(crate) trait InstantLog {
    /// How many instants the log holds.
    fn len(&self) -> usize;
    /// The oldest instant, if any.
    fn oldest(&self) -> Option<Stamp>;
    /// The newest instant, if any.
    fn newest(&self) -> Option<Stamp>;
    /// Drops the oldest instant.
    fn pop_oldest(&mut self);
    /// Drops the newest instant (undoes a [`push`](InstantLog::push)).
    fn pop_newest(&mut self);
    /// Appends an instant, never earlier than those already held. Called only while
    /// `len() < N`.
    fn push(&mut self, stamp: Stamp);
    /// The `i`-th oldest instant (0 is the oldest); `i < len()`.
    fn nth(&self, i: usize) -> Stamp;
    /// Removes `count` instants from the `from`-th oldest on; `from + count <= len()`.
    fn remove(&mut self, from: usize, count: usize);
}

/// Counts a request worth `cost` units at `now_ms` against `log`: `cost` instants, all or
/// none. A cost above `N` is never admitted.
///
/// A reading earlier than the newest instant held (it reached the store after a later
/// one) is counted at that newest instant: the log stays in order, and nothing is dropped
/// for looking too old, or too young.
pub(crate) fn check_cost<L: InstantLog + ?Sized>(
    log: &mut L,
    now_ms: u64,
    policy: &Policy,
    cost: u32,
) -> Decision {
    let now_ms = log
        .newest()
        .map_or(now_ms, |newest| newest.catch_up(now_ms));
    check_in_order(log, now_ms, policy, cost)
}

/// [`check_cost`] for a reading known not to be earlier than any instant the log holds (a store
/// that tracks the latest reading it has seen knows): it saves reading the newest instant,
/// a second cache line for a long log.
pub(crate) fn check_in_order<L: InstantLog + ?Sized>(
    log: &mut L,
    now_ms: u64,
    policy: &Policy,
    cost: u32,
) -> Decision {
    let window = policy.window_ms();
    let max = policy.max().get();
    forget_expired(log, now_ms, window);
    let len = log.len();
    let cost = cost as usize;
    if len + cost <= max as usize {
        for _ in 0..cost {
            log.push(Stamp::at(now_ms));
        }
        let next_back = match log.oldest() {
            Some(oldest) => window - oldest.age(now_ms),
            None => window,
        };
        Decision::allow_ns(max, max - log.len() as u32, ms(next_back))
    } else {
        // Admitted once the oldest `len + cost − N` instants have left the window.
        let leaving = len + cost - max as usize;
        let last_to_leave = if leaving <= len {
            log.nth(leaving - 1)
        } else {
            // More than `N` at once: never admitted; the wait is until the log is empty.
            log.newest().unwrap_or(Stamp::at(now_ms))
        };
        let remaining = (max as usize).saturating_sub(len) as u32;
        Decision::reject_leaving_ns(max, remaining, ms(window - last_to_leave.age(now_ms)))
    }
}

/// Takes back `cost` instants a check recorded at `at_ms` (the instant it counted at, its
/// [`Receipt`](crate::Receipt)'s mark), at the reading `now_ms`: instants of exactly that
/// instant, never later or earlier ones, which are other requests'. Nothing once `at_ms` has
/// left the window: those instants no longer count. Instants leave in order, so the search
/// starts from the newest: a refund soon after its check reads a few.
pub(crate) fn refund<L: InstantLog + ?Sized>(
    log: &mut L,
    at_ms: u64,
    now_ms: u64,
    policy: &Policy,
    cost: u32,
) {
    if now_ms.saturating_sub(at_ms) >= policy.window_ms() {
        return;
    }
    let at = Stamp::at(at_ms);
    let mut end = log.len();
    while end > 0 && log.nth(end - 1).signed_age(at_ms) < 0 {
        end -= 1;
    }
    let mut from = end;
    while from > 0 && end - from < cost as usize && log.nth(from - 1) == at {
        from -= 1;
    }
    log.remove(from, end - from);
}

/// Where the key stands at `now_ms`, with nothing counted: how many requests would be
/// admitted now, and when used quota next comes back (zero when none is used). Drops the
/// instants that left the window, which changes no decision.
pub(crate) fn status<L: InstantLog + ?Sized>(
    log: &mut L,
    now_ms: u64,
    policy: &Policy,
) -> Decision {
    let now_ms = log
        .newest()
        .map_or(now_ms, |newest| newest.catch_up(now_ms));
    let window = policy.window_ms();
    let max = policy.max().get();
    forget_expired(log, now_ms, window);
    let next_back = log
        .oldest()
        .map_or(0, |oldest| ms(window - oldest.age(now_ms)));
    match max - log.len() as u32 {
        0 => Decision::reject_ns(max, next_back),
        left => Decision::allow_ns(max, left, next_back),
    }
}

fn forget_expired<L: InstantLog + ?Sized>(log: &mut L, now_ms: u64, window: u64) {
    while let Some(oldest) = log.oldest() {
        if oldest.age(now_ms) < window {
            break;
        }
        log.pop_oldest();
    }
}

/// Whether a log whose newest instant is `newest` holds nothing that counts at `now_ms`.
pub(crate) fn is_expired(newest: Stamp, now_ms: u64, policy: &Policy) -> bool {
    newest.age(now_ms) >= policy.window_ms()
}

/// Milliseconds until a log whose newest instant is `newest` can be forgotten.
pub(crate) fn expires_in(newest: Stamp, now_ms: u64, policy: &Policy) -> u64 {
    policy.window_ms().saturating_sub(newest.age(now_ms))
}

impl InstantLog for VecDeque<Stamp> {
    fn len(&self) -> usize {
        VecDeque::len(self)
    }
    fn oldest(&self) -> Option<Stamp> {
        self.front().copied()
    }
    fn newest(&self) -> Option<Stamp> {
        self.back().copied()
    }
    fn pop_oldest(&mut self) {
        self.pop_front();
    }
    fn pop_newest(&mut self) {
        self.pop_back();
    }
    fn push(&mut self, stamp: Stamp) {
        self.push_back(stamp);
    }
    fn nth(&self, i: usize) -> Stamp {
        self[i]
    }
    fn remove(&mut self, from: usize, count: usize) {
        self.drain(from..from + count);
    }
}
