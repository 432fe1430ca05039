//! The Redis store: one budget shared by every instance of a service.

mod batch;
mod call;
mod connect;
mod connection;
mod cpu_wait;
mod deadline;
mod errors;
mod fresh;
mod functions;
mod inspect;
mod keys;
mod node_batches;
mod nodes;
mod overrides;
pub(crate) use overrides::{Reading, Stored};
mod probe;
mod refund;
mod renewable;
mod reply;
mod runtime;
mod scripts;
mod slots;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{Charge, Check, Checked, Limit, Receipt, Store, StoreError};
use crate::Decision;
use batch::{Batcher, CheckArgs, Peek};
use connection::{Connection, Server};
use errors::{failure, refusal, refused};
use keys::hash_slot;
use runtime::Runtime;
use scripts::Script;

/// Counts in Redis, so that every instance of a service shares one budget per client.
///
/// - **Atomic, one round trip**: each request is decided by one Lua call, whatever the
///   number of limits it is checked against; stacked limits count a request all or
///   nothing. On Redis 7 and Valkey the check is a function library, loaded when the
///   store connects (`FUNCTION LOAD`; `FCALL` costs Redis about 30% less than a script for
///   a call of one check); a server that lost it (a restart, `FUNCTION FLUSH`) gets it
///   again at the first call that finds it missing. A server that refuses functions
///   (Redis 6, an ACL or plan without `FCALL` or `FUNCTION`) gets the same check as a
///   script (`EVALSHA`), and its source once when it lost it (`SCRIPT FLUSH`, a restart).
/// - **Batched under load**: the checks that arrive while earlier ones are in Redis go out
///   together, one call for up to 128, decided in order exactly as if sent one by one;
///   a key checked several times in one call is read and written once, and a busy client's
///   checks side by side are one entry of the call, counted at once. An idle store sends
///   each check at once. On a cluster, batches are per node (see
///   [`connect_cluster`](RedisStore::connect_cluster)).
/// - **A new client is one `SET`**: on one server, a client's first check (one limit
///   without a penalty, one unit) is a plain `SET ... NX PX` of the state the script would
///   write, counted at the store's reading of the server's clock (never ahead of it); a key
///   that exists after all goes to the script.
/// - **One clock**: scripts read the Redis server's `TIME`, so instances with skewed clocks
///   agree ([`use_caller_clock`](RedisStore::use_caller_clock) passes the limiter's clock
///   instead, for tests with a [`ManualClock`](crate::ManualClock)).
/// - **Same answers as the in-memory store**: the scripts follow the same definitions; the
///   tests replay the reference schedules through both.
/// - **Small**: the fixed window, the counter, the bucket and sliding logs of up to 128 keep
///   a string of a few packed integers per client (a call reads its keys in one `MGET` and
///   writes each in one `SET PX`; a log 4 bytes more an instant); longer logs are lists
///   (about 10 bytes an instant). A new client's first check writes only a small integer,
///   its reading being the key's expiry (`SET ... NX PXAT`): 112 bytes of Redis 7.0's
///   memory per client with its name and expiry, 96 on Valkey 8.0.
/// - **Tidy**: every key written expires, when its state stops mattering (a fixed window's
///   end, the counter's next window, a full bucket; a log keeps two windows from when its
///   expiry was last short, so that most pushes set none). Key names are
///   `PREFIX:{CLIENT}LIMIT`, bounded in length whatever a client sends: `CLIENT` is the key's
///   bytes in unpadded base64url, or their SHA-1's when 20 bytes or longer or empty, `LIMIT` the
///   limit's stable id in 11 characters of the same ([`Limit`]'s documentation gives its
///   encoding). The braces are a Redis
///   Cluster hash tag: a client's states live on one node
///   ([`connect_cluster`](RedisStore::connect_cluster)).
/// - **Load is not an outage**: the limiter's timeout judges Redis's answer to each call,
///   not the time a check waits for its turn in the batch queue; a full queue makes checks
///   wait for room (backpressure) instead of failing them. The calls run on a thread of the
///   store's own, so a busy or blocked request handler cannot stall them, and a check works
///   from any thread.
/// - **Faults are the limiter's policy**: a call that fails or exceeds the timeout fails its
///   checks (and those waiting behind it), which get
///   [`LimiterBuilder::on_store_error`](crate::LimiterBuilder::on_store_error)'s answer; a
///   call whose connection dropped is sent again at once over a new one, so a blip is no
///   outage; the connection reconnects by itself when Redis comes back.
///
/// Every [`Policy`](crate::Policy) is computed exactly: policies are bounded so that the
/// scripts' arithmetic stays within what Lua's doubles hold exactly, so a configuration is
/// never refused here (a refusal would look like an outage).
///
/// ```no_run
/// # async fn run() -> Result<(), limiter::StoreError> {
/// use limiter::{Limiter, RedisStore};
/// let limiter = Limiter::builder()
///     .store(RedisStore::connect("redis://127.0.0.1:6379").await?)
///     .build();
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisStore {
    inner: Arc<Inner>,
}

struct Inner {
    connection: Connection,
    prefix: String,
    caller_clock: bool,
    script: Script,
    refund: Script,
    batcher: Batcher,
    /// Where its calls run.
    runtime: Arc<Runtime>,
    /// How long Redis may take to answer a call (the limiter's `store_timeout`).
    timeout_ns: AtomicU64,
    /// How often a limiter over it reads the policies stored in Redis.
    overrides_every: Option<Duration>,
    /// The limits written into `PREFIX:limits`, by id (see `inspect.rs`).
    registered: arc_swap::ArcSwap<std::collections::HashMap<u64, String>>,
    /// The concurrency slots' script, and the leases held (see `slots.rs`).
    slots: Script,
    leases: slots::Leases,
    lease: Duration,
    /// The keys sent lately, and the estimate of the server's clock, for new clients' first
    /// checks without the script (see `fresh.rs`).
    recent: fresh::Recent,
    server_clock: fresh::ServerClock,
    /// Whether the server takes `SET ... PXAT` (Redis 6.2 and later), which new clients'
    /// first checks on its clock are written with (see `fresh.rs`).
    marks: std::sync::atomic::AtomicBool,
    /// Whether check calls go as the library's function (see `functions.rs`): until the
    /// server refuses functions.
    functions: std::sync::atomic::AtomicBool,
    /// Whether the library is being loaded, and when a load last ended loaded and failed
    /// (see `functions.rs`).
    loading: std::sync::atomic::AtomicBool,
    loads: parking_lot::Mutex<(Option<std::time::Instant>, Option<std::time::Instant>)>,
    /// Held by the batch being decided on one server (see `batch.rs`).
    turn: tokio::sync::Mutex<()>,
    /// On a cluster, which node serves which slot (see `node_batches.rs`).
    node_map: node_batches::NodeMap,
}

impl Inner {
    /// A store's insides over `connection`, with the default settings and nothing done yet.
    fn new(connection: Connection, runtime: Arc<Runtime>) -> Inner {
        Inner {
            connection,
            prefix: "limiter".to_string(),
            caller_clock: false,
            script: Script::check(),
            refund: Script::refund(),
            batcher: Batcher::default(),
            runtime,
            timeout_ns: AtomicU64::new(DEFAULT_TIMEOUT.as_nanos() as u64),
            overrides_every: Some(overrides::DEFAULT_EVERY),
            registered: Default::default(),
            slots: Script::slots(),
            leases: Default::default(),
            lease: slots::DEFAULT_LEASE,
            recent: Default::default(),
            server_clock: Default::default(),
            marks: std::sync::atomic::AtomicBool::new(true),
            functions: std::sync::atomic::AtomicBool::new(true),
            loading: Default::default(),
            loads: Default::default(),
            turn: Default::default(),
            node_map: Default::default(),
        }
    }
}

/// The store's timeout until a limiter gives it its own.
const DEFAULT_TIMEOUT: Duration = super::DEFAULT_TIMEOUT;

impl RedisStore {
    /// The first part of every key name (default `limiter`). Braces in it are written as
    /// parentheses: Redis Cluster hashes a name by its first `{…}`, and one in the prefix
    /// would put every client's keys in one hash slot, on one node.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use limiter::{Limit, Policy, RedisStore};
    /// let store = RedisStore::connect_lazily("redis://127.0.0.1:1").unwrap();
    /// let store = store.with_prefix("{app}:rl");
    /// let login = Limit::new("login", Policy::new(5, Duration::from_secs(60)).unwrap());
    /// assert!(store.key_name(&login, b"client").starts_with("(app):rl:{"));
    /// # }
    /// ```
    pub fn with_prefix(self, prefix: impl Into<String>) -> RedisStore {
        let prefix = keys::prefix_of(prefix.into());
        self.map(|inner| inner.prefix = prefix)
    }

    /// Uses the limiter's clock instead of the Redis server's: for tests that move a
    /// [`ManualClock`](crate::ManualClock). In production the server's clock is what keeps
    /// instances in agreement.
    pub fn use_caller_clock(self) -> RedisStore {
        self.map(|inner| inner.caller_clock = true)
    }

    fn map(self, change: impl FnOnce(&mut Inner)) -> RedisStore {
        // A store shared already keeps its state (batches, leases, what it sent): the
        // changed one shares its connection and settings, and starts its state anew.
        let mut inner = Arc::try_unwrap(self.inner).unwrap_or_else(|shared| Inner {
            prefix: shared.prefix.clone(),
            caller_clock: shared.caller_clock,
            timeout_ns: AtomicU64::new(shared.timeout_ns.load(Ordering::Relaxed)),
            overrides_every: shared.overrides_every,
            lease: shared.lease,
            // What the server was found to refuse, it still refuses.
            marks: std::sync::atomic::AtomicBool::new(shared.marks.load(Ordering::Relaxed)),
            functions: std::sync::atomic::AtomicBool::new(shared.functions.load(Ordering::Relaxed)),
            ..Inner::new(shared.connection.clone(), Arc::clone(&shared.runtime))
        });
        change(&mut inner);
        RedisStore {
            inner: Arc::new(inner),
        }
    }

    /// The SHA-1 and source of the script, for benchmarks that run it with
    /// `redis-benchmark`.
    #[doc(hidden)]
    pub fn script(&self) -> (&str, &str) {
        (&self.inner.script.sha, self.inner.script.source)
    }

    /// The Redis key holding `key`'s state under `limit`: `PREFIX:{CLIENT}LIMIT`, the key's
    /// bytes (their SHA-1's from 20 bytes) and the limit's id in unpadded base64url.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use std::time::Duration;
    /// use limiter::{Limit, Policy, RedisStore};
    /// let store = RedisStore::connect_lazily("redis://127.0.0.1:1").unwrap();
    /// let login = Limit::new("login", Policy::new(5, Duration::from_secs(60)).unwrap());
    /// assert_eq!(
    ///     store.key_name(&login, b"4\xcb\x00\x71\x07"),
    ///     "limiter:{NMsAcQc}v0qnzJRcWdg"
    /// );
    /// # }
    /// ```
    pub fn key_name(&self, limit: &Limit, key: &[u8]) -> String {
        keys::key_name(&self.inner.prefix, limit, key)
    }

    /// Decides `charges` at `now` (the caller's reading, used with the caller's clock), with
    /// the receipt of what was counted.
    async fn eval(&self, charges: &[Charge<'_>], now: Duration) -> Result<Checked, StoreError> {
        // The same (limit, key) twice is one budget asked once for the sum: the script reads
        // each key before it writes any.
        let mut unique: Vec<Charge<'_>> = Vec::with_capacity(charges.len());
        let mut slot_of = Vec::with_capacity(charges.len());
        for charge in charges {
            let same = unique
                .iter()
                .position(|u| u.limit == charge.limit && u.key == charge.key);
            slot_of.push(match same {
                Some(slot) => {
                    unique[slot] =
                        unique[slot].cost(unique[slot].units().saturating_add(charge.units()));
                    slot
                }
                None => {
                    unique.push(*charge);
                    unique.len() - 1
                }
            });
        }
        for charge in &unique {
            self.register(charge.limit);
        }
        let names: Vec<String> = unique
            .iter()
            .map(|c| self.key_name(c.limit, c.key))
            .collect();
        // On one server, one node: no grouping to make (two allocations a check).
        let nodes = match self.inner.connection.is_cluster() {
            true => self.by_node(&names),
            false => Vec::new(),
        };
        let answers = if nodes.len() <= 1 {
            self.check_on_one_node(&unique, names, now, Peek::No)
                .await?
        } else {
            // Boxed where it is awaited: it awaits refunds as well as checks, and inline it
            // would make every check's future (which the caller boxes) six times as large,
            // 3 KB copied and allocated from the allocator's slow path on every check.
            Box::pin(self.check_across_nodes(&unique, &names, &nodes, now)).await?
        };
        let decisions = slot_of.iter().map(|&u| answers[u].0).collect();
        Ok(Checked::new(
            decisions,
            Receipt::new(marks_of_duplicates(charges, &slot_of, &answers)),
        ))
    }

    /// The charges grouped by the node that holds them: one group on a single server; on a
    /// cluster, one per hash slot.
    fn by_node(&self, names: &[String]) -> Vec<Vec<usize>> {
        if !self.inner.connection.is_cluster() {
            return vec![(0..names.len()).collect()];
        }
        let mut groups: Vec<(u16, Vec<usize>)> = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let slot = hash_slot(name);
            match groups.iter_mut().find(|(s, _)| *s == slot) {
                Some((_, members)) => members.push(i),
                None => groups.push((slot, vec![i])),
            }
        }
        groups.into_iter().map(|(_, members)| members).collect()
    }

    /// One atomic check of keys that live on one node (`peek`: counting nothing): each
    /// key's decision and, where it counted, its mark.
    async fn check_on_one_node(
        &self,
        charges: &[Charge<'_>],
        names: Vec<String>,
        now: Duration,
        peek: Peek,
    ) -> Result<Vec<Answer>, StoreError> {
        // A cluster node takes a call's keys only from one slot's: these names share one
        // (see `by_node`).
        let slot = if self.inner.connection.is_cluster() {
            names.first().map_or(0, |name| hash_slot(name))
        } else {
            0
        };
        let penalties = charges.iter().any(|c| c.limit.policy().penalty().is_some());
        let with_blocks = match penalties {
            false => names,
            true => {
                let mut with_blocks = Vec::with_capacity(2 * names.len());
                for (charge, name) in charges.iter().zip(names) {
                    let block = charge
                        .limit
                        .policy()
                        .penalty()
                        .map(|_| block_key_name(&name));
                    with_blocks.push(name);
                    with_blocks.extend(block);
                }
                with_blocks
            }
        };
        let check = CheckArgs {
            slot,
            names: with_blocks,
            now: self
                .inner
                .caller_clock
                .then(|| u64::try_from(now.as_millis()).unwrap_or(u64::MAX)),
            peek,
            first: first_check_policy(charges),
            carried: false,
            limits: charges.iter().map(batch::limit_numbers).collect(),
        };
        let reply = self.batched(check).await?;
        // Admitted where the server refused to write it (check.lua): undecided, so the
        // fault policy answers it; the call's rejections stand.
        if reply
            .chunks_exact(3)
            .any(|answer| answer[0] == reply::UNWRITTEN)
        {
            return Err(StoreError::msg(
                "Redis refused to write (out of memory, short of replicas, or a failed save)",
            )
            .of_refusal());
        }
        let clock = reply[3 * charges.len()];
        Ok(charges
            .iter()
            .zip(reply.chunks_exact(3))
            .map(|(charge, answer)| reply::decode(charge.limit, answer, clock))
            .collect())
    }

    /// Runs `command` (an `EVALSHA` of `script`) on the store's runtime, with the script's
    /// source if the node does not know it.
    async fn run<T: redis::FromRedisValue + Send + 'static>(
        &self,
        script: fn(&Inner) -> &Script,
        command: redis::Cmd,
    ) -> Result<T, StoreError> {
        let store = self.clone();
        self.inner
            .runtime
            .run(async move {
                let inner = &store.inner;
                store
                    .within(inner.connection.eval(script(inner), &command))
                    .await
            })
            .await??
            .map_err(|e| failure("Redis check failed", e))
    }

    /// `call`'s output, unless Redis is shown down: no answer within the store's timeout,
    /// nor to a probe of the server the call goes to (see `deadline.rs`). A call that went
    /// unanswered while that server answered probes leaves a connection that is dead
    /// without knowing it: the next calls go over a new one.
    async fn within<T>(
        &self,
        call: impl std::future::Future<Output = T>,
    ) -> Result<T, deadline::Elapsed> {
        let server = self.inner.connection.server();
        let probe = server.as_ref().and_then(Server::probe);
        let result = deadline::within(self.timeout(), call, probe, &self.inner.prefix).await;
        if let (Err(elapsed), Some(server)) = (&result, server) {
            if elapsed.alive {
                server.renew_calls();
            }
        }
        result
    }

    /// How long Redis may take to answer a call.
    fn timeout(&self) -> Duration {
        Duration::from_nanos(self.inner.timeout_ns.load(Ordering::Relaxed))
    }
}

/// The policy of a check that a new client's first check may decide without the script
/// (see `fresh.rs`): one limit without a penalty, one unit.
fn first_check_policy(charges: &[Charge<'_>]) -> Option<crate::Policy> {
    match charges {
        [charge] if charge.units() == 1 => {
            let policy = charge.limit.policy();
            (policy.penalty().is_none() && fresh::has_first_state(policy)).then_some(*policy)
        }
        _ => None,
    }
}

/// The key of a client's penalty record under a limit (its block, and its past blocks while
/// an escalation counts them): its state's name and `:b`, in the same hash slot.
pub(super) fn block_key_name(state: &str) -> String {
    format!("{state}:b")
}

/// One key's answer: the decision, and its mark if the check counted it.
type Answer = (Decision, Option<Duration>);

/// The marks of `charges`, each of the unique charge `slot_of` says it was merged into.
/// Charges of one budget asked together are one check of their summed cost, counted in
/// their order: each one's tokens of a bucket come back before the next one's.
fn marks_of_duplicates(
    charges: &[Charge<'_>],
    slot_of: &[usize],
    answers: &[Answer],
) -> Vec<Option<Duration>> {
    (0..charges.len())
        .map(|i| {
            let mark = answers[slot_of[i]].1?;
            let policy = charges[i].limit.policy();
            if policy.algorithm() != crate::Algorithm::TokenBucket {
                return Some(mark);
            }
            let later: u64 = (i + 1..charges.len())
                .filter(|&j| slot_of[j] == slot_of[i])
                .map(|j| u64::from(charges[j].units()))
                .sum();
            let back = Duration::from_nanos(later.saturating_mul(policy.emission_interval_ns()));
            Some(mark.saturating_sub(back))
        })
        .collect()
}

impl Store for RedisStore {
    fn check<'a>(&'a self, limit: &'a Limit, key: &'a [u8], now: Duration) -> Check<'a> {
        Check::pending(async move {
            let checked = self.eval(&[Charge::new(limit, key)], now).await?;
            checked
                .first()
                .copied()
                .ok_or_else(|| StoreError::msg("the rate limit script answered nothing"))
        })
    }

    fn check_all<'a>(&'a self, charges: &'a [Charge<'a>], now: Duration) -> Check<'a, Checked> {
        Check::pending(self.eval(charges, now))
    }

    fn refund<'a>(
        &'a self,
        charges: &'a [Charge<'a>],
        receipt: &'a Receipt,
        now: Duration,
    ) -> Check<'a, ()> {
        Check::pending(self.take_back(charges, receipt, now))
    }

    fn accept_timeout(&self, timeout: Duration) -> bool {
        let ns = u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX);
        self.inner.timeout_ns.store(ns, Ordering::Relaxed);
        true
    }

    fn name(&self) -> &'static str {
        "redis"
    }

    /// On a cluster, the key's hash slot: a node that is down fails its own slots only.
    fn part(&self, limit: &Limit, key: &[u8]) -> u16 {
        if self.inner.connection.is_cluster() {
            hash_slot(&self.key_name(limit, key))
        } else {
            0
        }
    }

    fn keeps_slots(&self) -> bool {
        true
    }

    fn acquire<'a>(
        &'a self,
        limit: &'a crate::Concurrency,
        key: &'a [u8],
    ) -> Check<'a, crate::Acquired> {
        self.register_concurrency(limit);
        Check::pending(self.take_slot(limit, key))
    }

    fn release(&self, slot: &crate::Slot) {
        self.give_slot(slot);
    }

    fn slot_part(&self, limit: &crate::Concurrency, key: &[u8]) -> u16 {
        self.slots_slot(limit, key)
    }

    fn reset<'a>(&'a self, limit: &'a Limit, key: &'a [u8]) -> Check<'a, ()> {
        Check::pending(async move {
            let mut command = redis::cmd("DEL");
            let name = self.key_name(limit, key);
            command.arg(block_key_name(&name)).arg(name);
            self.command::<i64>(command)
                .await?
                .map(drop)
                .map_err(|e| failure("Redis reset failed", e))
        })
    }
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.inner.prefix)
            .field("caller_clock", &self.inner.caller_clock)
            .finish_non_exhaustive()
    }
}
