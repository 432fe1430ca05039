//! Calendar quotas: up to `N` requests per day, week (from Monday) or month, resetting at the
//! period's boundary, in UTC or at a fixed offset from it — `per = "month"`.
//!
//! A quota is a fixed window aligned to the calendar: a period `[s, e)` holds up to `N`; the
//! first request at or after `e` counts in the next one; `Retry-After` is `e − now`. Memory:
//! 8 bytes per key (the period's number and the count). Readings are Unix time (see
//! [`Clock`](crate::Clock)); a reading of an earlier period than the state's (it reached the
//! store late) is counted in the state's period: it never reopens or resets it.

use super::ms;
use crate::{Decision, Policy};

pub(crate) use crate::policy::calendar::{Calendar, Period};

/// One key's quota: the period it counts in, and how many units it admitted there.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct CalendarQuota {
    index: u32,
    count: u32,
}

impl CalendarQuota {
    /// The state as 64 bits, for a store's saved file.
    pub(crate) fn to_raw(self) -> u64 {
        (u64::from(self.index) << 32) | u64::from(self.count)
    }

    /// A state from [`to_raw`](Self::to_raw)'s bits.
    pub(crate) fn from_raw(raw: u64) -> CalendarQuota {
        CalendarQuota {
            index: (raw >> 32) as u32,
            count: raw as u32,
        }
    }

    /// Whether a state read from a file could have been counted by `policy` before
    /// `saved_ms`.
    pub(crate) fn plausible(self, saved_ms: u64, policy: &Policy) -> bool {
        self.count <= policy.max().get() && self.index <= calendar(policy).index(saved_ms)
    }

    /// Counts a request worth `cost` units at `now_ms` (Unix time): all of them, or none.
    pub(crate) fn check_cost(&mut self, now_ms: u64, policy: &Policy, cost: u32) -> Decision {
        let calendar = calendar(policy);
        let max = policy.max().get();
        let index = calendar.index(now_ms);
        if self.count == 0 || index > self.index {
            *self = CalendarQuota { index, count: 0 };
        }
        let ends_in = ms(self.ends_in(now_ms, &calendar));
        if cost <= max - self.count {
            self.count += cost;
            Decision::allow_ns(max, max - self.count, ends_in)
        } else {
            Decision::reject_leaving_ns(max, max - self.count, ends_in)
        }
    }

    /// The mark of the check just admitted: the start of its period (Unix ms).
    pub(crate) fn mark(&self, policy: &Policy) -> u64 {
        calendar(policy).start_ms(self.index)
    }

    /// Takes back `cost` units of a check admitted in the period that began at `start_ms`,
    /// if that period still counts.
    pub(crate) fn refund(&mut self, start_ms: u64, now_ms: u64, policy: &Policy, cost: u32) {
        let calendar = calendar(policy);
        if self.count > 0
            && calendar.index(start_ms) == self.index
            && calendar.index(now_ms) <= self.index
        {
            self.count -= cost.min(self.count);
        }
    }

    /// Where the key stands at `now_ms`, with nothing counted.
    pub(crate) fn status(&self, now_ms: u64, policy: &Policy) -> Decision {
        let max = policy.max().get();
        if self.is_expired(now_ms, policy) {
            return Decision::allow_ns(max, max, 0);
        }
        let ends_in = ms(self.ends_in(now_ms, &calendar(policy)));
        match max - self.count {
            0 => Decision::reject_ns(max, ends_in),
            left => Decision::allow_ns(max, left, ends_in),
        }
    }

    /// Whether its period is over at `now_ms` (or nothing is counted): it can be forgotten.
    pub(crate) fn is_expired(&self, now_ms: u64, policy: &Policy) -> bool {
        self.count == 0 || calendar(policy).index(now_ms) > self.index
    }

    /// Milliseconds until the state can be forgotten.
    pub(crate) fn expires_in(&self, now_ms: u64, policy: &Policy) -> u64 {
        if self.is_expired(now_ms, policy) {
            return 0;
        }
        self.ends_in(now_ms, &calendar(policy))
    }

    /// Milliseconds from `now_ms` (or the period's start, when later) to its period's end.
    fn ends_in(&self, now_ms: u64, calendar: &Calendar) -> u64 {
        let end = calendar.start_ms(self.index.saturating_add(1));
        let from = now_ms.max(calendar.start_ms(self.index));
        end.saturating_sub(from)
    }
}

/// The calendar of a quota's policy (UTC days for a policy that has none: never asked).
fn calendar(policy: &Policy) -> Calendar {
    policy.calendar().unwrap_or(Calendar::utc(Period::Day))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::calendar::DAY_MS;

    /// 2024-02-29T12:00:00Z, a Thursday.
    const LEAP_DAY_NOON: u64 = 1_709_208_000_000;

    #[test]
    fn periods_begin_where_the_calendar_says() {
        let month = Calendar::utc(Period::Month);
        let index = month.index(LEAP_DAY_NOON);
        assert_eq!(index, (2024 - 1970) * 12 + 1);
        assert_eq!(month.start_ms(index), 1_706_745_600_000); // 2024-02-01
        assert_eq!(month.start_ms(index + 1), 1_709_251_200_000); // 2024-03-01
        let week = Calendar::utc(Period::Week);
        // The previous Monday, 2024-02-26.
        assert_eq!(week.start_ms(week.index(LEAP_DAY_NOON)), 1_708_905_600_000);
        let day = Calendar::utc(Period::Day);
        assert_eq!(day.start_ms(day.index(LEAP_DAY_NOON)), 1_709_164_800_000);
        // At UTC+02:00 the day began at 22:00 the day before.
        let cest = Calendar::at_offset(Period::Day, 120).unwrap();
        assert_eq!(
            cest.start_ms(cest.index(LEAP_DAY_NOON)),
            1_709_164_800_000 - 7_200_000
        );
        assert_eq!(Calendar::at_offset(Period::Day, 15 * 60), None);
    }

    #[test]
    fn every_month_of_four_centuries_round_trips() {
        let month = Calendar::utc(Period::Month);
        for index in 1..4_800u32 {
            let start = month.start_ms(index);
            assert_eq!(month.index(start), index);
            assert_eq!(month.index(start - 1), index - 1);
            let length = month.start_ms(index + 1) - start;
            assert!((28 * DAY_MS..=31 * DAY_MS).contains(&length));
        }
    }

    #[test]
    fn a_late_reading_counts_in_the_newest_period() {
        let policy = Policy::per_calendar(1, Period::Day).unwrap();
        let mut state = CalendarQuota::default();
        let tomorrow = LEAP_DAY_NOON + DAY_MS;
        assert!(state.check_cost(tomorrow, &policy, 1).allowed());
        // A reading of today arrives late: the state's day is full, it waits for its end.
        let late = state.check_cost(LEAP_DAY_NOON, &policy, 1);
        assert!(!late.allowed());
        assert_eq!(
            late.retry_after_secs(),
            Some(86_400),
            "counted at the state's start"
        );
    }
}
