//! The Redis store: one budget shared by every instance of a service.

mod batch;
mod connection;
mod scripts;

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::ConnectionManager;
use redis::cluster_async::ClusterConnection;
use redis::RedisError;

use super::{Charge, Check, Limit, Store, StoreError};
use crate::Decision;
use batch::{Batcher, CheckArgs};
use connection::Connection;
use scripts::Script;

/// Counts in Redis, so that every instance of a service shares one budget per client.
///
/// - **Atomic, one round trip**: each request is decided by one Lua script, whatever the
///   number of limits it is checked against; stacked limits count a request all or
///   nothing. A server that lost the script (`SCRIPT FLUSH`, a restart, a failover) gets
///   its source once.
/// - **Batched under load**: the checks that arrive while earlier ones are in Redis go out
///   together, one `EVALSHA` for up to 128, decided in order exactly as if sent one by one;
///   a key checked several times in one call is read and written once. An idle store sends
///   each check at once. On a cluster, batches are per hash slot.
/// - **One clock**: scripts read the Redis server's `TIME`, so instances with skewed clocks
///   agree ([`use_caller_clock`](RedisStore::use_caller_clock) passes the limiter's clock
///   instead, for tests with a [`ManualClock`](crate::ManualClock)).
/// - **Same answers as the in-memory store**: the scripts follow the same definitions; the
///   tests replay the reference schedules through both.
/// - **Tidy**: every key written expires, at most two windows after its last use. A call
///   reads each key's expiry once and extends it only when it falls short of what the
///   state needs, so most writes set none, and a key another writer left too short an
///   expiry is mended by the next write. Key names are `PREFIX:SCOPE:LIMIT:{CLIENT}`, bounded in length
///   whatever a client sends: `SCOPE` is the scope's printable ASCII cut to 40 characters,
///   `LIMIT` the limit's stable id in 16 hex digits ([`Limit`]'s documentation gives its
///   encoding), `CLIENT` the key's bytes in hex, or their SHA-1 when 20 bytes or longer. The
///   braces are a Redis Cluster hash tag: a client's states live on one node
///   ([`connect_cluster`](RedisStore::connect_cluster)).
/// - **Faults are the limiter's policy**: a check that fails or exceeds the limiter's timeout
///   is handled as [`LimiterBuilder::on_store_error`](crate::LimiterBuilder::on_store_error)
///   says; the connection reconnects by itself when Redis comes back.
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
}

impl RedisStore {
    /// Connects to `url` (`redis://host:port/db`), failing if Redis cannot be reached now.
    pub async fn connect(url: &str) -> Result<RedisStore, StoreError> {
        let client = redis::Client::open(url).map_err(|e| error("invalid Redis URL", e))?;
        RedisStore::from_client(client).await
    }

    /// A store for `url` that connects on first use: the service starts even while Redis is
    /// away, and the limiter's fault policy covers the meantime. Call it inside the Tokio
    /// runtime (under `#[actix_web::main]`, say): the connection's task is spawned on it.
    pub fn connect_lazily(url: &str) -> Result<RedisStore, StoreError> {
        let client = redis::Client::open(url).map_err(|e| error("invalid Redis URL", e))?;
        let manager = ConnectionManager::new_lazy_with_config(client, connection::single_config())
            .map_err(|e| error("invalid Redis configuration", e))?;
        Ok(RedisStore::from_manager(manager))
    }

    /// A store over a connection manager you configured yourself.
    pub fn from_manager(connection: ConnectionManager) -> RedisStore {
        RedisStore::over(Connection::Single(connection))
    }

    /// Connects to the Redis Cluster that `nodes` belong to (`redis://host:port` each; one
    /// is enough, more keep the store starting while some are down), failing if none can
    /// be reached now.
    ///
    /// Each check goes to the node that serves its keys' slot; `MOVED` and `ASK` are
    /// followed and the slot map refreshed, and a replica promoted after a failover is
    /// given the scripts on first use. A node that is down fails the checks of its slots
    /// only: those get the limiter's [fault policy](crate::LimiterBuilder::on_store_error),
    /// the other slots keep counting exactly (with `cluster-require-full-coverage no` on
    /// the servers; Redis's default stops the whole cluster once it marks a node failed).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), limiter::StoreError> {
    /// use limiter::{Limiter, RedisStore};
    /// let store = RedisStore::connect_cluster(&[
    ///     "redis://10.0.0.1:6379",
    ///     "redis://10.0.0.2:6379",
    ///     "redis://10.0.0.3:6379",
    /// ])
    /// .await?;
    /// let limiter = Limiter::builder().store(store).build();
    /// # Ok(()) }
    /// ```
    pub async fn connect_cluster(nodes: &[&str]) -> Result<RedisStore, StoreError> {
        let client = connection::cluster_builder(nodes)
            .build()
            .map_err(|e| error("invalid Redis Cluster URLs", e))?;
        let connection = client
            .get_async_connection()
            .await
            .map_err(|e| error("cannot reach the Redis Cluster", e))?;
        Ok(RedisStore::from_cluster(connection))
    }

    /// A cluster store that connects on first use, as
    /// [`connect_lazily`](RedisStore::connect_lazily) does for one server. Call it inside
    /// the Tokio runtime.
    pub fn connect_cluster_lazily(nodes: &[&str]) -> Result<RedisStore, StoreError> {
        let client = connection::cluster_builder(nodes)
            .build()
            .map_err(|e| error("invalid Redis Cluster URLs", e))?;
        let connection =
            client.get_pending_async_connection_with_config(redis::cluster::ClusterConfig::new());
        Ok(RedisStore::from_cluster(connection))
    }

    /// A store over a cluster connection you configured yourself (TLS, credentials,
    /// timeouts, replicas).
    pub fn from_cluster(connection: ClusterConnection) -> RedisStore {
        RedisStore::over(Connection::Cluster(connection))
    }

    fn over(connection: Connection) -> RedisStore {
        RedisStore {
            inner: Arc::new(Inner {
                connection,
                prefix: "limiter".to_string(),
                caller_clock: false,
                script: Script::check(),
                refund: Script::refund(),
                batcher: Batcher::default(),
            }),
        }
    }

    /// A store over a client you built (TLS, credentials, ...).
    pub async fn from_client(client: redis::Client) -> Result<RedisStore, StoreError> {
        let manager = ConnectionManager::new_with_config(client, connection::single_config())
            .await
            .map_err(|e| error("cannot reach Redis", e))?;
        Ok(RedisStore::from_manager(manager))
    }

    /// The first part of every key name (default `limiter`).
    pub fn with_prefix(self, prefix: impl Into<String>) -> RedisStore {
        self.map(|inner| inner.prefix = prefix.into())
    }

    /// Uses the limiter's clock instead of the Redis server's: for tests that move a
    /// [`ManualClock`](crate::ManualClock). In production the server's clock is what keeps
    /// instances in agreement.
    pub fn use_caller_clock(self) -> RedisStore {
        self.map(|inner| inner.caller_clock = true)
    }

    fn map(self, change: impl FnOnce(&mut Inner)) -> RedisStore {
        let mut inner = Arc::try_unwrap(self.inner).unwrap_or_else(|shared| Inner {
            connection: shared.connection.clone(),
            prefix: shared.prefix.clone(),
            caller_clock: shared.caller_clock,
            script: Script::check(),
            refund: Script::refund(),
            batcher: Batcher::default(),
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

    /// The Redis key holding `key`'s state under `limit`: `PREFIX:SCOPE:LIMIT:{CLIENT}`.
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
    ///     "limiter:login:bf4aa7cc945c59d8:{34cb007107}"
    /// );
    /// # }
    /// ```
    pub fn key_name(&self, limit: &Limit, key: &[u8]) -> String {
        let scope: String = limit
            .scope()
            .chars()
            .filter(|c| c.is_ascii_graphic() && !matches!(c, '{' | '}'))
            .take(40)
            .collect();
        let mut name = format!("{}:{scope}:{:016x}:{{", self.inner.prefix, limit.id());
        if key.len() < 20 {
            for byte in key {
                let _ = write!(name, "{byte:02x}");
            }
        } else {
            let _ = write!(name, "{}", sha1_smol::Sha1::from(key).digest());
        }
        name.push('}');
        name
    }

    async fn eval(
        &self,
        charges: &[Charge<'_>],
        now: Duration,
    ) -> Result<Vec<Decision>, StoreError> {
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
                    unique[slot].cost = unique[slot].cost.saturating_add(charge.cost.max(1));
                    slot
                }
                None => {
                    unique.push(charge.cost(charge.cost));
                    unique.len() - 1
                }
            });
        }
        let names: Vec<String> = unique
            .iter()
            .map(|c| self.key_name(c.limit, c.key))
            .collect();
        let nodes = self.by_node(&names);
        let decisions = if let [_] = nodes.as_slice() {
            self.check_on_one_node(&unique, &names, now, false).await?.0
        } else {
            self.check_across_nodes(&unique, &names, &nodes, now)
                .await?
        };
        Ok(slot_of.into_iter().map(|u| decisions[u]).collect())
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

    /// One atomic check of keys that live on one node (`peek`: counting nothing), with the
    /// clock reading it was checked at.
    async fn check_on_one_node(
        &self,
        charges: &[Charge<'_>],
        names: &[String],
        now: Duration,
        peek: bool,
    ) -> Result<(Vec<Decision>, Duration), StoreError> {
        let check = CheckArgs {
            names: names.to_vec(),
            now: self
                .inner
                .caller_clock
                .then(|| u64::try_from(now.as_millis()).unwrap_or(u64::MAX)),
            peek,
            limits: charges
                .iter()
                .map(|charge| {
                    let policy = charge.limit.policy();
                    [
                        u64::from(scripts::code(policy.algorithm())),
                        policy.window_ms(),
                        u64::from(policy.max().get()),
                        policy.emission_interval_ns(),
                        u64::from(policy.burst().get()) * policy.emission_interval_ns(),
                        u64::from(charge.cost),
                    ]
                })
                .collect(),
        };
        // A cluster node takes a call's keys only from one slot: batches are per slot (these
        // names share one, see `by_node`).
        let slot = if self.inner.connection.is_cluster() {
            names.first().map_or(0, |name| hash_slot(name))
        } else {
            0
        };
        let reply = self.batched(slot, check).await?;
        let decisions = charges
            .iter()
            .zip(reply.chunks_exact(3))
            .map(|(charge, answer)| {
                let max = charge.limit.policy().max().get();
                let wait = Duration::from_nanos(u64::try_from(answer[2]).unwrap_or(0));
                if answer[0] == 1 {
                    Decision::allow(max, u32::try_from(answer[1]).unwrap_or(0), wait)
                } else {
                    Decision::reject_leaving(max, u32::try_from(answer[1]).unwrap_or(0), wait)
                }
            })
            .collect();
        let clock = Duration::from_millis(u64::try_from(reply[3 * charges.len()]).unwrap_or(0));
        Ok((decisions, clock))
    }

    /// A check whose keys live on several cluster nodes. Each node's part is atomic; across
    /// nodes, all or nothing is kept by giving back: the parts counted before one that
    /// rejects (or fails) are refunded (at the very reading they were counted at) and then
    /// say where they stand, the parts after it only read. Between the count and the refund another
    /// request may see those units taken — erring on the side of the limit, never past it.
    async fn check_across_nodes(
        &self,
        unique: &[Charge<'_>],
        names: &[String],
        nodes: &[Vec<usize>],
        now: Duration,
    ) -> Result<Vec<Decision>, StoreError> {
        let mut decisions = vec![Decision::reject(0, Duration::ZERO); unique.len()];
        let mut counted: Vec<Counted<'_, '_>> = Vec::new();
        let mut rejected = false;
        for members in nodes {
            let charges: Vec<Charge<'_>> = members.iter().map(|&m| unique[m]).collect();
            let part: Vec<String> = members.iter().map(|&m| names[m].clone()).collect();
            let (answers, clock) =
                match self.check_on_one_node(&charges, &part, now, rejected).await {
                    Ok(answered) => answered,
                    Err(error) => {
                        // A node that fails fails the request (the fault policy answers it):
                        // the parts counted before it give their units back, if their nodes
                        // answer.
                        for part in &counted {
                            let placed = self.checked_at(part.clock);
                            let _ = self.give_back(&part.charges, &part.names, placed).await;
                        }
                        return Err(error);
                    }
                };
            if !rejected {
                if answers.iter().all(Decision::allowed) {
                    counted.push(Counted {
                        members,
                        charges,
                        names: part,
                        clock,
                    });
                } else {
                    rejected = true;
                }
            }
            for (&m, answer) in members.iter().zip(answers) {
                decisions[m] = answer;
            }
        }
        if rejected {
            for part in &counted {
                self.give_back(&part.charges, &part.names, self.checked_at(part.clock))
                    .await?;
                let (answers, _) = self
                    .check_on_one_node(&part.charges, &part.names, now, true)
                    .await?;
                for (&m, answer) in part.members.iter().zip(answers) {
                    decisions[m] = answer;
                }
            }
        }
        Ok(decisions)
    }

    /// One script call deciding `checks` in order; each one's answer (three numbers per
    /// key, then the clock reading).
    async fn call(&self, checks: &[CheckArgs]) -> Result<Vec<Vec<i64>>, StoreError> {
        let keys: usize = checks.iter().map(|c| c.names.len()).sum();
        let mut command = redis::cmd("EVALSHA");
        command.arg(&self.inner.script.sha).arg(keys);
        for check in checks {
            command.arg(&check.names);
        }
        let min_ttl = if self.inner.caller_clock {
            CALLER_CLOCK_MIN_TTL_MS
        } else {
            0
        };
        // Each distinct policy once, then one short argument per check.
        let mut policies: Vec<&[u64]> = Vec::new();
        let mut numbered = Vec::with_capacity(checks.len());
        for check in checks {
            let numbers: Vec<usize> = check
                .limits
                .iter()
                .map(|limit| {
                    let policy = &limit[..5];
                    match policies.iter().position(|p| *p == policy) {
                        Some(at) => at + 1,
                        None => {
                            policies.push(policy);
                            policies.len()
                        }
                    }
                })
                .collect();
            numbered.push(numbers);
        }
        command.arg(min_ttl).arg(policies.len());
        for policy in &policies {
            command.arg(*policy);
        }
        for (check, numbers) in checks.iter().zip(&numbered) {
            if let ([number], [limit], None, false) =
                (&numbers[..], &check.limits[..], check.now, check.peek)
            {
                if limit[5] == 1 {
                    command.arg(*number);
                    continue;
                }
            }
            let mut arg = String::with_capacity(32);
            if let Some(now) = check.now {
                let _ = write!(arg, "{now}");
            }
            let _ = write!(arg, ";{}", u8::from(check.peek));
            for (number, limit) in numbers.iter().zip(&check.limits) {
                let _ = write!(arg, ";{number}:{}", limit[5]);
            }
            command.arg(arg);
        }
        let reply: Vec<i64> = self.run(&self.inner.script, &command).await?;
        if reply.len() != 3 * keys + 1 {
            return Err(StoreError::msg(format!(
                "the rate limit script answered {} numbers for {} limits",
                reply.len(),
                keys
            )));
        }
        let (answers, server_clock) = reply.split_at(3 * keys);
        let mut rest = answers;
        Ok(checks
            .iter()
            .map(|check| {
                let (answer, after) = rest.split_at(3 * check.names.len());
                rest = after;
                // Each answer ends with the reading it was decided at.
                let clock = check.now.map_or(server_clock[0], |now| {
                    i64::try_from(now).unwrap_or(i64::MAX)
                });
                let mut answer = answer.to_vec();
                answer.push(clock);
                answer
            })
            .collect())
    }

    async fn take_back(
        &self,
        charges: &[Charge<'_>],
        at: Duration,
        now: Duration,
    ) -> Result<(), StoreError> {
        let names: Vec<String> = charges
            .iter()
            .map(|c| self.key_name(c.limit, c.key))
            .collect();
        // With the server's clock, the check's reading is the server's; the time since it is
        // the caller's to measure, with a margin for the two trips' different latencies.
        let elapsed = now.saturating_sub(at) + REFUND_MARGIN;
        for members in self.by_node(&names) {
            let part: Vec<Charge<'_>> = members.iter().map(|&m| charges[m]).collect();
            let part_names: Vec<String> = members.iter().map(|&m| names[m].clone()).collect();
            let placed = if self.inner.caller_clock {
                Placed::Caller { at, now }
            } else {
                Placed::Ago(elapsed)
            };
            self.give_back(&part, &part_names, placed).await?;
        }
        Ok(())
    }

    /// Where a check the script answered with `clock` (its reading) was placed.
    fn checked_at(&self, clock: Duration) -> Placed {
        if self.inner.caller_clock {
            Placed::Caller {
                at: clock,
                now: clock,
            }
        } else {
            Placed::Server(clock)
        }
    }

    /// Refunds `charges` (on one node), checked where `placed` says.
    async fn give_back(
        &self,
        charges: &[Charge<'_>],
        names: &[String],
        placed: Placed,
    ) -> Result<(), StoreError> {
        let mut command = redis::cmd("EVALSHA");
        command.arg(&self.inner.refund.sha).arg(charges.len());
        command.arg(names);
        // `at_ms, now_ms or "", elapsed_ms or ""`: see the refund script.
        match placed {
            Placed::Caller { at, now } => command
                .arg(at.as_millis().to_string())
                .arg(now.as_millis().to_string())
                .arg(0),
            Placed::Server(at) => command.arg(at.as_millis().to_string()).arg("").arg(""),
            Placed::Ago(elapsed) => command.arg(0).arg("").arg(elapsed.as_millis().to_string()),
        };
        self.refund_args(&mut command, charges);
        self.run::<i64>(&self.inner.refund, &command)
            .await
            .map(drop)
    }

    fn refund_args(&self, command: &mut redis::Cmd, charges: &[Charge<'_>]) {
        for charge in charges {
            let policy = charge.limit.policy();
            command
                .arg(scripts::code(policy.algorithm()))
                .arg(policy.window_ms())
                .arg(policy.max().get())
                .arg(policy.emission_interval_ns())
                .arg(charge.cost.max(1));
        }
    }

    /// Runs `command` (an `EVALSHA` of `script`), with the script's source if the node
    /// does not know it.
    async fn run<T: redis::FromRedisValue>(
        &self,
        script: &Script,
        command: &redis::Cmd,
    ) -> Result<T, StoreError> {
        self.inner
            .connection
            .eval(script, command)
            .await
            .map_err(|e| error("Redis check failed", e))
    }
}

/// A part of a cross-node check that its node counted: which of the check's charges, their
/// key names, and the reading they were counted at.
struct Counted<'m, 'c> {
    members: &'m [usize],
    charges: Vec<Charge<'c>>,
    names: Vec<String>,
    clock: Duration,
}

/// Where a refunded check was placed, in the refund script's terms.
enum Placed {
    /// At `at` on the caller's clock, refunded at `now` on it.
    Caller { at: Duration, now: Duration },
    /// At `at`, the server's own reading (a check's answer carries it).
    Server(Duration),
    /// This long ago by the server's clock, as the caller measures it (with a margin).
    Ago(Duration),
}

/// How much earlier than the caller measures a refund places its check, with the server's
/// clock: a refund placed too early takes back older units or none (erring on the side of
/// the limit), one placed too late could take back newer units than its own.
const REFUND_MARGIN: Duration = Duration::from_millis(250);

/// With the caller's clock, keys live at least this long in Redis's own time (a minute): the
/// caller's time need not run at Redis's pace, and expiry must not cut a window short.
const CALLER_CLOCK_MIN_TTL_MS: u64 = 60_000;

/// The Redis Cluster hash slot of a key name: CRC16 of its hash tag, modulo 16,384.
fn hash_slot(name: &str) -> u16 {
    let tag = name
        .split_once('{')
        .and_then(|(_, rest)| rest.split_once('}'))
        .map(|(tag, _)| tag)
        .filter(|tag| !tag.is_empty())
        .unwrap_or(name);
    crc16::State::<crc16::XMODEM>::calculate(tag.as_bytes()) % 16_384
}

fn error(what: &str, source: RedisError) -> StoreError {
    StoreError::new(what, source)
}

impl Store for RedisStore {
    fn check<'a>(&'a self, limit: &'a Limit, key: &'a [u8], now: Duration) -> Check<'a> {
        Check::pending(async move {
            let decisions = self.eval(&[Charge::new(limit, key)], now).await?;
            decisions
                .into_iter()
                .next()
                .ok_or_else(|| StoreError::msg("the rate limit script answered nothing"))
        })
    }

    fn check_all<'a>(
        &'a self,
        charges: &'a [Charge<'a>],
        now: Duration,
    ) -> Check<'a, Vec<Decision>> {
        Check::pending(self.eval(charges, now))
    }

    fn refund<'a>(
        &'a self,
        charges: &'a [Charge<'a>],
        at: Duration,
        now: Duration,
    ) -> Check<'a, ()> {
        Check::pending(self.take_back(charges, at, now))
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

    fn forget<'a>(&'a self, limit: &'a Limit, key: &'a [u8]) -> Check<'a, ()> {
        Check::pending(async move {
            let mut command = redis::cmd("DEL");
            command.arg(self.key_name(limit, key));
            self.inner
                .connection
                .query::<i64>(&command)
                .await
                .map(drop)
                .map_err(|e| error("Redis reset failed", e))
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
