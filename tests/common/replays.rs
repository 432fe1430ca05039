//! Schedules replayed through a Redis store — one server or a cluster — and through the
//! memory store, which must decide alike: the strategies and the replays that
//! `tests/redis.rs` and `tests/redis_cluster.rs` share.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use limiter::{
    Algorithm, Charge, Decision, Limit, MemoryStore, Penalty, Policy, RedisStore, Store,
};
use proptest::prelude::*;

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Small policies of `algorithm`: windows of 1 to 200 ms, so that schedules cross them;
/// a third of them with a penalty of short blocks, some escalating.
pub(crate) fn policy(algorithm: Algorithm) -> impl Strategy<Value = Policy> {
    (1..=5u32, 1..=200u64, 1..=6u32, penalty()).prop_map(move |(max, window, burst, penalty)| {
        let policy = Policy::for_algorithm(algorithm, max, Duration::from_millis(window)).unwrap();
        // Half the buckets hold refused requests' places for a delay of up to 300 ms.
        let policy = if algorithm == Algorithm::TokenBucket {
            let bucket = policy.with_burst(burst).unwrap();
            match window % 2 {
                0 => bucket
                    .with_delay(Duration::from_millis(window * 3 / 2))
                    .unwrap(),
                _ => bucket,
            }
        } else {
            policy
        };
        match penalty {
            Some(penalty) => policy.with_penalty(penalty),
            None => policy,
        }
    })
}

/// No penalty (two times in three), or blocks of 1 to 300 ms, escalated after 1 to 3
/// blocks within up to 500 ms to up to a second.
fn penalty() -> impl Strategy<Value = Option<Penalty>> {
    let ms = Duration::from_millis;
    let escalation = prop::option::of((1..=3u32, 1..=500u64, 1..=1000u64));
    prop_oneof![
        2 => Just(None),
        1 => (1..=300u64, escalation).prop_map(move |(block, escalation)| {
            let penalty = Penalty::block(ms(block)).unwrap();
            Some(match escalation {
                Some((after, within, long)) => {
                    penalty.escalating(after, ms(within), ms(long)).unwrap()
                }
                None => penalty,
            })
        }),
    ]
}

/// Two or three policies of any algorithms, for a stack.
pub(crate) fn stack() -> impl Strategy<Value = Vec<Policy>> {
    let one = prop_oneof![
        policy(Algorithm::SlidingWindow),
        policy(Algorithm::FixedWindow),
        policy(Algorithm::SlidingWindowCounter),
        policy(Algorithm::TokenBucket),
    ];
    prop::collection::vec(one, 2..=3)
}

/// Up to `most` steps: a key below `keys` and the milliseconds since the last step.
pub(crate) fn steps(keys: u8, most: usize) -> impl Strategy<Value = Vec<(u8, u64)>> + Clone {
    prop::collection::vec(
        (0..keys, prop_oneof![Just(0u64), Just(1), 0..400u64]),
        1..most,
    )
}

/// Random schedules of single checks of every algorithm, `cases` per algorithm, decide in
/// `redis` (on the caller's clock) as in the memory store. `scope` names the limits: a
/// scope per case, so that every case starts from empty state in both stores.
pub(crate) fn single_checks_decide_as_in_memory(
    rt: &tokio::runtime::Runtime,
    redis: &RedisStore,
    steps: impl Strategy<Value = Vec<(u8, u64)>> + Clone,
    cases: u32,
    scope: &str,
) {
    let case = std::cell::Cell::new(0u32);
    for algorithm in Algorithm::ALL {
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(cases));
        runner
            .run(&(policy(algorithm), steps.clone()), |(policy, steps)| {
                case.set(case.get() + 1);
                let limit = Limit::new(format!("{scope}-{}", case.get()), policy);
                let memory = MemoryStore::new();
                let mut now = Duration::from_secs(1_700_000_000);
                for (i, (key, step)) in steps.iter().enumerate() {
                    now += Duration::from_millis(*step);
                    let expected = memory.check_at(&limit, &[*key], now);
                    let got = rt.block_on(redis.check(&limit, &[*key], now)).unwrap();
                    prop_assert_eq!(got, expected, "{} request {} at {:?}", algorithm, i, now);
                    prop_assert_eq!(got.blocked(), expected.blocked(), "request {}", i);
                }
                Ok(())
            })
            .unwrap();
    }
}

/// A step of a schedule with costs: the key, the time since the last step, the cost, and
/// whether (and how long after) the request is refunded, as `count = "failures"` does
/// for a success — often after later requests, as a slow success is.
type CostStep = (u8, u64, u32, Option<u64>);

fn cost_steps() -> impl Strategy<Value = Vec<CostStep>> {
    prop::collection::vec(
        (
            0..3u8,
            prop_oneof![Just(0u64), Just(1), 0..400u64],
            1..=7u32,
            prop::option::of(prop_oneof![Just(0u64), 0..300u64, 0..1_000u64]),
        ),
        1..50,
    )
}

/// Random schedules with costs (including ones no budget holds) and refunds — late ones
/// too, that arrive after later requests and after their units came back — decide in
/// `redis` (on the caller's clock) as in the memory store, with the same receipts, for
/// every algorithm and sliding logs longer than the store's short ones: `cases` each.
pub(crate) fn costs_and_refunds_decide_as_in_memory(
    rt: &tokio::runtime::Runtime,
    redis: &RedisStore,
    cases: u32,
    scope: &str,
) {
    let case = std::cell::Cell::new(0u32);
    // Every algorithm with budgets of a few units, and sliding logs longer than the
    // store's short ones (128, packed strings) with costs to match: those are lists.
    let mut kinds: Vec<(String, BoxedStrategy<Policy>, u32)> = Algorithm::ALL
        .iter()
        .map(|&algorithm| (algorithm.to_string(), policy(algorithm).boxed(), 1))
        .collect();
    kinds.push((
        "long sliding log".to_string(),
        (129..=140u32, 1..=200u64)
            .prop_map(|(max, window)| Policy::new(max, Duration::from_millis(window)).unwrap())
            .boxed(),
        23,
    ));
    for (algorithm, policies, scale) in kinds {
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(cases));
        runner
            .run(&(policies, cost_steps()), |(policy, steps)| {
                case.set(case.get() + 1);
                let limit = Limit::new(format!("{scope}-{}", case.get()), policy);
                let memory = MemoryStore::new();
                let mut now = Duration::from_secs(1_700_000_000);
                // Refunds still to come: when, the key, the cost and the receipt.
                let mut pending: Vec<(Duration, [u8; 1], u32, limiter::Receipt)> = Vec::new();
                for (i, &(key, step, cost, refund)) in steps.iter().enumerate() {
                    let cost = cost * scale;
                    now += Duration::from_millis(step);
                    pending.sort_by_key(|p| p.0);
                    while pending.first().is_some_and(|p| p.0 <= now) {
                        let (at, key, cost, receipt) = pending.remove(0);
                        let charge = [Charge::new(&limit, &key).cost(cost)];
                        memory.refund_at(&charge, &receipt, at);
                        rt.block_on(redis.refund(&charge, &receipt, at)).unwrap();
                    }
                    let key = [key];
                    let charge = [Charge::new(&limit, &key).cost(cost)];
                    let expected = memory.check_all_at(&charge, now);
                    let got = rt.block_on(redis.check_all(&charge, now)).unwrap();
                    prop_assert_eq!(&got, &expected, "{} request {} at {:?}", algorithm, i, now);
                    if let (Some(after), true) = (refund, expected[0].allowed()) {
                        let at = now + Duration::from_millis(after);
                        pending.push((at, key, cost, expected.receipt().clone()));
                    }
                }
                Ok(())
            })
            .unwrap();
    }
}

/// Random stacks of two or three limits, checked with costs 1 to 3 on the keys `keys`
/// gives each step's key, answer in `redis` as the memory store's all-or-nothing check:
/// the same admissions, the same statuses for the limits that did not reject.
pub(crate) fn stacks_answer_as_in_memory(
    rt: &tokio::runtime::Runtime,
    redis: &RedisStore,
    steps: impl Strategy<Value = Vec<(u8, u64)>>,
    cases: u32,
    scope: &str,
    keys: impl Fn(u8) -> [[u8; 1]; 3],
) {
    let case = std::cell::Cell::new(0u32);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(cases));
    runner
        .run(&(stack(), steps), |(policies, steps)| {
            case.set(case.get() + 1);
            let limits: Vec<Limit> = policies
                .iter()
                .enumerate()
                .map(|(i, p)| Limit::new(format!("{scope}-{}-{i}", case.get()), *p))
                .collect();
            let memory = MemoryStore::new();
            let mut now = Duration::from_secs(1_700_000_000);
            for (i, (key, step)) in steps.iter().enumerate() {
                now += Duration::from_millis(*step);
                let keys = keys(*key);
                // Costs 1 to 3, so that some stacks ask more than a limit holds.
                let cost = 1 + (*step % 3) as u32;
                let requests: Vec<Charge<'_>> = limits
                    .iter()
                    .zip(&keys)
                    .map(|(l, k)| Charge::new(l, &k[..]).cost(cost))
                    .collect();
                let expected = memory.check_all_at(&requests, now);
                let got = rt.block_on(redis.check_all(&requests, now)).unwrap();
                prop_assert_eq!(got, expected, "request {} at {:?}", i, now);
            }
            Ok(())
        })
        .unwrap();
}

/// 800 concurrent checks of 8 keys at one instant against `limit` (30 a window, say): each
/// key admits exactly `limit`'s max, with the remaining counts of a sequence — max − 1, …,
/// 0 — as if each check had been sent alone, in order. `context` names the case in a
/// failure.
pub(crate) fn concurrent_checks_keep_exact_sequences(
    rt: &tokio::runtime::Runtime,
    store: &RedisStore,
    limit: &Limit,
    context: &str,
) {
    let decisions: Vec<(u8, Decision)> = rt.block_on(async {
        let checks: Vec<_> = (0..800u32)
            .map(|i| {
                let store = store.clone();
                let limit = limit.clone();
                tokio::spawn(async move {
                    let key = [(i % 8) as u8];
                    let decision = store
                        .check(&limit, &key, Duration::from_secs(1_700_000_000))
                        .await
                        .unwrap();
                    (key[0], decision)
                })
            })
            .collect();
        let mut decisions = Vec::new();
        for check in checks {
            decisions.push(check.await.unwrap());
        }
        decisions
    });
    let max = limit.policy().max().get();
    for key in 0..8u8 {
        let mut remaining: Vec<u32> = decisions
            .iter()
            .filter(|(k, d)| *k == key && d.allowed())
            .map(|(_, d)| d.remaining())
            .collect();
        remaining.sort_unstable();
        assert_eq!(
            remaining,
            (0..max).collect::<Vec<_>>(),
            "{context}, key {key}"
        );
    }
}
