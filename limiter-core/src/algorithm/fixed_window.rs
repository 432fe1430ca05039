//! Fixed window: a window `[s, s + T)` opens at a key's first request when none is open; up
//! to `N` requests are admitted in it; the first request at or after `s + T` opens the next.
//!
//! Memory: 8 bytes per key. Error: a client can spend `N` at the end of one window and `N`
//! at the start of the next, `2N` within an interval far shorter than `T`.

use super::{ms, Stamp};
use crate::{Decision, Policy};

/// The open window of one key: when it opened and how many requests it admitted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FixedWindow {
    start: Stamp,
    count: u32,
}

impl FixedWindow {
    /// Counts a request at `now_ms`.
    ///
    /// ```
    /// use limiter_core::{algorithm::fixed_window::FixedWindow, Policy};
    /// use std::time::Duration;
    /// let policy = Policy::new(2, Duration::from_secs(60))?;
    /// let mut state = FixedWindow::default();
    /// assert!(state.check(1_000, &policy).allowed());
    /// assert!(state.check(2_000, &policy).allowed());
    /// let third = state.check(3_000, &policy);
    /// assert_eq!(third.retry_after(), Some(Duration::from_millis(58_000)));
    /// assert!(state.check(61_000, &policy).allowed()); // the next window
    /// # Ok::<(), limiter_core::PolicyError>(())
    /// ```
    pub fn check(&mut self, now_ms: u64, policy: &Policy) -> Decision {
        let window = policy.window_ms();
        let max = policy.max().get();
        if self.is_expired(now_ms, policy) {
            *self = FixedWindow {
                start: Stamp::at(now_ms),
                count: 0,
            };
        }
        let ends_in = ms(window - self.start.age(now_ms));
        if self.count < max {
            self.count += 1;
            Decision::allow_ns(max, max - self.count, ends_in)
        } else {
            Decision::reject_ns(max, ends_in)
        }
    }

    /// Whether no window is open at `now_ms`: the state can be forgotten.
    pub fn is_expired(&self, now_ms: u64, policy: &Policy) -> bool {
        self.count == 0 || self.start.age(now_ms) >= policy.window_ms()
    }
}
