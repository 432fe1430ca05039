//! Stores behind the limiter outside any runtime: an `Arc<MemoryStore>` is the memory store
//! still, and a store of your own is awaited without a Tokio timer where there is none.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use limiter_core::{Charge, Check, Checked, Limit, Limiter, MemoryStore, Policy, Receipt, Store};

fn limit() -> Limit {
    Limit::new("stores", Policy::new(2, Duration::from_secs(60)).unwrap())
}

/// An `Arc<MemoryStore>` is called as the memory store is: answered at once, no runtime.
/// (It took the networked path, whose timer panicked outside a runtime.)
#[test]
fn an_arc_memory_store_answers_at_once_without_a_runtime() {
    let limiter = Limiter::builder()
        .store(Arc::new(MemoryStore::new()))
        .build();
    let limit = limit();
    let first = limiter.check(&limit, b"k").now_or_never().expect("at once");
    assert!(first.unwrap().allowed());
}

/// A store of one's own whose check does not answer at once.
struct Later(MemoryStore);

/// Pending once, then ready.
struct YieldOnce(bool);

impl Future for YieldOnce {
    type Output = ();
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

impl Store for Later {
    fn check<'a>(&'a self, limit: &'a Limit, key: &'a [u8], now: Duration) -> Check<'a> {
        Check::pending(async move {
            YieldOnce(false).await;
            Ok(self.0.check_at(limit, key, now))
        })
    }
    fn check_all<'a>(&'a self, charges: &'a [Charge<'a>], now: Duration) -> Check<'a, Checked> {
        Check::pending(async move {
            YieldOnce(false).await;
            Ok(self.0.check_all_at(charges, now))
        })
    }
    fn refund<'a>(
        &'a self,
        charges: &'a [Charge<'a>],
        receipt: &'a Receipt,
        now: Duration,
    ) -> Check<'a, ()> {
        self.0.refund_at(charges, receipt, now);
        Check::ready(Ok(()))
    }
    fn reset<'a>(&'a self, limit: &'a Limit, key: &'a [u8]) -> Check<'a, ()> {
        self.0.reset(limit, key);
        Check::ready(Ok(()))
    }
}

fn block_on<F: Future>(future: F) -> F::Output {
    struct Noop;
    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}

/// A store of one's own, outside any Tokio runtime: its checks are awaited as they come
/// (there is no timer to bound them), never a panic.
#[test]
fn a_store_of_ones_own_is_awaited_outside_a_runtime() {
    let limiter = Limiter::builder().store(Later(MemoryStore::new())).build();
    let limit = limit();
    let decisions: Vec<bool> = (0..3)
        .map(|_| block_on(limiter.check(&limit, b"k")).unwrap().allowed())
        .collect();
    assert_eq!(decisions, [true, true, false]);
}

/// The policy is a value: whatever decides a request decides with its whole policy.
mod whole_policy {
    use super::*;
    use limiter_core::{Algorithm, ManualClock, Penalty};

    fn bucket(per_second: u32) -> Policy {
        Policy::for_algorithm(Algorithm::TokenBucket, per_second, Duration::from_secs(1)).unwrap()
    }

    /// An override that names its algorithm keeps the declared delay (and penalty), as one
    /// that names none does.
    #[test]
    fn an_override_naming_its_algorithm_keeps_the_declared_delay_and_penalty() {
        let limiter = Limiter::builder().build();
        let declared = Limit::new(
            "smooth",
            bucket(20)
                .with_delay(Duration::from_secs(2))
                .unwrap()
                .with_penalty(Penalty::block(Duration::from_secs(60)).unwrap()),
        );
        for text in ["10 per 1s, token_bucket", "10 per 1s"] {
            limiter.set_policy("smooth", text.parse().unwrap());
            let applied = limiter.overridden(&declared).unwrap();
            assert_eq!(
                applied.policy().to_string(),
                "10 per 1s, token_bucket, delay 2s, block 1m",
                "{text}"
            );
        }
        // The case: a declared delay, no penalty, an override naming its algorithm.
        let delayed = Limit::new(
            "queued",
            bucket(20).with_delay(Duration::from_secs(2)).unwrap(),
        );
        limiter.set_policy("queued", "10 per 1s, token_bucket".parse().unwrap());
        assert_eq!(
            limiter.overridden(&delayed).unwrap().policy().to_string(),
            "10 per 1s, token_bucket, delay 2s"
        );
        // Two declared limits of one scope, with and without a delay: each keeps its own.
        let plain = Limit::new("smooth", bucket(20));
        let applied = limiter.overridden(&plain).unwrap();
        assert_eq!(applied.policy().delay(), None);
        assert_eq!(
            limiter.overridden(&declared).unwrap().policy().delay(),
            Some(Duration::from_secs(2))
        );
    }

    /// The memory store decides with the request's whole policy, in the limit's one budget:
    /// a delay an override (or a per-request policy) adds is honoured, not the declared
    /// table's delay-less policy, and what the client used before it still counts.
    #[test]
    fn a_delay_added_by_an_override_is_honoured_in_memory() {
        let clock = ManualClock::starting_at(Duration::from_secs(100));
        let limiter = Limiter::builder().clock(clock.clone()).build();
        let declared = Limit::new("queue", bucket(1));
        // The declared table exists first.
        assert!(limiter
            .check(&declared, b"a")
            .now_or_never()
            .unwrap()
            .unwrap()
            .allowed());
        limiter.set_policy("queue", "1 per 1s, token_bucket, delay 2s".parse().unwrap());
        let applied = limiter.overridden(&declared).unwrap();
        let check = |key: &[u8]| {
            limiter
                .check(&applied, key)
                .now_or_never()
                .unwrap()
                .unwrap()
        };
        // One budget: `a`'s token, taken before the override, is still taken — it waits.
        let a = check(b"a");
        assert_eq!(a.delayed(), Some(Duration::from_secs(1)), "{a:?}");
        assert!(check(b"b").allowed());
        let second = check(b"b");
        assert_eq!(second.delayed(), Some(Duration::from_secs(1)), "{second:?}");
        // A reset forgets the client.
        limiter
            .reset("queue", b"b")
            .now_or_never()
            .unwrap()
            .unwrap();
        assert_eq!(check(b"b").delayed(), None);
    }
}
