//! Each algorithm on a worked example, with the numbers its documentation gives.

use std::collections::VecDeque;
use std::time::Duration;

use super::calendar::CalendarQuota;
use super::fixed_window::FixedWindow;
use super::sliding_window;
use super::sliding_window_counter::SlidingWindowCounter;
use super::token_bucket::TokenBucket;
use super::Stamp;
use crate::{Algorithm, Period, Policy};

#[test]
fn a_monthly_quota_comes_back_on_the_first_of_the_month() {
    let monthly = Policy::per_calendar(2, Period::Month).unwrap();
    let mut state = CalendarQuota::default();
    let dec_31 = 1_767_139_200_000; // 2025-12-31T00:00:00Z
    assert!(state.check_cost(dec_31, &monthly, 1).allowed());
    assert!(state.check_cost(dec_31, &monthly, 1).allowed());
    let third = state.check_cost(dec_31, &monthly, 1);
    assert_eq!(third.retry_after_secs(), Some(86_400)); // until January 1st
    assert!(state.check_cost(dec_31 + 86_400_000, &monthly, 1).allowed());
}

#[test]
fn a_fixed_window_opens_again_at_its_edge() {
    let policy = Policy::new(2, Duration::from_secs(60)).unwrap();
    let mut state = FixedWindow::default();
    assert!(state.check_cost(1_000, &policy, 1).allowed());
    assert!(state.check_cost(2_000, &policy, 1).allowed());
    let third = state.check_cost(3_000, &policy, 1);
    assert_eq!(third.retry_after(), Some(Duration::from_millis(58_000)));
    assert!(state.check_cost(61_000, &policy, 1).allowed()); // the next window
}

#[test]
fn a_late_reading_is_counted_at_the_newest_instant() {
    let newest = Stamp::at(100_004);
    assert_eq!(newest.catch_up(100_000), 100_004); // a reading that arrived late
    assert_eq!(newest.catch_up(100_010), 100_010);
}

#[test]
fn the_sliding_window_admits_once_the_oldest_leaves() {
    let policy = Policy::new(2, Duration::from_secs(60)).unwrap();
    let mut log = VecDeque::new();
    assert!(sliding_window::check_cost(&mut log, 0, &policy, 1).allowed());
    assert!(sliding_window::check_cost(&mut log, 30_000, &policy, 1).allowed());
    let third = sliding_window::check_cost(&mut log, 59_999, &policy, 1);
    assert_eq!(third.retry_after(), Some(Duration::from_millis(1)));
    assert!(sliding_window::check_cost(&mut log, 60_000, &policy, 1).allowed());
    // 0 left the window
}

#[test]
fn the_counter_weighs_the_previous_window() {
    let policy =
        Policy::for_algorithm(Algorithm::SlidingWindowCounter, 4, Duration::from_secs(60)).unwrap();
    let mut state = SlidingWindowCounter::default();
    for t in [0, 1_000, 2_000, 3_000] {
        assert!(state.check_cost(t, &policy, 1).allowed());
    }
    // At 1:15 the estimate is 4 × 45/60 = 3: one more fits.
    assert!(state.check_cost(75_000, &policy, 1).allowed());
    // Now 3 + 1 = 4; it falls below 4 once the weight of the old window shrinks.
    let rejected = state.check_cost(75_000, &policy, 1);
    assert_eq!(rejected.retry_after(), Some(Duration::from_millis(1)));
}

#[test]
fn the_bucket_refills_a_token_a_second() {
    // 1 token per second, bursts of 2.
    let policy = Policy::for_algorithm(Algorithm::TokenBucket, 60, Duration::from_secs(60))
        .unwrap()
        .with_burst(2)
        .unwrap();
    let mut bucket = TokenBucket::default();
    assert!(bucket.check_cost(0, &policy, 1).allowed());
    assert!(bucket.check_cost(0, &policy, 1).allowed());
    assert_eq!(
        bucket.check_cost(250, &policy, 1).retry_after(),
        Some(Duration::from_millis(750))
    );
    assert!(bucket.check_cost(1_000, &policy, 1).allowed());
}
