//! Random schedules through the in-memory store against small, obviously correct models
//! written from the definitions in DESIGN.md, and the guarantees each algorithm makes.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use std::collections::HashMap;
use std::time::Duration;

use limiter_core::{Algorithm, Charge, Clock, Decision, Limit, Limiter, ManualClock, Policy};
use proptest::prelude::*;

/// Decides like the algorithm's definition, with no cleverness: full 64-bit times, every
/// instant kept, brute force where a formula would need thought.
trait Model {
    fn check(&mut self, key: u8, now: u64) -> Decision {
        self.check_cost(key, now, 1)
    }
    /// A request worth `cost` units: all of them counted, or none.
    fn check_cost(&mut self, key: u8, now: u64, cost: u64) -> Decision;
    /// The mark of the check of `key` just admitted at `now`: what its receipt says it
    /// counted (see `Receipt`), for its refund.
    fn mark(&self, key: u8, now: u64) -> Duration;
    /// Takes back what is still counted of `cost` units of a check marked `mark`, at the
    /// reading `now`: only that check's own units.
    fn refund(&mut self, key: u8, mark: Duration, now: u64, cost: u64);
    /// Where `key` stands at `now` with nothing counted: what would be admitted, and when
    /// used quota next comes back (zero when none is used).
    fn status(&self, key: u8, now: u64) -> Decision;
    fn boxed(&self) -> Box<dyn Model>;
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

#[derive(Clone)]
struct SlidingLog {
    max: u64,
    window: u64,
    admitted: HashMap<u8, Vec<u64>>,
}

impl Model for SlidingLog {
    fn check_cost(&mut self, key: u8, now: u64, cost: u64) -> Decision {
        let window = self.window;
        let times = self.admitted.entry(key).or_default();
        let counted = |times: &[u64], at: u64| {
            times
                .iter()
                .filter(|&&t| t <= at && at - t < window)
                .count() as u64
        };
        if counted(times, now) + cost <= self.max {
            times.extend(std::iter::repeat_n(now, cost as usize));
            let oldest = times.iter().filter(|&&t| now - t < window).min().unwrap();
            let remaining = self.max - counted(times, now);
            return Decision::allow(self.max as u32, remaining as u32, ms(oldest + window - now));
        }
        let wait = if cost <= self.max {
            // The first instant at which `cost` more fit.
            (1..=window)
                .find(|&d| counted(times, now + d) + cost <= self.max)
                .unwrap()
        } else {
            // Never: the wait is until none are counted any more (a window, if none are).
            let newest = times.iter().filter(|&&t| now - t < window).max();
            newest.map_or(window, |t| t + window - now)
        };
        // A cheaper request would pass: the rejection says how many units are left.
        let left = self.max - counted(times, now);
        Decision::reject_leaving(self.max as u32, left as u32, ms(wait))
    }

    fn mark(&self, _: u8, now: u64) -> Duration {
        ms(now)
    }

    /// Instants of exactly the check's own instant, while it is in the window.
    fn refund(&mut self, key: u8, mark: Duration, now: u64, cost: u64) {
        let at = mark.as_millis() as u64;
        if now - at >= self.window {
            return;
        }
        let times = self.admitted.entry(key).or_default();
        for _ in 0..cost {
            if let Some(i) = times.iter().position(|&t| t == at) {
                times.remove(i);
            }
        }
    }

    fn status(&self, key: u8, now: u64) -> Decision {
        let counted: Vec<u64> = self
            .admitted
            .get(&key)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&t| now - t < self.window)
            .collect();
        let reset = counted.iter().min().map_or(0, |t| t + self.window - now);
        let left = self.max - counted.len() as u64;
        if left == 0 {
            Decision::reject(self.max as u32, ms(reset))
        } else {
            Decision::allow(self.max as u32, left as u32, ms(reset))
        }
    }

    fn boxed(&self) -> Box<dyn Model> {
        Box::new(self.clone())
    }
}

#[derive(Clone)]
struct Fixed {
    max: u64,
    window: u64,
    windows: HashMap<u8, (u64, u64)>,
}

impl Model for Fixed {
    fn check_cost(&mut self, key: u8, now: u64, cost: u64) -> Decision {
        let (start, count) = self.windows.entry(key).or_insert((now, 0));
        // A window whose requests were all taken back is as if never opened.
        if now >= *start + self.window || *count == 0 {
            (*start, *count) = (now, 0);
        }
        let ends_in = ms(*start + self.window - now);
        if *count + cost <= self.max {
            *count += cost;
            Decision::allow(self.max as u32, (self.max - *count) as u32, ends_in)
        } else {
            Decision::reject_leaving(self.max as u32, (self.max - *count) as u32, ends_in)
        }
    }

    fn mark(&self, key: u8, _: u64) -> Duration {
        ms(self.windows[&key].0)
    }

    /// From the window that counted it, while it is the open one.
    fn refund(&mut self, key: u8, mark: Duration, now: u64, cost: u64) {
        if let Some((start, count)) = self.windows.get_mut(&key) {
            if ms(*start) == mark && now < *start + self.window {
                *count -= cost.min(*count);
            }
        }
    }

    fn status(&self, key: u8, now: u64) -> Decision {
        let max = self.max as u32;
        match self.windows.get(&key) {
            Some(&(start, count)) if now < start + self.window && count > 0 => {
                let ends_in = ms(start + self.window - now);
                if count == self.max {
                    Decision::reject(max, ends_in)
                } else {
                    Decision::allow(max, (self.max - count) as u32, ends_in)
                }
            }
            _ => Decision::allow(max, max, Duration::ZERO),
        }
    }

    fn boxed(&self) -> Box<dyn Model> {
        Box::new(self.clone())
    }
}

/// The token bucket as a bucket: its content (in nanoseconds of refill) grows by one per
/// nanosecond up to the capacity, and a request takes one token's worth.
#[derive(Clone)]
struct Bucket {
    max: u64,
    interval: u64,
    capacity: u64,
    buckets: HashMap<u8, (u64, u64)>,
}

impl Model for Bucket {
    fn check_cost(&mut self, key: u8, now: u64, cost: u64) -> Decision {
        let now = now * 1_000_000;
        let (content, last) = self.buckets.entry(key).or_insert((self.capacity, now));
        *content = (*content + (now - *last)).min(self.capacity);
        *last = now;
        let taken = cost * self.interval;
        if *content >= taken {
            *content -= taken;
            let missing = self.capacity - *content;
            let next_token = (missing - 1) % self.interval + 1;
            Decision::allow(
                self.max as u32,
                (*content / self.interval) as u32,
                Duration::from_nanos(next_token),
            )
        } else {
            Decision::reject_leaving(
                self.max as u32,
                (*content / self.interval) as u32,
                Duration::from_nanos(taken - *content),
            )
        }
    }

    /// Tokens come back oldest first: the check's are all back once the bucket has refilled
    /// what is missing now.
    fn mark(&self, key: u8, now: u64) -> Duration {
        let (content, _) = self.buckets[&key];
        Duration::from_nanos(now * 1_000_000 + (self.capacity - content))
    }

    /// What is still missing of the check's tokens: none once they came back by themselves.
    fn refund(&mut self, key: u8, mark: Duration, now: u64, cost: u64) {
        let now = now * 1_000_000;
        if let Some((content, last)) = self.buckets.get_mut(&key) {
            *content = (*content + (now - *last)).min(self.capacity);
            *last = now;
            let owed = (mark.as_nanos() as u64)
                .saturating_sub(now)
                .min(cost * self.interval);
            *content = (*content + owed).min(self.capacity);
        }
    }

    fn status(&self, key: u8, now: u64) -> Decision {
        let now = now * 1_000_000;
        let content = match self.buckets.get(&key) {
            Some(&(content, last)) => (content + (now - last)).min(self.capacity),
            None => self.capacity,
        };
        if content < self.interval {
            return Decision::reject(
                self.max as u32,
                Duration::from_nanos(self.interval - content),
            );
        }
        let next_token = match (content == self.capacity, content % self.interval) {
            (true, _) => 0,
            (false, 0) => self.interval,
            (false, partial) => self.interval - partial,
        };
        Decision::allow(
            self.max as u32,
            (content / self.interval) as u32,
            Duration::from_nanos(next_token),
        )
    }

    fn boxed(&self) -> Box<dyn Model> {
        Box::new(self.clone())
    }
}

#[derive(Clone)]
struct Counter {
    max: u64,
    window: u64,
    counts: HashMap<(u8, u64), u64>,
}

impl Counter {
    /// The estimate at `at`, times T.
    fn weighted(&self, key: u8, at: u64) -> u64 {
        let index = at / self.window;
        let elapsed = at % self.window;
        let count = |i: u64| self.counts.get(&(key, i)).copied().unwrap_or(0);
        let previous = if index == 0 { 0 } else { count(index - 1) };
        previous * (self.window - elapsed) + count(index) * self.window
    }

    fn admits(&self, key: u8, at: u64) -> bool {
        self.weighted(key, at) < self.max * self.window
    }

    /// Requests that would be admitted at `at`, one after the other.
    fn remaining(&self, key: u8, at: u64) -> u64 {
        let mut copy = Counter {
            max: self.max,
            window: self.window,
            counts: self.counts.clone(),
        };
        let mut n = 0;
        while copy.admits(key, at) {
            *copy.counts.entry((key, at / self.window)).or_default() += 1;
            n += 1;
        }
        n
    }

    /// The first instant after `now` at which `condition` holds, searching ms by ms.
    fn wait_until(&self, now: u64, condition: impl Fn(u64) -> bool) -> u64 {
        (1..=3 * self.window + 1)
            .find(|&d| condition(now + d))
            .expect("the counts vanish within two windows")
    }
}

impl Model for Counter {
    fn check_cost(&mut self, key: u8, now: u64, cost: u64) -> Decision {
        // Admitted when `cost` requests one after the other would each be.
        let left = self.remaining(key, now);
        if left < cost {
            let wanted = cost.min(self.max);
            let wait = self.wait_until(now, |at| self.remaining(key, at) >= wanted);
            return Decision::reject_leaving(self.max as u32, left as u32, ms(wait));
        }
        *self.counts.entry((key, now / self.window)).or_default() += cost;
        let remaining = self.remaining(key, now);
        let wait = self.wait_until(now, |at| self.remaining(key, at) > remaining);
        Decision::allow(self.max as u32, remaining as u32, ms(wait))
    }

    fn mark(&self, _: u8, now: u64) -> Duration {
        ms(now / self.window * self.window)
    }

    /// From the count of the window it was counted in.
    fn refund(&mut self, key: u8, mark: Duration, _: u64, cost: u64) {
        let at = mark.as_millis() as u64;
        if let Some(count) = self.counts.get_mut(&(key, at / self.window)) {
            *count -= cost.min(*count);
        }
    }

    fn status(&self, key: u8, now: u64) -> Decision {
        if !self.admits(key, now) {
            let wait = self.wait_until(now, |at| self.admits(key, at));
            return Decision::reject(self.max as u32, ms(wait));
        }
        let remaining = self.remaining(key, now);
        let wait = if remaining >= self.max {
            0
        } else {
            self.wait_until(now, |at| self.remaining(key, at) > remaining)
        };
        Decision::allow(self.max as u32, remaining as u32, ms(wait))
    }

    fn boxed(&self) -> Box<dyn Model> {
        Box::new(self.clone())
    }
}

#[allow(clippy::borrowed_box)]
fn model_for(policy: &Policy) -> Box<dyn Model> {
    let max = u64::from(policy.max().get());
    let window = policy.window_ms();
    match policy.algorithm() {
        Algorithm::SlidingWindow => Box::new(SlidingLog {
            max,
            window,
            admitted: HashMap::new(),
        }),
        Algorithm::FixedWindow => Box::new(Fixed {
            max,
            window,
            windows: HashMap::new(),
        }),
        Algorithm::TokenBucket => Box::new(Bucket {
            max,
            interval: policy.emission_interval_ns(),
            capacity: u64::from(policy.burst().get()) * policy.emission_interval_ns(),
            buckets: HashMap::new(),
        }),
        Algorithm::SlidingWindowCounter => Box::new(Counter {
            max,
            window,
            counts: HashMap::new(),
        }),
    }
}

/// How far the clock moves before a request: aimed at the edges of the window.
#[derive(Clone, Copy, Debug)]
enum Step {
    Same,
    OneMs,
    WindowMinusOne,
    Window,
    WindowPlusOne,
    Random(u64),
}

impl Step {
    fn millis(self, window: u64) -> u64 {
        match self {
            Step::Same => 0,
            Step::OneMs => 1,
            Step::WindowMinusOne => window - 1,
            Step::Window => window,
            Step::WindowPlusOne => window + 1,
            Step::Random(r) => r % (2 * window),
        }
    }
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => Just(Step::Same),
        2 => Just(Step::OneMs),
        1 => Just(Step::WindowMinusOne),
        1 => Just(Step::Window),
        1 => Just(Step::WindowPlusOne),
        4 => any::<u64>().prop_map(Step::Random),
    ]
}

fn policy(algorithm: Algorithm) -> impl Strategy<Value = Policy> {
    (1..=6u32, 1..=250u64, 1..=8u32).prop_map(move |(max, window, burst)| {
        let policy = Policy::for_algorithm(algorithm, max, ms(window)).unwrap();
        if algorithm == Algorithm::TokenBucket {
            policy.with_burst(burst).unwrap()
        } else {
            policy
        }
    })
}

/// Where the clock starts: at zero, just before the 32-bit stamps wrap, or anywhere.
fn start() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        (0..2_000u64).prop_map(|d| u64::from(u32::MAX) - d),
        0..(1u64 << 40),
    ]
}

type Schedule = Vec<(u8, Step)>;

fn schedule() -> impl Strategy<Value = Schedule> {
    prop::collection::vec((0..3u8, step()), 1..150)
}

/// Runs `schedule` through a real limiter and returns each request's instant, key and
/// decision.
fn run(policy: Policy, start: u64, schedule: &Schedule) -> Vec<(u64, u8, Decision)> {
    let clock = ManualClock::starting_at(ms(start));
    let limiter = Limiter::builder().clock(clock.clone()).build();
    let limit = Limit::new("reference", policy);
    schedule
        .iter()
        .map(|&(key, step)| {
            clock.advance(ms(step.millis(policy.window_ms())));
            let decision = limiter
                .check(&limit, &[key])
                .now_or_never()
                .unwrap()
                .unwrap();
            (clock.now().as_millis() as u64, key, decision)
        })
        .collect()
}

fn agrees_with_model(policy: Policy, start: u64, schedule: &Schedule) -> Result<(), TestCaseError> {
    let mut model = model_for(&policy);
    for (i, (now, key, decision)) in run(policy, start, schedule).into_iter().enumerate() {
        let expected = model.check(key, now);
        prop_assert_eq!(decision, expected, "request {} (key {}) at {}", i, key, now);
    }
    Ok(())
}

/// The most admitted requests of one key in any interval `[t, t + T)`.
fn densest_window(decisions: &[(u64, u8, Decision)], window: u64) -> usize {
    let mut by_key: HashMap<u8, Vec<u64>> = HashMap::new();
    for &(now, key, d) in decisions {
        if d.allowed() {
            by_key.entry(key).or_default().push(now);
        }
    }
    by_key
        .values()
        .flat_map(|times| {
            times
                .iter()
                .map(move |&t| times.iter().filter(|&&u| u >= t && u - t < window).count())
        })
        .max()
        .unwrap_or(0)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn sliding_window_matches_its_model(
        policy in policy(Algorithm::SlidingWindow), start in start(), schedule in schedule()
    ) {
        agrees_with_model(policy, start, &schedule)?;
    }

    #[test]
    fn fixed_window_matches_its_model(
        policy in policy(Algorithm::FixedWindow), start in start(), schedule in schedule()
    ) {
        agrees_with_model(policy, start, &schedule)?;
    }

    #[test]
    fn token_bucket_matches_its_model(
        policy in policy(Algorithm::TokenBucket), start in start(), schedule in schedule()
    ) {
        agrees_with_model(policy, start, &schedule)?;
    }

    #[test]
    fn sliding_window_counter_matches_its_model(
        policy in policy(Algorithm::SlidingWindowCounter), start in start(), schedule in schedule()
    ) {
        agrees_with_model(policy, start, &schedule)?;
    }

    #[test]
    fn sliding_window_never_holds_more_than_n_in_any_window(
        policy in policy(Algorithm::SlidingWindow), start in start(), schedule in schedule()
    ) {
        let decisions = run(policy, start, &schedule);
        let densest = densest_window(&decisions, policy.window_ms());
        prop_assert!(densest <= policy.max().get() as usize);
    }

    #[test]
    fn sliding_window_counter_holds_at_most_2n_in_any_window(
        policy in policy(Algorithm::SlidingWindowCounter), start in start(), schedule in schedule()
    ) {
        let decisions = run(policy, start, &schedule);
        let densest = densest_window(&decisions, policy.window_ms());
        prop_assert!(densest <= 2 * policy.max().get() as usize);
    }
}

// ---- costs and refunds --------------------------------------------------------------------

/// A request of a schedule with costs: its key, the clock's step before it, its cost (some
/// above what any of these policies hold), and which earlier request (0 for itself, up to
/// 7 back) is refunded right after it, as `count = "failures"` does for a success: a slow
/// success refunded after later requests, often after its units came back by themselves.
type CostSchedule = Vec<(u8, Step, u32, Option<usize>)>;

fn cost_schedule() -> impl Strategy<Value = CostSchedule> {
    prop::collection::vec(
        (0..3u8, step(), 1..=9u32, prop::option::of(0..8usize)),
        1..120,
    )
}

fn costs_agree_with_model(
    policy: Policy,
    start: u64,
    schedule: &CostSchedule,
) -> Result<(), TestCaseError> {
    let clock = ManualClock::starting_at(ms(start));
    let limiter = Limiter::builder().clock(clock.clone()).build();
    let limit = Limit::new("reference", policy);
    let mut model = model_for(&policy);
    // Each admitted request not yet refunded: its key, cost, receipt and the model's mark.
    let mut admitted: Vec<Option<(u8, u32, limiter_core::Receipt, Duration)>> = Vec::new();
    for (i, &(key, step, cost, refund)) in schedule.iter().enumerate() {
        clock.advance(ms(step.millis(policy.window_ms())));
        let now = clock.now().as_millis() as u64;
        let bytes = [key];
        let charge = [Charge::new(&limit, &bytes).cost(cost)];
        let got = limiter.check_all(&charge).now_or_never().unwrap().unwrap();
        let expected = model.check_cost(key, now, u64::from(cost));
        if cost > policy.capacity() {
            // Never admitted: the wait carries no promise (the 429 has no Retry-After).
            prop_assert!(
                !got[0].allowed() && !expected.allowed(),
                "request {} at {}",
                i,
                now
            );
        } else {
            prop_assert_eq!(
                got[0],
                expected,
                "request {} (key {}, cost {}) at {}",
                i,
                key,
                cost,
                now
            );
        }
        if got[0].allowed() {
            let mark = model.mark(key, now);
            prop_assert_eq!(got.receipt().marks(), &[Some(mark)][..], "request {}", i);
            admitted.push(Some((key, cost, got.receipt().clone(), mark)));
        } else {
            prop_assert!(!got.receipt().counted_anything());
            admitted.push(None);
        }
        if let Some(back) = refund.filter(|&back| back <= i) {
            if let Some((key, cost, receipt, mark)) = admitted[i - back].take() {
                let bytes = [key];
                let charge = [Charge::new(&limit, &bytes).cost(cost)];
                limiter
                    .refund(&charge, &receipt)
                    .now_or_never()
                    .unwrap()
                    .unwrap();
                model.refund(key, mark, now, u64::from(cost));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Costs from 1 to above MAX, and refunds of the last few admitted requests, through a
    /// real limiter against the models, for every algorithm.
    #[test]
    fn costs_and_refunds_match_the_models(
        policy in any_policy(), start in start(), schedule in cost_schedule()
    ) {
        costs_agree_with_model(policy, start, &schedule)?;
    }
}

// ---- stacked limits --------------------------------------------------------------------

/// Limits stacked on one handler, by the definition: a request is counted by every limit if
/// each admits it, and by none otherwise; then the limits that would have admitted it say
/// where they stand.
struct Stack {
    models: Vec<Box<dyn Model>>,
}

impl Stack {
    fn check(&mut self, keys: &[u8], now: u64) -> Vec<Decision> {
        let mut trial: Vec<Box<dyn Model>> = self.models.iter().map(|m| m.boxed()).collect();
        let decisions: Vec<Decision> = trial
            .iter_mut()
            .zip(keys)
            .map(|(m, &k)| m.check(k, now))
            .collect();
        if decisions.iter().all(Decision::allowed) {
            self.models = trial;
            return decisions;
        }
        decisions
            .into_iter()
            .zip(self.models.iter().zip(keys))
            .map(|(d, (m, &k))| if d.allowed() { m.status(k, now) } else { d })
            .collect()
    }
}

fn any_policy() -> impl Strategy<Value = Policy> {
    prop_oneof![
        policy(Algorithm::SlidingWindow),
        policy(Algorithm::FixedWindow),
        policy(Algorithm::SlidingWindowCounter),
        policy(Algorithm::TokenBucket),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Two or three limits (each keyed its own way: by the same client, or by another key),
    /// through a real limiter, against the stack of their models.
    #[test]
    fn stacks_match_their_model(
        policies in prop::collection::vec(any_policy(), 2..=3),
        start in start(),
        schedule in schedule(),
    ) {
        let clock = ManualClock::starting_at(ms(start));
        let limiter = Limiter::builder().clock(clock.clone()).build();
        let limits: Vec<Limit> = policies
            .iter()
            .enumerate()
            .map(|(i, p)| Limit::new(format!("stack-{i}"), *p))
            .collect();
        let mut model = Stack { models: policies.iter().map(model_for).collect() };
        let window = policies.iter().map(Policy::window_ms).max().unwrap();
        for (i, &(key, step)) in schedule.iter().enumerate() {
            clock.advance(ms(step.millis(window)));
            let now = clock.now().as_millis() as u64;
            // The second limit counts per client; the others share one key.
            let keys = [0, key, 0];
            let key_bytes: Vec<[u8; 1]> = keys.iter().map(|&k| [k]).collect();
            let requests: Vec<Charge<'_>> =
                limits.iter().zip(&key_bytes).map(|(l, k)| Charge::new(l, &k[..])).collect();
            let got = limiter.check_all(&requests).now_or_never().unwrap().unwrap();
            let expected = model.check(&keys[..limits.len()], now);
            prop_assert_eq!(got.decisions(), &expected[..], "request {} at {}", i, now);
        }
    }
}

/// A small deterministic generator, so the measurement below is the same on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// Measures the counter against the exact window on random traffic (arrivals uniformly
/// spread, at 0.5 to 4 times the limit), and holds it to the figures its documentation
/// states: it admits within 1% of what the exact window admits in total (0.83% at most on
/// these seeded schedules), and no interval of
/// length T holds more than 1.05 N. (Which requests get in differs more: under overload the
/// two let different ones through; that share is printed, not bounded.)
#[test]
fn sliding_window_counter_error_on_random_traffic_is_small() {
    let window = 60_000u64;
    let max = 100u32;
    let mut report = Vec::new();
    for load in [0.5f64, 1.0, 1.5, 2.0, 4.0] {
        let mut rng = Lcg(load.to_bits());
        let requests = (load * f64::from(max) * 20.0) as usize;
        let mean_gap = window as f64 / (load * f64::from(max));
        let schedule: Schedule = (0..requests)
            .map(|_| (0u8, Step::Random(rng.next() % (2 * mean_gap as u64 + 1))))
            .collect();
        let exact = run(
            Policy::for_algorithm(Algorithm::SlidingWindow, max, ms(window)).unwrap(),
            0,
            &schedule,
        );
        let approx = run(
            Policy::for_algorithm(Algorithm::SlidingWindowCounter, max, ms(window)).unwrap(),
            0,
            &schedule,
        );
        // Steps are drawn modulo 2T; these gaps are far smaller, so both runs see one clock.
        let differ = exact
            .iter()
            .zip(&approx)
            .filter(|(e, a)| e.2.allowed() != a.2.allowed())
            .count();
        let share = differ as f64 / requests as f64;
        let densest = densest_window(&approx, window) as f64 / f64::from(max);
        report.push(format!(
            "load {load:>3}x: {:.2}% of decisions differ, densest window {densest:.2} N",
            share * 100.0
        ));
        let admitted = |run: &[(u64, u8, Decision)]| run.iter().filter(|d| d.2.allowed()).count();
        let total = admitted(&approx) as f64 / admitted(&exact) as f64;
        let exact_densest = densest_window(&exact, window) as f64 / f64::from(max);
        report.push(format!(
            "          admitted {total:.4}x the exact window's total; exact densest {exact_densest:.2} N"
        ));
        assert!((0.99..=1.01).contains(&total), "load {load}: {total}");
        assert!(densest <= 1.05, "load {load}: {densest}");
    }
    println!("{}", report.join("\n"));
}
