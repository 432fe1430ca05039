//! `jitter = "1s"`: a rejection's wait lengthened by a random part of the jitter, so that
//! clients refused together (a block lifted, a window opening) do not all come back at the
//! same instant. The draft recommends it; governor has it.

use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use limiter_core::Decision;

/// `decision` with up to `jitter_ms` added to its wait, uniformly drawn, when it is a
/// rejection; an admission as it is. `Retry-After`, `t` and the problem body all carry
/// the lengthened wait: a client that obeys it finds the limit open.
#[inline]
pub fn jittered(decision: Decision, jitter_ms: u32) -> Decision {
    if jitter_ms == 0 || decision.allowed() {
        return decision;
    }
    lengthened(decision, jitter_ms)
}

#[cold]
fn lengthened(decision: Decision, jitter_ms: u32) -> Decision {
    decision.waiting_longer(Duration::from_millis(draw() % (u64::from(jitter_ms) + 1)))
}

/// A fresh random number: std's `RandomState` draws new keys per thread and per call, which
/// SipHash turns into a number no client predicts.
fn draw() -> u64 {
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_rejections_and_leaves_admissions() {
        let rejected = Decision::reject(5, Duration::from_secs(10));
        let waits: std::collections::BTreeSet<u64> = (0..200)
            .map(|_| {
                let wait = jittered(rejected, 2_000).retry_after().unwrap();
                assert!(wait >= Duration::from_secs(10) && wait <= Duration::from_secs(12));
                wait.as_millis() as u64
            })
            .collect();
        assert!(waits.len() > 100, "{} distinct waits of 200", waits.len());
        let allowed = Decision::allow(5, 4, Duration::from_secs(10));
        assert_eq!(jittered(allowed, 2_000), allowed);
        assert_eq!(jittered(rejected, 0), rejected);
    }
}
