//! Making a Redis store: over one server, a Sentinel-watched primary or a cluster, at once
//! or lazily, and loading its check into the server where it connects.

use std::sync::Arc;

use redis::aio::ConnectionManager;
use redis::cluster_async::ClusterConnection;
use redis::RedisError;

use super::connection::Server;
use super::errors::{error, failure, login_wanted, refusal, refuses_login};
use super::runtime::Runtime;
use super::{connection, functions, Connection, Inner, RedisStore};
use crate::StoreError;

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
    pub(super) async fn command<T: redis::FromRedisValue + Send + 'static>(
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
}
