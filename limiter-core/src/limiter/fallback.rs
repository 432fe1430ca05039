//! Where a limiter counts while its networked store is away
//! ([`OnStoreError::FallBackToMemory`](super::OnStoreError)): this instance's memory, with
//! each limit's budget, or its share of it when several instances fall back at once.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::store::{Charge, Checked, Limit, MemoryStore, Receipt};
use crate::{Algorithm, Decision, Policy};

/// The fallback memory, and the share of each budget one instance counts in it.
pub(super) struct Fallback {
    memory: MemoryStore,
    /// How many instances share a budget while they fall back: each counts `N / share`.
    share: u32,
    /// The scaled limits, made once per limit (building one hashes its name).
    scaled: Mutex<HashMap<u64, Arc<Limit>>>,
}

/// Scaled limits kept at most; past this, scaled limits are made per check (a program with
/// that many distinct policies is choosing them per request).
const MOST_SCALED: usize = 4_096;

impl Fallback {
    pub(super) fn new(share: u32) -> Fallback {
        Fallback {
            memory: MemoryStore::new().unpublished(),
            share: share.max(1),
            scaled: Mutex::new(HashMap::new()),
        }
    }

    /// The limit this instance counts `limit` by while falling back.
    fn limit(&self, limit: &Limit) -> Option<Arc<Limit>> {
        if self.share == 1 {
            return None;
        }
        let mut scaled = self.scaled.lock();
        if let Some(found) = scaled.get(&limit.id()) {
            return Some(Arc::clone(found));
        }
        let made = Arc::new(Limit::new(
            limit.scope().to_string(),
            share_of(limit.policy(), self.share),
        ));
        if scaled.len() < MOST_SCALED {
            scaled.insert(limit.id(), Arc::clone(&made));
        }
        Some(made)
    }

    /// The memory itself: its concurrency slots are counted in full (a request in flight
    /// here is one request, whatever the other instances hold).
    pub(super) fn memory(&self) -> &MemoryStore {
        &self.memory
    }

    pub(super) fn check_at(&self, limit: &Limit, key: &[u8], now: Duration) -> Decision {
        let decision = match self.limit(limit) {
            Some(scaled) => self.memory.check_at(&scaled, key, now),
            None => self.memory.check_at(limit, key, now),
        };
        decision.marked_fallback()
    }

    pub(super) fn check_all_at(&self, charges: &[Charge<'_>], now: Duration) -> Checked {
        let checked = match self.scaled(charges) {
            Some(scaled) => self
                .memory
                .check_all_at(&recharged(charges, &scaled, self.share), now),
            None => self.memory.check_all_at(charges, now),
        };
        let (decisions, receipt) = checked.into_parts();
        let decisions = decisions
            .into_iter()
            .map(Decision::marked_fallback)
            .collect();
        Checked::new(decisions, receipt.counted_by_fallback())
    }

    pub(super) fn refund_at(&self, charges: &[Charge<'_>], receipt: &Receipt, now: Duration) {
        match self.scaled(charges) {
            Some(scaled) => {
                let charges = recharged(charges, &scaled, self.share);
                self.memory.refund_at(&charges, receipt, now)
            }
            None => self.memory.refund_at(charges, receipt, now),
        }
    }

    fn scaled(&self, charges: &[Charge<'_>]) -> Option<Vec<Arc<Limit>>> {
        (self.share > 1).then(|| charges.iter().filter_map(|c| self.limit(c.limit)).collect())
    }
}

/// The charges, against the scaled limits, each costing its share too (rounded up): a
/// request that fits the whole budget fits its share.
fn recharged<'a>(charges: &[Charge<'a>], scaled: &'a [Arc<Limit>], share: u32) -> Vec<Charge<'a>> {
    charges
        .iter()
        .zip(scaled)
        .map(|(charge, limit)| {
            let units = charge
                .units()
                .div_ceil(share)
                .min(limit.policy().capacity());
            Charge::new(limit, charge.key).cost(units)
        })
        .collect()
}

/// One instance's share of `policy` when `share` instances count it apart: `N / share`
/// (rounded up, at least 1) per window, and for the token bucket `B / share` of burst.
/// A policy that cannot be scaled keeps its budget.
fn share_of(policy: &Policy, share: u32) -> Policy {
    let max = policy.max().get().div_ceil(share).max(1);
    // A calendar quota is scaled as a quota, and a penalty kept as it is: a share counts
    // less, it punishes the same.
    let scaled = match policy.calendar() {
        Some(calendar) => Policy::per_calendar(max, calendar.period())
            .and_then(|p| p.with_utc_offset(i32::from(calendar.offset_minutes()))),
        None => Policy::for_algorithm(
            policy.algorithm(),
            max,
            Duration::from_millis(policy.window_ms()),
        ),
    };
    let scaled = scaled.map(|p| match policy.penalty() {
        Some(penalty) => p.with_penalty(penalty),
        None => p,
    });
    // A bucket's delay too (after its burst: the delay needs the algorithm).
    let with_delay = |p: Policy| match policy.delay() {
        Some(delay) => p.with_delay(delay),
        None => Ok(p),
    };
    let scaled = match (scaled, policy.algorithm()) {
        (Ok(scaled), Algorithm::TokenBucket) => scaled
            .with_burst(policy.burst().get().div_ceil(share).max(1))
            .and_then(with_delay),
        (scaled, _) => scaled,
    };
    scaled.unwrap_or(*policy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_keeps_the_penalty_and_the_calendar() {
        use crate::algorithm::calendar::Period;
        let block = crate::Penalty::block(Duration::from_secs(900)).unwrap();
        let monthly = Policy::per_calendar(9, Period::Month)
            .unwrap()
            .with_utc_offset(60)
            .unwrap()
            .with_penalty(block);
        let share = share_of(&monthly, 3);
        assert_eq!(share.to_string(), "3 per month, utc+01:00, block 15m");
        let minute = Policy::new(10, Duration::from_secs(60))
            .unwrap()
            .with_penalty(block);
        assert_eq!(share_of(&minute, 2).penalty(), Some(block));
    }

    #[test]
    fn a_share_counts_its_part_of_every_budget() {
        let minute = Duration::from_secs(60);
        let sliding = Policy::new(10, minute).unwrap();
        assert_eq!(share_of(&sliding, 3).max().get(), 4);
        assert_eq!(share_of(&sliding, 20).max().get(), 1);
        let bucket = Policy::for_algorithm(Algorithm::TokenBucket, 60, minute)
            .unwrap()
            .with_burst(10)
            .unwrap();
        let shared = share_of(&bucket, 2);
        assert_eq!((shared.max().get(), shared.burst().get()), (30, 5));
        let fallback = Fallback::new(2);
        let limit = Limit::new("login", sliding);
        let admitted = (0..10)
            .filter(|_| fallback.check_at(&limit, b"k", Duration::ZERO).allowed())
            .count();
        assert_eq!(admitted, 5);
        // A cost takes its share too: 5 of 10 is 2 of 4 with a share of 3, so a request
        // that fits the budget fits the share (two of them, as two fit the budget).
        let fallback = Fallback::new(3);
        let charge = [Charge::new(&limit, b"costly").cost(5)];
        let admitted = (0..4)
            .filter(|_| fallback.check_all_at(&charge, Duration::ZERO)[0].allowed())
            .count();
        assert_eq!(admitted, 2);
    }
}
