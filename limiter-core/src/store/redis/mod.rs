//! The Redis store: one budget shared by every instance of a service.

mod batch;
mod call;
mod connection;
mod cpu_wait;
mod deadline;
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

use redis::aio::ConnectionManager;
use redis::cluster_async::ClusterConnection;
use redis::RedisError;

use super::{Charge, Check, Checked, Limit, Receipt, Store, StoreError};
use crate::Decision;
use batch::{Batcher, CheckArgs, Peek};
use connection::{Connection, Server};
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
///   a key checked several times in one call is read and written once. An idle store sends
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
    /// Connects to `url` (`redis://host:port/db`), failing if Redis cannot be reached now.
    pub async fn connect(url: &str) -> Result<RedisStore, StoreError> {
        let client = connection::client(url).map_err(|e| error("invalid Redis URL", e))?;
        RedisStore::from_client(client).await
    }

    /// A store for `url` that connects on first use: the service starts even while Redis is
    /// away, and the limiter's fault policy covers the meantime. It may be called anywhere
    /// (the connection lives on the store's own thread).
    pub fn connect_lazily(url: &str) -> Result<RedisStore, StoreError> {
        let client = connection::client(url).map_err(|e| error("invalid Redis URL", e))?;
        let runtime = Runtime::start()?;
        let server = runtime
            .enter(|| {
                let calls = ConnectionManager::new_lazy_with_config(
                    client.clone(),
                    connection::single_config(),
                )?;
                Ok(Server::new(calls, Some(client)))
            })
            .map_err(|e| error("invalid Redis configuration", e))?;
        Ok(RedisStore::over(Connection::Single(server), runtime))
    }

    /// A store over a connection manager you configured yourself. Its I/O runs where you
    /// made it; the store's batches run on a thread of the store's own. Make its client
    /// with `TCP_NODELAY` (`ConnectionInfo::set_tcp_settings`), as the store's own
    /// constructors do: with Nagle's algorithm, redis's default, a burst's calls wait tens
    /// of milliseconds for Redis's delayed acknowledgements. Without the client, the store
    /// has no second connection to probe Redis with: a call with no answer within the
    /// timeout fails then, where [`from_client`](Self::from_client) first asks whether Redis
    /// is alive (see [`LimiterBuilder::store_timeout`](crate::LimiterBuilder::store_timeout)).
    ///
    /// # Panics
    ///
    /// If the operating system cannot start the store's thread, as `std::thread::spawn`.
    pub fn from_manager(connection: ConnectionManager) -> RedisStore {
        let server = Server::new(connection, None);
        RedisStore::over(Connection::Single(server), Runtime::start_or_panic())
    }

    /// Connects to the master of `service` as the Redis Sentinels at `sentinels` name it
    /// (`redis://host:26379` each; one is enough, more keep the store starting while some
    /// are down), failing if no sentinel answers or the master cannot be reached now.
    ///
    /// When the master stops taking writes (a failover made it a replica) or cannot be
    /// reached, the sentinels are asked again (at most every 100 ms) and the store moves to
    /// the master they name; the checks in between get the limiter's
    /// [fault policy](crate::LimiterBuilder::on_store_error). What a failover loses is
    /// what Redis's replication had not copied yet, and what the old master took before it
    /// was told it is a replica: counts of those moments (Redis Sentinel's own model).
    /// The master is reached without a password or TLS, database 0; for masters that need
    /// them, build the sentinels' client yourself and use
    /// [`from_sentinel`](Self::from_sentinel).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), limiter::StoreError> {
    /// use limiter::{Limiter, RedisStore};
    /// let store = RedisStore::connect_sentinel(
    ///     &["redis://10.0.0.1:26379", "redis://10.0.0.2:26379"],
    ///     "limits",
    /// )
    /// .await?;
    /// let limiter = Limiter::builder().store(store).build();
    /// # Ok(()) }
    /// ```
    pub async fn connect_sentinel(
        sentinels: &[&str],
        service: &str,
    ) -> Result<RedisStore, StoreError> {
        use redis::sentinel::{SentinelClient, SentinelServerType};
        // A `String` without redis's `tls-rustls` feature, any `AsRef<str>` with it.
        #[allow(clippy::unnecessary_to_owned)]
        let client = SentinelClient::build(
            sentinels.to_vec(),
            service.to_string(),
            None,
            SentinelServerType::Master,
        )
        .map_err(|e| error("invalid Redis Sentinel URLs", e))?;
        RedisStore::from_sentinel(client).await
    }

    /// As [`connect_sentinel`](Self::connect_sentinel), over a client of the sentinels you
    /// built, with what its masters need: a password and a user, a database, TLS (redis's
    /// `SentinelNodeConnectionInfo`). Build it with `SentinelServerType::Master`: the store
    /// writes. A password of the sentinels themselves goes in their URLs
    /// (`redis://:password@host:26379`).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use limiter::RedisStore;
    /// use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
    /// use redis::RedisConnectionInfo;
    ///
    /// let master = RedisConnectionInfo::default().set_password("the master's password");
    /// let sentinels = SentinelClient::build(
    ///     vec!["redis://10.0.0.1:26379", "redis://10.0.0.2:26379"],
    ///     "limits".to_string(),
    ///     Some(SentinelNodeConnectionInfo::default().set_redis_connection_info(master)),
    ///     SentinelServerType::Master,
    /// )?;
    /// let store = RedisStore::from_sentinel(sentinels).await?;
    /// # Ok(()) }
    /// ```
    pub async fn from_sentinel(
        sentinels: redis::sentinel::SentinelClient,
    ) -> Result<RedisStore, StoreError> {
        let runtime = Runtime::start()?;
        let followed = runtime
            .run(connection::Followed::start(sentinels))
            .await?
            .map_err(|e| failure("cannot reach the master through the sentinels", e))?;
        let store = RedisStore::over(Connection::Sentinel(Arc::new(followed)), runtime);
        store.load_check_script().await?;
        Ok(store)
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
    /// Checks are batched per node: the store reads `CLUSTER SLOTS` here (and again when a
    /// call finds a slot moved), and the checks of every slot one node serves go out in one
    /// script call.
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
        let runtime = Runtime::start()?;
        let connection = runtime
            .run(async move { client.get_async_connection().await })
            .await?
            .map_err(|e| failure("cannot reach the Redis Cluster", e))?;
        let store = RedisStore::over(Connection::Cluster(connection), runtime);
        store.read_node_map_now().await;
        Ok(store)
    }

    /// A cluster store that connects on first use, as
    /// [`connect_lazily`](RedisStore::connect_lazily) does for one server.
    pub fn connect_cluster_lazily(nodes: &[&str]) -> Result<RedisStore, StoreError> {
        let client = connection::cluster_builder(nodes)
            .build()
            .map_err(|e| error("invalid Redis Cluster URLs", e))?;
        let runtime = Runtime::start()?;
        // The builder's timeouts, which a fresh `ClusterConfig` would reset.
        let connection = runtime.enter(|| {
            client.get_pending_async_connection_with_config(connection::cluster_config())
        });
        Ok(RedisStore::over(Connection::Cluster(connection), runtime))
    }

    /// A store over a cluster connection you configured yourself (TLS, credentials,
    /// timeouts, replicas). Build it with `TCP_NODELAY`
    /// (`ClusterClientBuilder::tcp_settings`), as [`connect_cluster`](Self::connect_cluster)
    /// does (see [`from_manager`](Self::from_manager)).
    ///
    /// # Panics
    ///
    /// If the operating system cannot start the store's thread, as `std::thread::spawn`.
    pub fn from_cluster(connection: ClusterConnection) -> RedisStore {
        RedisStore::over(Connection::Cluster(connection), Runtime::start_or_panic())
    }

    fn over(connection: Connection, runtime: Arc<Runtime>) -> RedisStore {
        RedisStore {
            inner: Arc::new(Inner::new(connection, runtime)),
        }
    }

    /// A store over a client you built (TLS, credentials, ...). Its connections send each
    /// call at once (`TCP_NODELAY`, whatever the client's TCP settings say): with Nagle's
    /// algorithm a burst's calls wait for Redis's delayed acknowledgements, tens of
    /// milliseconds, and fail the store's timeout on a healthy Redis.
    pub async fn from_client(client: redis::Client) -> Result<RedisStore, StoreError> {
        let client = connection::client(client.get_connection_info().clone())
            .map_err(|e| error("invalid Redis configuration", e))?;
        let runtime = Runtime::start()?;
        let server = runtime
            .run(async move {
                let calls =
                    ConnectionManager::new_with_config(client.clone(), connection::single_config())
                        .await?;
                Ok(Server::new(calls, Some(client)))
            })
            .await?
            .map_err(|e| failure("cannot reach Redis", e))?;
        let store = RedisStore::over(Connection::Single(server), runtime);
        store.load_check_script().await?;
        Ok(store)
    }

    /// Loads the check's library (`FUNCTION LOAD`; a server that refuses it gets the script
    /// from then on) and the check script now (`SCRIPT LOAD`), so that a server that refuses scripts
    /// — an ACL without `@scripting`, a managed plan that forbids `EVAL`, a server built
    /// without Lua — is an error here, naming the cause, and not an outage of every check
    /// answered by the fault policy; and so is a server that wants a login it did not get.
    /// Any other failure is left to the checks (the script is sent again whenever the
    /// server does not know it).
    async fn load_check_script(&self) -> Result<(), StoreError> {
        // A `PING` first: a server that wants a login answers it `NOAUTH`, where it may
        // close the connection on the script's length before answering.
        if let Ok(Err(e)) = self.command::<String>(redis::cmd("PING")).await {
            if refuses_login(&e) {
                return Err(login_wanted(&e));
            }
        }
        // The library where the server takes one; else the script, whose refusal is the
        // error that names the cause (a server that runs scripts and refuses functions
        // gets scripts).
        if let Ok(Err(e)) = self.command::<redis::Value>(functions::load()).await {
            self.load_failed(&e);
        }
        let mut load = redis::cmd("SCRIPT");
        load.arg("LOAD").arg(self.inner.script.source);
        match self.command::<String>(load).await {
            Ok(Err(e)) => refusal(&e).map_or(Ok(()), Err),
            _ => Ok(()),
        }
    }

    /// Runs one command on the store's thread within the store's timeout: Redis's own
    /// answer, or the store's error (its thread gone, no answer in time).
    async fn command<T: redis::FromRedisValue + Send + 'static>(
        &self,
        command: redis::Cmd,
    ) -> Result<Result<T, RedisError>, StoreError> {
        let store = self.clone();
        self.inner
            .runtime
            .run(async move {
                store
                    .within(store.inner.connection.query::<T>(&command))
                    .await
            })
            .await?
            .map_err(StoreError::from)
    }

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
        let nodes = self.by_node(&names);
        let answers = if let [_] = nodes.as_slice() {
            self.check_on_one_node(&unique, &names, now, Peek::No)
                .await?
        } else {
            self.check_across_nodes(&unique, &names, &nodes, now)
                .await?
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
        names: &[String],
        now: Duration,
        peek: Peek,
    ) -> Result<Vec<Answer>, StoreError> {
        let mut with_blocks = Vec::with_capacity(names.len());
        for (charge, name) in charges.iter().zip(names) {
            with_blocks.push(name.clone());
            if charge.limit.policy().penalty().is_some() {
                with_blocks.push(block_key_name(name));
            }
        }
        // A cluster node takes a call's keys only from one slot's: these names share one
        // (see `by_node`).
        let slot = if self.inner.connection.is_cluster() {
            names.first().map_or(0, |name| hash_slot(name))
        } else {
            0
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
            limits: charges
                .iter()
                .map(|charge| {
                    let policy = charge.limit.policy();
                    let [block, after, within, long] =
                        policy.penalty().map_or([0; 4], |p| p.to_numbers());
                    let (period, offset) = calendar_numbers(policy);
                    [
                        u64::from(scripts::code(policy)),
                        policy.window_ms(),
                        u64::from(policy.max().get()),
                        policy.emission_interval_ns(),
                        u64::from(policy.burst().get()) * policy.emission_interval_ns(),
                        block,
                        after,
                        within,
                        long,
                        period,
                        offset,
                        policy.delay().map_or(0, |d| d.as_nanos() as u64),
                        u64::from(charge.units()),
                    ]
                })
                .collect(),
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

/// A calendar quota's period (1 day, 2 week, 3 month; 0: not a quota) and its offset from
/// UTC in minutes plus 840 (never negative), as the check script's header takes them.
fn calendar_numbers(policy: &crate::Policy) -> (u64, u64) {
    use crate::algorithm::calendar::Period;
    match policy.calendar() {
        Some(calendar) => {
            let period = match calendar.period() {
                Period::Day => 1,
                Period::Week => 2,
                Period::Month => 3,
            };
            let offset = i64::from(calendar.offset_minutes()) + 840;
            (period, offset.max(0) as u64)
        }
        None => (0, 0),
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

/// Whether Redis answered `e` because the connection has not logged in (`NOAUTH`; for the
/// script, whose length a server refuses from a client that has not, `unauthenticated bulk
/// length`) or was refused its login (`WRONGPASS`, also a disabled ACL user): every check
/// would fail the same way; this is configuration. Only Redis's own words count: a
/// connection that fails for another reason is no reason to refuse to start.
fn refuses_login(e: &RedisError) -> bool {
    let text = e.to_string();
    e.code()
        .is_some_and(|code| code.starts_with("NOAUTH") || code.starts_with("WRONGPASS"))
        || ["NOAUTH", "WRONGPASS", "unauthenticated"]
            .iter()
            .any(|word| text.contains(word))
}

/// What the store says when Redis wants a login it did not give.
fn login_wanted(e: &RedisError) -> StoreError {
    StoreError::msg(format!(
        "Redis refused the store's login ({e}): {WHERE_THE_LOGIN_GOES}"
    ))
}

/// Where the password and user the store logs in with are given.
const WHERE_THE_LOGIN_GOES: &str = "give the password (and user) it expects in the URL \
     (redis://user:password@host:6379); behind Sentinel, the sentinels' own in their URLs, the \
     masters' in the client's SentinelNodeConnectionInfo (RedisStore::from_sentinel)";

/// What the store says when Redis answered its login with an error that redis does not pass
/// on (its `AuthenticationFailed`): a wrong password or user, most often, but a full server
/// or a proxy's error answers a login so too.
fn login_failed(e: &RedisError) -> StoreError {
    StoreError::msg(format!(
        "Redis answered the store's login with an error ({e}; redis does not say which): a \
         wrong password or user, a password given to a server that wants none, or a server \
         with no room for another client (maxclients); for a login, {WHERE_THE_LOGIN_GOES}"
    ))
}

/// Why Redis will not run the store's calls as configured, with the fix: it refused the
/// store's login, in its own words or as redis's `AuthenticationFailed` (an error answering
/// the login, which says which it may be), or its scripts. `None` for anything else (an
/// outage, a slow server).
pub(super) fn refusal(e: &RedisError) -> Option<StoreError> {
    if refuses_login(e) {
        return Some(login_wanted(e));
    }
    if e.kind() == redis::ErrorKind::AuthenticationFailed {
        return Some(login_failed(e));
    }
    refuses_scripts(e).then(|| {
        StoreError::msg(format!(
            "this Redis does not run Lua scripts, which the limiter needs (EVALSHA, \
             SCRIPT LOAD): {e}; grant the user `+@scripting` (ACL SETUSER ... +@scripting) \
             or use a server or plan that allows EVAL"
        ))
    })
}

/// A call that failed, `what` it was for. A store that connects lazily meets a refused
/// login or refused scripts at its checks, not when it is made: those are said as at
/// [`RedisStore::connect`], with the fix, in the failure every check then gets (and in the
/// limiter's event when it finds the store lost), not as Redis's bare words.
pub(super) fn failure(what: &str, e: RedisError) -> StoreError {
    refusal(&e).unwrap_or_else(|| error(what, e))
}

/// Whether `e` says the server will not run scripts for this client: no permission for the
/// scripts' commands, or no such command. A refusal that names no script command (a key the
/// user may not touch, another command) has another fix, and is left in Redis's words.
fn refuses_scripts(e: &RedisError) -> bool {
    let text = e.to_string().to_ascii_lowercase();
    let of_scripts = ["'eval", "'script", "'fcall", "scripting"]
        .iter()
        .any(|word| text.contains(word));
    of_scripts && (refused(&text) || text.contains("scripting"))
}

/// Whether an error's text (lowercase) is a server's refusal of a command to this client,
/// which asking again will not change: no permission (an ACL, a managed plan), or no such
/// command or subcommand (an older server, one without Lua). Which command, the callers
/// say.
pub(super) fn refused(text: &str) -> bool {
    [
        "noperm",
        "no permissions",
        "unknown command",
        "unknown subcommand",
    ]
    .iter()
    .any(|word| text.contains(word))
}

fn error(what: &str, source: RedisError) -> StoreError {
    StoreError::new(what, source)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn redis_error(code: &'static str, text: &str) -> RedisError {
        RedisError::from((redis::ErrorKind::Extension, code, text.to_string()))
    }

    /// Only a refusal of the scripts' own commands is said as one, with its fix: a key or
    /// another command the user may not touch keeps Redis's words.
    #[test]
    fn a_refusal_of_scripts_names_their_commands() {
        let refused = [
            redis_error(
                "NOPERM",
                "this user has no permissions to run the 'evalsha' command",
            ),
            redis_error(
                "NOPERM",
                "this user has no permissions to run the 'script|load' command",
            ),
            redis_error(
                "ERR",
                "unknown command 'EVALSHA', with args beginning with: ",
            ),
        ];
        for e in &refused {
            assert!(refuses_scripts(e), "{e}");
        }
        let other = [
            redis_error("NOPERM", "No permissions to access a key"),
            redis_error(
                "NOPERM",
                "this user has no permissions to run the 'del' command",
            ),
            redis_error("ERR", "max number of clients reached"),
        ];
        for e in &other {
            assert!(!refuses_scripts(e) && refusal(e).is_none(), "{e}");
        }
    }
}
