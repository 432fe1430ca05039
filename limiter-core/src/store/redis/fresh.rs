//! A new client's first check without the script. Most checks a busy Redis sees are of
//! clients it holds nothing for, and for those the answer is known before asking: one unit
//! admitted, counted at the server's reading. What a script costs Redis — starting it, its
//! arguments, every `redis.call` — is many times the one write such a check needs.
//!
//! So a usual check (one limit without a penalty, one unit, the server's clock) of a key this
//! store has not seen lately goes out as `SET key MARKER NX PX lifetime GET` and
//! `PEXPIRETIME key`, the batch's such pairs in one `MULTI`/`EXEC` (atomic: nothing runs
//! between a pair). Where the key was absent the `SET` wrote it and its check is decided:
//! admitted at the instant Redis set the expiry from, `PEXPIRETIME - lifetime`. Where the
//! key exists, `NX` changed nothing and the check goes to the script after all, with the
//! checks that were never candidates, in their order. The marker (see [`marker`]) stands
//! for that one unit until a script or a refund reads it: they find the instant the same
//! way and go on from the state the algorithm would hold, so every decision, receipt and
//! refund is the one the script alone would have made.
//!
//! A key is a candidate at its first appearance in a batch only (a later check of it sees
//! the earlier ones), and only if the store has not sent it lately ([`Recent`]): a busy
//! client's keys exist, and asking for them twice would cost it a round trip per batch.
//! Redis before 7.0 has neither `PEXPIRETIME` nor `SET ... NX GET`: its first such
//! transaction is refused whole (`EXECABORT`: nothing ran), and the store then sends every
//! check to the script. A cluster keeps the script for every check (its transactions are
//! per slot, and batches already are).

use std::collections::HashSet;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use redis::{ErrorKind, ServerErrorKind, Value};

use super::batch::{CheckArgs, Peek};
use super::call::CallError;
use super::connection::Connection;
use super::{scripts, RedisStore};
use crate::algorithm::fixed_window::FixedWindow;
use crate::algorithm::sliding_window;
use crate::algorithm::sliding_window_counter::SlidingWindowCounter;
use crate::algorithm::token_bucket::TokenBucket;
use crate::{Algorithm, Decision, Policy};

/// The first byte of a marker: no packed state begins with it (their first six bytes are a
/// reading in ms or a window's number, far below 2^47).
pub(super) const MARKER_TAG: u8 = 0xFF;

/// The value a check made without the script leaves: [`MARKER_TAG`], then the key's
/// lifetime in ms (6 bytes, big-endian), so that the instant it counted at is its expiry
/// less that lifetime, whatever policy reads it.
pub(super) fn marker(lifetime_ms: u64) -> [u8; 7] {
    let mut value = [MARKER_TAG; 7];
    value[1..].copy_from_slice(&lifetime_ms.to_be_bytes()[2..]);
    value
}

/// The lifetime a marker holds, if `raw` is one.
pub(super) fn marker_lifetime(raw: &[u8]) -> Option<u64> {
    match raw {
        [MARKER_TAG, rest @ ..] if rest.len() == 6 => {
            Some(rest.iter().fold(0, |n, &b| (n << 8) | u64::from(b)))
        }
        _ => None,
    }
}

/// How long a key written by its first check lives (ms): as long as the check's state
/// matters, the same for every instant, so that the expiry gives the instant back. The
/// counter's state matters until the next window ends, two windows at most; a calendar's
/// and a long log's are not candidates.
pub(super) fn lifetime_ms(policy: &Policy) -> Option<u64> {
    match scripts::code(policy) {
        2 | 5 => Some(policy.window_ms()),
        3 => Some(2 * policy.window_ms()),
        4 => Some(policy.emission_interval_ns() / 1_000_000 + 1),
        _ => None,
    }
}

/// The state `policy`'s algorithm holds after admitting one unit at `at_ms` on nothing, as
/// the memory store decides it, with `then` applied to it: where it stands at another
/// reading, or the check's own answer.
pub(super) fn first_check(policy: &Policy, at_ms: u64) -> (Decision, impl FnOnce(u64) -> Decision) {
    let policy = *policy;
    let mut fixed = FixedWindow::default();
    let mut counter = SlidingWindowCounter::default();
    let mut bucket = TokenBucket::default();
    let mut log = std::collections::VecDeque::new();
    let decision = match policy.algorithm() {
        Algorithm::FixedWindow => fixed.check(at_ms, &policy),
        Algorithm::SlidingWindowCounter => counter.check(at_ms, &policy),
        Algorithm::TokenBucket => bucket.check(at_ms, &policy),
        Algorithm::SlidingWindow => sliding_window::check(&mut log, at_ms, &policy),
    };
    let status = move |now_ms: u64| match policy.algorithm() {
        Algorithm::FixedWindow => fixed.status(now_ms, &policy),
        Algorithm::SlidingWindowCounter => counter.status(now_ms, &policy),
        Algorithm::TokenBucket => bucket.status(now_ms, &policy),
        Algorithm::SlidingWindow => sliding_window::status(&mut log, now_ms, &policy),
    };
    (decision, status)
}

/// Keys this store sent lately, by a keyed hash of their names in a fixed table (a later
/// name in the same place takes it): a hint of which keys exist in Redis, never trusted
/// for a decision. Keyed per process, so that clients cannot choose names that push a busy
/// client's key out.
pub(super) struct Recent {
    seen: Box<[AtomicU64]>,
    hasher: std::collections::hash_map::RandomState,
    /// Off when the server cannot run the transaction (Redis before 7.0).
    enabled: AtomicBool,
}

/// Places in [`Recent`]: 64 KiB, a few seconds of a new client per request at the rates
/// one instance serves.
const RECENT: usize = 8_192;

impl Default for Recent {
    fn default() -> Recent {
        Recent {
            seen: (0..RECENT).map(|_| AtomicU64::new(0)).collect(),
            hasher: Default::default(),
            enabled: AtomicBool::new(true),
        }
    }
}

impl Recent {
    fn place(&self, name: &str) -> (usize, u64) {
        let hash = self.hasher.hash_one(name) | 1;
        ((hash >> 32) as usize % RECENT, hash)
    }

    fn seen(&self, name: &str) -> bool {
        let (at, hash) = self.place(name);
        self.seen[at].load(Ordering::Relaxed) == hash
    }

    fn note(&self, name: &str) {
        let (at, hash) = self.place(name);
        self.seen[at].store(hash, Ordering::Relaxed);
    }
}

/// A check that may go without the script: its key and its policy.
fn candidate(check: &CheckArgs) -> Option<(&str, &Policy)> {
    let policy = check.first.as_ref()?;
    match (&check.names[..], check.now, check.peek) {
        ([name], None, Peek::No) => Some((name, policy)),
        _ => None,
    }
}

impl RedisStore {
    /// Decides `checks` in order: new clients' first checks by a transaction of plain
    /// commands, the rest by the script; each one's answer as the script gives it.
    pub(super) async fn decide(&self, checks: &[CheckArgs]) -> Result<Vec<Vec<i64>>, CallError> {
        let recent = &self.inner.recent;
        let Connection::Single(connection) = &self.inner.connection else {
            return self.call(&checks.iter().collect::<Vec<_>>()).await;
        };
        let mut named: HashSet<&str> = HashSet::new();
        let mut tried = Vec::new();
        if recent.enabled.load(Ordering::Relaxed) {
            for (i, check) in checks.iter().enumerate() {
                if let Some((name, policy)) = candidate(check) {
                    if !named.contains(name) && !recent.seen(name) {
                        tried.push((i, name, *policy));
                    }
                }
                named.extend(check.names.iter().map(String::as_str));
            }
        }
        for check in checks {
            for name in &check.names {
                recent.note(name);
            }
        }
        if tried.is_empty() {
            return self.call(&checks.iter().collect::<Vec<_>>()).await;
        }
        let mut transaction = redis::pipe();
        transaction.atomic();
        for (_, name, policy) in &tried {
            let lifetime = lifetime_ms(policy).unwrap_or(1);
            transaction
                .cmd("SET")
                .arg(name)
                .arg(&marker(lifetime)[..])
                .arg("NX")
                .arg("PX")
                .arg(lifetime)
                .arg("GET")
                .cmd("PEXPIRETIME")
                .arg(name);
        }
        let replies: Vec<Value> = match transaction.query_async(&mut connection.clone()).await {
            Ok(replies) => replies,
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::ExecAbort) => {
                // Nothing ran. A server that cannot run it (Redis before 7.0, an ACL) never
                // will: every check goes to the script from now on.
                if cannot_run(e) && recent.enabled.swap(false, Ordering::Relaxed) {
                    tracing::warn!(
                        "this Redis cannot decide new clients without the script \
                         (SET ... NX GET and PEXPIRETIME need Redis 7.0 and the ACL's leave): \
                         every check goes through the script, which costs Redis more per \
                         new client"
                    );
                }
                return self.call(&checks.iter().collect::<Vec<_>>()).await;
            }
            Err(e) => return Err(CallError::Redis(e)),
        };
        let mut answers: Vec<Option<Vec<i64>>> = vec![None; checks.len()];
        for ((i, _, policy), pair) in tried.iter().zip(replies.chunks_exact(2)) {
            if let [Value::Nil, Value::Int(expires)] = pair {
                let lifetime = lifetime_ms(policy).unwrap_or(1);
                let at = u64::try_from(*expires)
                    .unwrap_or(0)
                    .saturating_sub(lifetime);
                answers[*i] = Some(answer_of(first_check(policy, at).0, at));
            }
        }
        let rest: Vec<&CheckArgs> = checks
            .iter()
            .zip(&answers)
            .filter(|(_, answer)| answer.is_none())
            .map(|(check, _)| check)
            .collect();
        let mut decided = if rest.is_empty() {
            Vec::new()
        } else {
            self.call(&rest).await?
        }
        .into_iter();
        Ok(answers
            .into_iter()
            .map(|answer| answer.or_else(|| decided.next()).unwrap_or_default())
            .collect())
    }
}

/// The script's answer for a check admitted at `at_ms`: counted at the call's reading, what
/// remains and when used quota next comes back, then the reading.
fn answer_of(decision: Decision, at_ms: u64) -> Vec<i64> {
    let wait = i64::try_from(decision.reset_after().as_nanos()).unwrap_or(i64::MAX);
    let at = i64::try_from(at_ms).unwrap_or(i64::MAX);
    vec![1, i64::from(decision.remaining()), wait, at]
}

/// Whether an aborted transaction was refused for what it asks (a command the server does
/// not know, an option it does not take, an ACL that forbids it), not for the moment (a
/// server out of memory).
fn cannot_run(aborted: redis::RedisError) -> bool {
    aborted.into_server_errors().is_some_and(|errors| {
        errors.iter().any(|(_, error)| {
            let detail = error.details().unwrap_or_default();
            error.code() == "NOPERM"
                || [
                    "unknown command",
                    "syntax error",
                    "wrong number of arguments",
                ]
                .iter()
                .any(|words| detail.contains(words))
        })
    })
}
