//! What the check script answers, read back: a decision per key and, for a key it counted,
//! the mark of the check's [`Receipt`](crate::Receipt).
//!
//! The script answers three numbers per limit: `counted, remaining, wait_ns`. `counted` is 0
//! when the limit rejects the check, -2 when it rejects it and a block of its penalty
//! starts, -3 when the client's block refuses it, -4 when it would count it but the server
//! refused the write ([`UNWRITTEN`]), -1 when it would admit it but counted
//! nothing (another limit rejected it, or the check only peeked), and else `1 + d`, `d` being how
//! far the instant the script counted at lies after the call's clock reading (a reading
//! earlier than the key's state is counted at the state's newest instant). From that
//! instant and the decision, each algorithm's mark follows exactly, as the in-memory store
//! writes it.

use std::time::Duration;

/// The answer of a limit whose check the script would have counted, but the server refused
/// to write (out of memory, short of replicas, a failed save): undecided.
pub(super) const UNWRITTEN: i64 = -4;

use crate::{Algorithm, Decision, Limit, Policy};

/// The decision of one limit's answer, and its mark when the check counted it. `clock` is
/// the reading (ms) the call decided the check at.
pub(super) fn decode(limit: &Limit, answer: &[i64], clock: i64) -> (Decision, Option<Duration>) {
    let policy = limit.policy();
    let max = policy.max().get();
    let remaining = u32::try_from(answer[1]).unwrap_or(0);
    let wait_ns = u64::try_from(answer[2]).unwrap_or(0);
    let wait = Duration::from_nanos(wait_ns);
    match answer[0] {
        0 => return (Decision::reject_leaving(max, remaining, wait), None),
        -2 | -3 => {
            if answer[0] == -2 {
                crate::observe::block_started(limit.scope());
            }
            let rejection = Decision::reject_leaving(max, remaining, wait).marked_blocked();
            return (rejection, None);
        }
        ..0 => return (Decision::allow(max, remaining, wait), None),
        _ => {}
    }
    let used = u64::try_from(clock.saturating_add(answer[0] - 1)).unwrap_or(0);
    if answer[2] < 0 {
        // An admission that waits (a bucket's delay): the bucket is full past its capacity
        // by the wait, and its tokens are back at `used + capacity + wait`.
        let wait_ns = answer[2].unsigned_abs();
        let capacity = u64::from(policy.burst().get()) * policy.emission_interval_ns();
        let mark = Duration::from_millis(used) + Duration::from_nanos(capacity + wait_ns);
        return (Decision::allow_after_ns(max, wait_ns), Some(mark));
    }
    let mark = mark(policy, used, answer[1], wait_ns);
    (Decision::allow(max, remaining, wait), Some(mark))
}

/// The mark of a check counted at `used` (ms) with `remaining` left and `wait_ns` until
/// used quota next comes back, as [`crate::algorithm`]'s `mark`s define it.
fn mark(policy: &Policy, used: u64, remaining: i64, wait_ns: u64) -> Duration {
    let window = policy.window_ms();
    if let Some(calendar) = policy.calendar() {
        // The start of the period that counted it.
        return Duration::from_millis(calendar.start_ms(calendar.index(used)));
    }
    match policy.algorithm() {
        Algorithm::SlidingWindow => Duration::from_millis(used),
        // The window ends `wait` after `used`: it started a window before that end.
        Algorithm::FixedWindow => {
            Duration::from_millis((used + wait_ns / 1_000_000).saturating_sub(window))
        }
        Algorithm::SlidingWindowCounter => Duration::from_millis(used / window * window),
        // The bucket's content after the check is `remaining` whole tokens and the part of
        // one that `wait` is short of: its tokens are all back once the rest refills.
        Algorithm::TokenBucket => {
            let interval = u128::from(policy.emission_interval_ns());
            let capacity = u128::from(policy.burst().get()) * interval;
            let left = u128::try_from(remaining).unwrap_or(0) * interval + interval
                - u128::from(wait_ns).min(interval);
            let used_ns = capacity.saturating_sub(left);
            Duration::from_millis(used) + Duration::from_nanos(used_ns as u64)
        }
    }
}
