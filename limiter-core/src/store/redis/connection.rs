//! One Redis server or a Redis Cluster, behind the same calls.

use std::sync::Arc;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::sentinel::SentinelClient;
use redis::{Arg, Cmd, FromRedisValue, RedisError, RedisResult};

use super::scripts::Script;

/// Where the store's commands go.
#[derive(Clone)]
pub(super) enum Connection {
    /// One server (or a primary behind a proxy): reconnects by itself.
    Single(ConnectionManager),
    /// A cluster: each command goes to the node serving its keys' slot, following `MOVED`
    /// and `ASK`, and the slot map is refreshed when it changes.
    Cluster(ClusterConnection),
    /// The master of a service Redis Sentinel watches: one server, which the sentinels are
    /// asked for again when it stops taking writes (a failover).
    Sentinel(Arc<Followed>),
}

/// A master found through the sentinels, and the way to find the next one.
pub(super) struct Followed {
    sentinels: tokio::sync::Mutex<SentinelClient>,
    current: arc_swap::ArcSwap<ConnectionManager>,
    /// When the sentinels were last asked (see [`FOLLOW_EVERY`]).
    asked: parking_lot::Mutex<Option<std::time::Instant>>,
}

/// The sentinels are asked at most this often: a master that is down fails every call
/// until they promote another, and asking them per call would only add to the load.
const FOLLOW_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

impl Followed {
    /// Asks `sentinels` for the master of their service, and connects to it.
    pub(super) async fn start(mut sentinels: SentinelClient) -> RedisResult<Followed> {
        let manager = Followed::master(&mut sentinels).await?;
        Ok(Followed {
            sentinels: tokio::sync::Mutex::new(sentinels),
            current: arc_swap::ArcSwap::from_pointee(manager),
            asked: parking_lot::Mutex::new(Some(std::time::Instant::now())),
        })
    }

    async fn master(sentinels: &mut SentinelClient) -> RedisResult<ConnectionManager> {
        let master = sentinels.async_get_client().await?;
        let master = client(master.get_connection_info().clone())?;
        ConnectionManager::new_with_config(master, single_config()).await
    }

    /// The master's connection now.
    pub(super) fn manager(&self) -> ConnectionManager {
        (**self.current.load()).clone()
    }

    /// After `error` from the master: whether it may be another server now (it refuses
    /// writes as a replica, or cannot be reached), in which case the sentinels are asked
    /// (at most every [`FOLLOW_EVERY`]) and the connection moves to the master they name.
    /// Whether it moved.
    pub(super) fn follow<'a>(
        &'a self,
        error: &'a RedisError,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send + 'a>> {
        // Boxed: the reconnection's future is deep, and would be part of every call's.
        Box::pin(self.follow_now(error))
    }

    async fn follow_now(&self, error: &RedisError) -> bool {
        let moved_on = error.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly)
            || error.is_connection_dropped()
            || error.is_connection_refusal()
            || error.is_io_error();
        if !moved_on {
            return false;
        }
        {
            let mut asked = self.asked.lock();
            if asked.is_some_and(|at| at.elapsed() < FOLLOW_EVERY) {
                return false;
            }
            *asked = Some(std::time::Instant::now());
        }
        let mut sentinels = self.sentinels.lock().await;
        match Followed::master(&mut sentinels).await {
            Ok(manager) => {
                self.current.store(Arc::new(manager));
                true
            }
            Err(_) => false,
        }
    }
}

impl Connection {
    pub(super) fn is_cluster(&self) -> bool {
        matches!(self, Connection::Cluster(_))
    }

    pub(super) async fn query<T: FromRedisValue>(&self, command: &Cmd) -> RedisResult<T> {
        match self {
            Connection::Single(connection) => command.query_async(&mut connection.clone()).await,
            Connection::Cluster(connection) => command.query_async(&mut connection.clone()).await,
            Connection::Sentinel(followed) => {
                match command.query_async(&mut followed.manager()).await {
                    Err(e) if followed.follow(&e).await => {
                        command.query_async(&mut followed.manager()).await
                    }
                    other => other,
                }
            }
        }
    }

    /// The connection of one server (found through the sentinels, for those), for a
    /// pipeline; none on a cluster.
    pub(super) fn one_server(&self) -> Option<ConnectionManager> {
        match self {
            Connection::Single(connection) => Some(connection.clone()),
            Connection::Sentinel(followed) => Some(followed.manager()),
            Connection::Cluster(_) => None,
        }
    }

    /// After a pipeline on [`one_server`](Connection::one_server) failed with `error`:
    /// whether the sentinels named another master, so that it may be sent again.
    pub(super) async fn follow(&self, error: &RedisError) -> bool {
        match self {
            Connection::Sentinel(followed) => followed.follow(error).await,
            _ => false,
        }
    }

    /// Runs `command`, an `EVALSHA` of `script`; if the node does not know the script (a
    /// restart, `SCRIPT FLUSH`, a replica promoted after a failover), runs it once with
    /// `EVAL`, which also caches it there. `EVAL` goes where the keys are, whichever node
    /// that is now: loading the script on every node would fail while any one is down.
    pub(super) async fn eval<T: FromRedisValue>(
        &self,
        script: &Script,
        command: &Cmd,
    ) -> RedisResult<T> {
        match self.query(command).await {
            Err(e) if is_no_script(&e) => {
                let mut eval = redis::cmd("EVAL");
                eval.arg(script.source);
                // `EVALSHA sha` is followed by the same arguments `EVAL source` takes.
                for arg in command.args_iter().skip(2) {
                    if let Arg::Simple(bytes) = arg {
                        eval.arg(bytes);
                    }
                }
                self.query(&eval).await
            }
            other => other,
        }
    }
}

/// Whether Redis (or Valkey, which words the message differently) does not know the script.
fn is_no_script(error: &RedisError) -> bool {
    error
        .code()
        .is_some_and(|code| code.starts_with("NOSCRIPT"))
        || error.to_string().starts_with("NOSCRIPT")
}

/// A client for `info` whose connections send each call as soon as it is written
/// (`TCP_NODELAY`). With Nagle's algorithm, which redis leaves on, a call written in more
/// than one segment — a burst's batch — holds its last part until Redis acknowledges the
/// first, and Redis delays that acknowledgement (40 ms on Linux) while it waits for the
/// rest of the command: a healthy Redis then looks slower than the store's timeout.
pub(super) fn client(info: impl redis::IntoConnectionInfo) -> redis::RedisResult<redis::Client> {
    let info = info.into_connection_info()?;
    let tcp = info.tcp_settings().clone().set_nodelay(true);
    redis::Client::open(info.set_tcp_settings(tcp))
}

/// Reconnection for one server: a second to connect, two retries, at most half a second
/// between them (the limiter's own timeout bounds each check).
pub(super) fn single_config() -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(std::time::Duration::from_secs(1)))
        .set_number_of_retries(2)
        .set_max_delay(std::time::Duration::from_millis(500))
}

/// What a lazily made cluster connection starts with: [`cluster_builder`]'s timeouts (a
/// fresh `ClusterConfig` has none).
pub(super) fn cluster_config() -> redis::cluster::ClusterConfig {
    redis::cluster::ClusterConfig::new()
        .set_connection_timeout(std::time::Duration::from_secs(1))
        .set_response_timeout(std::time::Duration::from_secs(1))
}

/// The same for a cluster: a node that does not answer is retried twice, briefly, before
/// the check fails and the limiter's fault policy answers it.
pub(super) fn cluster_builder(nodes: &[&str]) -> ClusterClientBuilder {
    ClusterClientBuilder::new(nodes.to_vec())
        // As for one server (see `client`).
        .tcp_settings(redis::io::tcp::TcpSettings::default().set_nodelay(true))
        .connection_timeout(std::time::Duration::from_secs(1))
        .response_timeout(std::time::Duration::from_secs(1))
        .retries(2)
        .max_retry_wait(200)
        .min_retry_wait(20)
}
