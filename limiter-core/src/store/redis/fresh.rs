//! A new client's first check without the script. Most checks a busy Redis sees are of
//! clients it holds nothing for, and for those the answer is known before asking: one unit
//! admitted, and the state is the one the script would write. A script call costs Redis far
//! more than the one write such a check needs (starting the script, and each `redis.call`
//! several times the command it runs).
//!
//! So a usual check (one limit without a penalty, one unit) of a key this store has not sent
//! lately goes out as one `SET ... NX`, the batch's such writes in one pipeline. On the
//! server's clock it is `SET key MARK NX PXAT EXPIRES`: the state is the key's expiry, the
//! check's reading plus the lifetime its policy gives a first state, and MARK that reading
//! modulo 8,192 ([`first_mark`]; `first_state.lua` has why, and reads it back). An integer
//! below 10,000 is one Redis shares between keys, so such a key costs Redis its name and
//! expiry only, 32 to 48 bytes less than a packed state. With the caller's clock, whose
//! readings are not the server's, it is `SET key STATE NX PX LIFETIME`: the packed state of
//! check.lua after that one check, with the expiry the script would give it. Where the key
//! was absent (`OK`) the check is decided; where it exists (`NX` wrote nothing) the check
//! goes to the script after all, in a second call. The checks that were never candidates go
//! in the same pipeline as the writes, one script call after them, unless they touch a key
//! a write was tried for (or a key of a check so held back): those go in the second call,
//! in their order, so that every check still sees those before it of its keys. Every
//! reader (the script, refunds, `status`) sees the state the script alone would have
//! written.
//!
//! The reading: the caller's, with the caller's clock; on the server's clock, the store's
//! reading of it ([`ServerClock`]): the latest `TIME` a call brought, at most a quarter of a
//! second old, plus the time since on this machine. It is never ahead of the server's clock
//! (the reading is counted from when its answer arrived) and behind it by at most that
//! call's round trip ([`CLOCK_ROUND_TRIP`]; slower calls' readings are not used) and the
//! millisecond `TIME` was rounded down to: such a check counts as if it had come that much
//! earlier, and every key lives [`KEY_MARGIN_MS`] longer than its state matters, so that a
//! key found gone is one whose state had stopped mattering by that reading. (A server clock
//! stepped back runs ahead of a reading for as long as the reading is used, 62 ms under
//! load: the pipeline renews it with a `TIME` once it is a quarter of its most age old.)
//! The reading is dropped when a call fails (the next answer may come from another server).
//! Without a fresh reading the checks go to the script, which gives one. Receipts carry the
//! reading used, so refunds are exact.
//!
//! A key is a candidate at its first appearance in a batch only (a later check of it sees the
//! earlier ones), and only if the store has not sent it lately ([`Recent`]): a busy client's
//! keys exist, and trying them first would cost it a round trip. A cluster keeps the script
//! for every check.

use std::collections::HashSet;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redis::Value;

use super::batch::{CheckArgs, Peek};
use super::call::CallError;
use super::{scripts, RedisStore};
use crate::algorithm::fixed_window::FixedWindow;
use crate::algorithm::sliding_window;
use crate::algorithm::sliding_window_counter::SlidingWindowCounter;
use crate::algorithm::token_bucket::TokenBucket;
use crate::{Algorithm, Decision, Policy, StoreError};

/// The packed state (check.lua's formats) of `policy`'s algorithm after one unit admitted at
/// `at_ms` on nothing, and how long its key must live (ms, at least `min_ttl`), as the
/// script's `usual_fresh` writes them; `None` for the states the script keeps otherwise (a
/// long log's list, a calendar quota's period). With [`KEY_MARGIN_MS`] in the lifetime.
pub(super) fn first_state(policy: &Policy, at_ms: u64, min_ttl: u64) -> Option<(Vec<u8>, u64)> {
    let lifetime = first_lifetime(policy, at_ms, min_ttl)?;
    let mut state = Vec::with_capacity(14);
    let mut put = |n: u64, bytes: usize| state.extend_from_slice(&n.to_be_bytes()[8 - bytes..]);
    match scripts::code(policy) {
        // A short log of one instant: '>I6'.
        5 => put(at_ms, 6),
        // The window's start and its count: '>I6I4'.
        2 => {
            put(at_ms, 6);
            put(1, 4);
        }
        // The window's index, the previous and current counts: '>I6I4I4'.
        3 => {
            put(at_ms / policy.window_ms(), 6);
            put(0, 4);
            put(1, 4);
        }
        // The theoretical arrival time in ms and the nanoseconds beyond: '>I6I4'.
        _ => {
            let interval = policy.emission_interval_ns();
            let whole = interval / 1_000_000;
            put(at_ms + whole, 6);
            put(interval - whole * 1_000_000, 4);
        }
    }
    Some((state, lifetime))
}

/// How long the key of [`first_state`] must live (ms, at least `min_ttl`, with
/// [`KEY_MARGIN_MS`]): a log and a fixed window for a window, the counter until its next
/// window ends (its count weighs on it), the bucket until it is full again.
fn first_lifetime(policy: &Policy, at_ms: u64, min_ttl: u64) -> Option<u64> {
    // The states' readings are 6 bytes (and Lua's numbers exact below 2^53): a reading far
    // past any clock's is the script's to answer.
    if at_ms >= 1 << 46 || !has_first_state(policy) {
        return None;
    }
    let window = policy.window_ms();
    let ttl = match scripts::code(policy) {
        3 => 2 * window - at_ms % window,
        4 => policy.emission_interval_ns() / 1_000_000 + 1,
        _ => window,
    };
    Some(ttl.max(min_ttl).max(1) + KEY_MARGIN_MS)
}

/// Marks are readings (the counter's: window indexes) modulo this: an integer Redis shares
/// (below 10,000), and an expiry read back within half of it (4 s) tells them apart.
/// `first_state.lua` has it as a literal (a test here holds the two equal).
const MARK_MODULUS: u64 = 8_192;

/// A first state on the server's clock as its key's expiry: the mark the key holds and when
/// it expires (the server's unix ms, for `PXAT`), the check's reading plus the lifetime
/// [`first_state`] gives it; `None` where that has none.
pub(super) fn first_mark(policy: &Policy, at_ms: u64) -> Option<(u64, u64)> {
    let lifetime = first_lifetime(policy, at_ms, 0)?;
    let marked = match scripts::code(policy) {
        3 => at_ms / policy.window_ms(),
        _ => at_ms,
    };
    Some((marked % MARK_MODULUS, at_ms + lifetime))
}

/// The reading a first state written by [`first_mark`] was counted at, from its mark and
/// its key's expiry read back within 4 s (the counter's: its window's start, which is all
/// its first state keeps); as `first_state.lua` reads it.
pub(super) fn first_reading(policy: &Policy, mark: u64, expires_ms: u64) -> Option<u64> {
    let window = policy.window_ms();
    let code = scripts::code(policy);
    let near = match code {
        // The counter's key expires as its next window ends.
        3 => (expires_ms.checked_sub(KEY_MARGIN_MS)? / window).checked_sub(2)?,
        // The others' lifetimes do not depend on the reading.
        _ => expires_ms.checked_sub(first_lifetime(policy, 0, 0)?)?,
    };
    let half = MARK_MODULUS / 2;
    let ahead = (mark % MARK_MODULUS + MARK_MODULUS + half - near % MARK_MODULUS) % MARK_MODULUS;
    let marked = (near + ahead).checked_sub(half)?;
    Some(match code {
        3 => marked * window,
        _ => marked,
    })
}

/// Whether `policy`'s first check has a state of its own to write: the packed states of
/// check.lua (the fixed window, the counter, the bucket, a short log), not a long log's
/// list nor a calendar quota's period.
pub(super) fn has_first_state(policy: &Policy) -> bool {
    matches!(scripts::code(policy), 2..=5)
}

/// How much longer than its state matters every key written lives (the script's `lifetime`
/// adds as much): a first check counts up to this much behind the server's clock (the
/// round trip of [`CLOCK_ROUND_TRIP`], and the ms `TIME` and the reading are rounded down
/// by), and the key it finds gone must be one whose state stopped mattering by then.
pub(super) const KEY_MARGIN_MS: u64 = 12;

/// `policy`'s decision on a check of one unit admitted at `at_ms` on nothing, as the memory
/// store (and the script) decide it.
fn first_decision(policy: &Policy, at_ms: u64) -> Decision {
    match policy.algorithm() {
        Algorithm::FixedWindow => FixedWindow::default().check_cost(at_ms, policy, 1),
        Algorithm::SlidingWindowCounter => {
            SlidingWindowCounter::default().check_cost(at_ms, policy, 1)
        }
        Algorithm::TokenBucket => TokenBucket::default().check_cost(at_ms, policy, 1),
        Algorithm::SlidingWindow => {
            sliding_window::check_cost(&mut std::collections::VecDeque::new(), at_ms, policy, 1)
        }
    }
}

/// A reading of the server's clock is used only from calls answered within this: the
/// store's reading is then behind the server's by at most this.
pub(super) const CLOCK_ROUND_TRIP: Duration = Duration::from_millis(10);

/// Readings older than this are not used: the server's clock may have been stepped since,
/// or run at another rate than this machine's (NTP slews a clock by at most 0.5 ms a
/// second: 0.125 ms in this time).
const CLOCK_MOST_AGE: Duration = Duration::from_millis(250);

/// The store's reading of the Redis server's clock: the latest reading a call brought,
/// taken as of when its answer arrived (so never ahead of the server), plus the time since
/// on this machine's monotonic clock.
pub(super) struct ServerClock {
    base: Instant,
    /// The server's reading (in µs) less the local time (µs since `base`) its answer came.
    offset_us: AtomicI64,
    /// When that answer came (µs since `base`, plus 1; 0: none yet).
    taken_us: AtomicU64,
}

impl Default for ServerClock {
    fn default() -> ServerClock {
        ServerClock {
            base: Instant::now(),
            offset_us: AtomicI64::new(0),
            taken_us: AtomicU64::new(0),
        }
    }
}

impl ServerClock {
    fn local_us(&self, at: Instant) -> i64 {
        i64::try_from(at.saturating_duration_since(self.base).as_micros()).unwrap_or(i64::MAX)
    }

    /// Notes the server's reading `server_ms` (whole ms) of a call sent at `sent` and
    /// answered now. Counted from the answer, a reading taken before it is never ahead of
    /// the server's clock; behind it by at most the round trip and the ms it was rounded
    /// down by.
    pub(super) fn note(&self, server_ms: i64, sent: Instant) {
        let answered = Instant::now();
        if server_ms <= 0 || answered.saturating_duration_since(sent) > CLOCK_ROUND_TRIP {
            return;
        }
        let local = self.local_us(answered);
        self.offset_us.store(
            server_ms.saturating_mul(1_000).saturating_sub(local),
            Ordering::Relaxed,
        );
        self.taken_us
            .store(u64::try_from(local).unwrap_or(0) + 1, Ordering::Release);
    }

    /// Drops the reading (the connection failed: the next answer may come from another
    /// server, whose clock this one says nothing of).
    pub(super) fn forget(&self) {
        self.taken_us.store(0, Ordering::Release);
    }

    /// How long ago the reading's answer came, if there is one.
    fn age(&self) -> Option<Duration> {
        let taken = self.taken_us.load(Ordering::Acquire).checked_sub(1)?;
        let now = u64::try_from(self.local_us(Instant::now())).unwrap_or(0);
        Some(Duration::from_micros(now.saturating_sub(taken)))
    }

    /// Whether the reading is older than a quarter of the most age a reading is used at.
    fn is_aging(&self) -> bool {
        self.age().is_none_or(|age| age > CLOCK_MOST_AGE / 4)
    }

    /// The server's clock now (whole ms), if a recent reading allows.
    fn now_ms(&self) -> Option<u64> {
        if self.age()? > CLOCK_MOST_AGE {
            return None;
        }
        let now = self
            .local_us(Instant::now())
            .checked_add(self.offset_us.load(Ordering::Relaxed))?;
        u64::try_from(now / 1_000).ok()
    }
}

/// Keys this store sent lately, by a keyed hash of their names in a fixed table (a later
/// name in the same place takes it): a hint of which keys exist in Redis, never trusted for
/// a decision. Keyed per process, so that clients cannot choose names that push a busy
/// client's key out.
pub(super) struct Recent {
    seen: Box<[AtomicU64]>,
    hasher: std::collections::hash_map::RandomState,
}

/// Places in [`Recent`]: 64 KiB, a fraction of a second of a new client per request at the
/// rates one instance serves, many seconds of the clients that come back.
const RECENT: usize = 8_192;

impl Default for Recent {
    fn default() -> Recent {
        Recent {
            seen: (0..RECENT).map(|_| AtomicU64::new(0)).collect(),
            hasher: Default::default(),
        }
    }
}

impl Recent {
    /// `name`'s keyed hash (never 0, which marks an empty place): what the store knows a
    /// name by in a batch (see [`Names`]) and here.
    fn hash(&self, name: &str) -> u64 {
        self.hasher.hash_one(name) | 1
    }

    fn place(hash: u64) -> usize {
        (hash >> 32) as usize % RECENT
    }

    fn seen(&self, hash: u64) -> bool {
        self.seen[Recent::place(hash)].load(Ordering::Relaxed) == hash
    }

    fn note(&self, hash: u64) {
        self.seen[Recent::place(hash)].store(hash, Ordering::Relaxed);
    }
}

/// The names of a batch's checks, by their keyed hashes ([`Recent::hash`]): each name is
/// hashed once (SipHash over a name of 37 bytes or more costs more than the rest of its
/// bookkeeping). Two names of one hash (one chance in 2^63) only cost a round trip: the
/// later check goes to the script.
type Names = HashSet<u64, std::hash::BuildHasherDefault<KeyedHash>>;

/// A hasher for values that are already keyed hashes: it keeps them.
#[derive(Default)]
struct KeyedHash(u64);

impl std::hash::Hasher for KeyedHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64`s are hashed with it; anything else is folded in, never lost.
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_u64(&mut self, hash: u64) {
        self.0 = hash;
    }
}

/// A check that may go without the script: its key and policy.
fn candidate(check: &CheckArgs) -> Option<(&str, &Policy)> {
    let policy = check.first.as_ref()?;
    match (&check.names[..], check.peek) {
        ([name], Peek::No) => Some((name, policy)),
        _ => None,
    }
}

/// What a batch's round trips decided.
pub(super) enum Decided {
    /// Every check.
    All,
    /// All but those left for the next batch (see [`RedisStore::decide`]).
    Carried,
}

/// A first check sent without the script: where it is in the batch, its policy and the
/// reading it counted at.
struct Tried<'a> {
    at: usize,
    name: &'a str,
    policy: &'a Policy,
    reading: u64,
    /// Written as a mark ([`first_mark`]), not as a packed state.
    marked: bool,
}

impl RedisStore {
    /// Decides `checks` in order, each one's answer as the script gives it into `decided`:
    /// new clients' first checks by plain writes, then the rest by the script. Those already
    /// decided (by an earlier try of the same batch) are not sent again.
    ///
    /// With `carry`, what the first round trip left — a first check whose key existed after
    /// all, the checks held back behind a first check of their keys — is left undecided
    /// ([`Decided::Carried`]) for the next batch, which sends it first, in its one round trip,
    /// rather than in a second call of this one's: in a new client per request's batches most
    /// calls would otherwise be two (a returning client among forty new ones).
    pub(super) async fn decide(
        &self,
        checks: &[CheckArgs],
        decided: &mut [Option<Vec<i64>>],
        carry: bool,
    ) -> Result<Decided, CallError> {
        let open: Vec<usize> = (0..checks.len())
            .filter(|&i| decided[i].is_none())
            .collect();
        let first = match self.inner.connection.one_server() {
            Some(connection) => self.first_checks(&connection, checks, &open, decided).await,
            None => Ok(false),
        };
        // A server that refused a new client's write still decides the rest: its
        // rejections stand, whatever the call carried (the refused checks keep the refusal).
        let carry = match first {
            Err(error) if !error.was_answered() => return Err(error),
            Err(_) => false,
            Ok(wrote) => carry && wrote,
        };
        let rest: Vec<usize> = open.into_iter().filter(|&i| decided[i].is_none()).collect();
        if rest.is_empty() {
            return first.map(|_| Decided::All);
        }
        if carry && rest.iter().all(|&i| !checks[i].carried) {
            return Ok(Decided::Carried);
        }
        if self.inner.connection.is_cluster() {
            self.call_on_node(checks, rest, decided).await?;
            return first.map(|_| Decided::All);
        }
        let rest_checks: Vec<&CheckArgs> = rest.iter().map(|&i| &checks[i]).collect();
        let replies = self.call(&rest_checks).await?;
        for (i, reply) in rest.into_iter().zip(replies) {
            decided[i] = Some(reply);
        }
        first.map(|_| Decided::All)
    }

    /// Sends the `open` checks that are new clients' first ones as plain writes, and with
    /// them, in the same round trip, the script for the others that touch none of their
    /// keys; records the answers Redis gave. What is left — a first check whose key existed
    /// after all, the checks after it of the same keys, a script Redis did not know — is
    /// the second call's. `true` when it sent first writes and Redis knew the script beside
    /// them (so what is left may wait for the next batch: see [`decide`](Self::decide)).
    async fn first_checks(
        &self,
        connection: &redis::aio::ConnectionManager,
        checks: &[CheckArgs],
        open: &[usize],
        decided: &mut [Option<Vec<i64>>],
    ) -> Result<bool, CallError> {
        let recent = &self.inner.recent;
        let min_ttl = self.min_ttl();
        let server_now = self.inner.server_clock.now_ms();
        let mut named = Names::default();
        let mut tried = Vec::new();
        let mut writes = redis::pipe();
        // An error answers its own command, not the pipeline: the writes before a refused
        // script are still known.
        writes.ignore_errors();
        for &at in open {
            let check = &checks[at];
            if let Some((name, policy)) = candidate(check) {
                let hash = recent.hash(name);
                let reading = check.now.or(server_now);
                let free = !named.contains(&hash) && !recent.seen(hash);
                if let (Some(reading), true) = (reading, free) {
                    let marked = check.now.is_none() && self.inner.marks.load(Ordering::Relaxed);
                    if write_first(&mut writes, name, policy, reading, marked, min_ttl) {
                        tried.push(Tried {
                            at,
                            name,
                            policy,
                            reading,
                            marked,
                        });
                    }
                }
                named.insert(hash);
            } else {
                named.extend(check.names.iter().map(|name| recent.hash(name)));
            }
        }
        for &hash in &named {
            recent.note(hash);
        }
        if tried.is_empty() {
            return Ok(false);
        }
        // A batch of new clients only (the usual batch of a new client per request) has no
        // other check to send along.
        let along = match tried.len() == open.len() {
            true => Vec::new(),
            false => along_with(checks, open, &tried),
        };
        let along_checks: Vec<&CheckArgs> = along.iter().map(|&at| &checks[at]).collect();
        if !along.is_empty() {
            writes.add_command(self.script_call(&along_checks));
        }
        // A batch of new clients only calls no script: its reading of the server's clock is
        // renewed in the same pipeline when it gets old.
        // (A script in the pipeline brings a reading of its own.)
        let renew = along.is_empty() && self.inner.server_clock.is_aging();
        if renew {
            writes.cmd("TIME");
        }
        let sent = Instant::now();
        let mut written: Vec<Value> = match writes.query_async(&mut connection.clone()).await {
            Ok(written) => written,
            Err(e) => return Err(self.failed(e)),
        };
        if renew {
            let time = written.pop().map(redis::from_redis_value::<(i64, i64)>);
            if let Some(Ok((secs, micros))) = time {
                self.inner
                    .server_clock
                    .note(secs.saturating_mul(1_000) + micros / 1_000, sent);
            }
        }
        let script = (!along.is_empty()).then(|| written.pop()).flatten();
        // Every answer Redis gave is kept, whatever else it refused: those checks counted.
        let mut refused = None;
        for (first, reply) in tried.iter().zip(written) {
            match reply {
                Value::Okay => {
                    let decision = first_decision(first.policy, first.reading);
                    decided[first.at] = Some(answer_of(decision, first.reading));
                }
                // A server older than Redis 6.2 knows no `PXAT`: its first checks are written
                // as packed states from now on, and this one's goes to the script.
                Value::ServerError(e) if first.marked && is_syntax_error(&e) => {
                    self.inner.marks.store(false, Ordering::Relaxed);
                }
                Value::ServerError(e) => refused = refused.or(Some(CallError::Redis(e.into()))),
                // `NX`: the key exists, the script decides.
                _ => {}
            }
        }
        let script = match script.map(redis::from_redis_value::<redis::RedisResult<Vec<i64>>>) {
            Some(Ok(Ok(reply))) => self.answers(&along_checks, reply, sent).map(|answers| {
                for (&at, answer) in along.iter().zip(answers) {
                    decided[at] = Some(answer);
                }
                true
            }),
            // Redis does not know the script or the library (a restart, a flush), or refuses
            // the library: the second call mends that.
            Some(Ok(Err(e))) if super::functions::mended_alone(&e) => Ok(false),
            Some(Ok(Err(e))) => Err(CallError::Redis(e)),
            Some(Err(e)) => Err(CallError::Reply(StoreError::msg(format!(
                "the rate limit script answered {e}"
            )))),
            None => Ok(true),
        };
        match refused.map_or(script, Err) {
            Err(CallError::Redis(e)) => Err(self.failed(e)),
            other => other,
        }
    }

    /// A failed call's error, once the store has forgotten the server's clock (the next
    /// answer may come from another server), behind Sentinel asked where the master is, and
    /// had a connection that would never connect again made again.
    fn failed(&self, e: redis::RedisError) -> CallError {
        self.inner.server_clock.forget();
        self.inner.connection.after_failure(&e);
        CallError::Redis(e)
    }
}

/// Adds `name`'s first check at `reading` to `writes`, as a mark on the server's clock
/// (`marked`), else as a packed state; whether `policy` has a first state to write.
fn write_first(
    writes: &mut redis::Pipeline,
    name: &str,
    policy: &Policy,
    reading: u64,
    marked: bool,
    min_ttl: u64,
) -> bool {
    // Nothing is added to the pipeline unless there is a first state to write.
    if marked {
        let Some((mark, expires)) = first_mark(policy, reading) else {
            return false;
        };
        let set = writes.cmd("SET").arg(name).arg(mark);
        set.arg("NX").arg("PXAT").arg(expires);
    } else {
        let Some((state, lifetime)) = first_state(policy, reading, min_ttl) else {
            return false;
        };
        let set = writes.cmd("SET").arg(name).arg(state);
        set.arg("NX").arg("PX").arg(lifetime);
    }
    true
}

/// Whether Redis refused a command's syntax (`SET ... PXAT` before Redis 6.2).
fn is_syntax_error(error: &redis::ServerError) -> bool {
    error.details().is_some_and(|d| d.contains("syntax error"))
        || error.to_string().contains("syntax error")
}

/// Of the `open` checks other than the first checks `tried`, those the script may decide
/// in the same round trip as their writes: those that touch no key of a first check nor of
/// a check held back before them (a check must see those before it of the same keys,
/// whatever a first check's write finds).
fn along_with(checks: &[CheckArgs], open: &[usize], tried: &[Tried<'_>]) -> Vec<usize> {
    let mut held: HashSet<&str> = tried.iter().map(|first| first.name).collect();
    let mut along = Vec::new();
    let mut firsts = tried.iter().map(|first| first.at).peekable();
    for &at in open {
        if firsts.peek() == Some(&at) {
            firsts.next();
            continue;
        }
        let names = &checks[at].names;
        if names.iter().any(|name| held.contains(name.as_str())) {
            held.extend(names.iter().map(String::as_str));
        } else {
            along.push(at);
        }
    }
    along
}

/// The script's answer for a check admitted at `at_ms`: counted at the call's reading, what
/// remains and when used quota next comes back, then the reading.
fn answer_of(decision: Decision, at_ms: u64) -> Vec<i64> {
    let wait = i64::try_from(decision.reset_after().as_nanos()).unwrap_or(i64::MAX);
    let at = i64::try_from(at_ms).unwrap_or(i64::MAX);
    vec![1, i64::from(decision.remaining()), wait, at]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Algorithm;

    /// check.lua writes the margin as a literal (a script has no constants of ours): the two
    /// must agree, or a first check's key could be found gone while its state still matters.
    #[test]
    fn the_script_gives_every_key_the_first_checks_margin() {
        let line = format!("  return ttl + {}\n", KEY_MARGIN_MS);
        assert!(
            scripts::SCRIPT.contains(&line),
            "check.lua's lifetime() must end with {line:?}"
        );
    }

    /// first_state.lua reads marks with the same numbers as literals.
    #[test]
    fn the_script_reads_marks_with_the_same_numbers() {
        let margin = format!(" + ttl - {KEY_MARGIN_MS}\n");
        let modulus = format!(
            "(tonumber(mark) - near + {}) % {MARK_MODULUS} - {}\n",
            MARK_MODULUS / 2,
            MARK_MODULUS / 2
        );
        for line in [margin, modulus] {
            assert!(scripts::SCRIPT.contains(&line), "first_state.lua: {line:?}");
        }
    }

    /// Every policy with a first state, windows from 1 ms to days, buckets of every rate.
    fn policies() -> Vec<Policy> {
        let mut policies = Vec::new();
        for window in [1, 7, 999, 1_000, 4_096, 8_192, 60_000, 86_400_000] {
            let per = std::time::Duration::from_millis(window);
            for algorithm in [
                Algorithm::SlidingWindow,
                Algorithm::FixedWindow,
                Algorithm::SlidingWindowCounter,
                Algorithm::TokenBucket,
            ] {
                for max in [1, 5, 100] {
                    if let Ok(policy) = Policy::for_algorithm(algorithm, max, per) {
                        policies.push(policy);
                    }
                }
            }
        }
        policies
    }

    /// A mark and an expiry read back up to 4 s off give the state written, exactly, for
    /// readings anywhere and any remainder of the modulus.
    #[test]
    fn a_mark_and_its_expiry_give_back_the_first_state() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for policy in policies() {
            for _ in 0..200 {
                let at = 1_700_000_000_000 + next() % (1 << 40);
                let (mark, expires) = first_mark(&policy, at).unwrap();
                assert!(mark < 10_000, "a shared integer");
                let off = (next() % 8_190) as i64 - 4_095;
                let read = expires.checked_add_signed(off).unwrap();
                let reading = first_reading(&policy, mark, read).unwrap();
                assert_eq!(
                    first_state(&policy, reading, 0).unwrap().0,
                    first_state(&policy, at, 0).unwrap().0,
                    "{policy} at {at}, read {off} ms off"
                );
            }
        }
    }
}
