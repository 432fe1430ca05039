//! One Redis server or a Redis Cluster, behind the same calls.

use std::sync::Arc;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::sentinel::SentinelClient;
use redis::{Arg, Cmd, FromRedisValue, RedisError, RedisResult};

use super::probe::Probe;
use super::renewable::Renewable;
use super::scripts::Script;

/// Where the store's commands go.
#[derive(Clone)]
pub(super) enum Connection {
    /// One server (or a primary behind a proxy): reconnects by itself.
    Single(Server),
    /// A cluster: each command goes to the node serving its keys' slot, following `MOVED`
    /// and `ASK`, and the slot map is refreshed when it changes.
    Cluster(ClusterConnection),
    /// The master of a service Redis Sentinel watches: one server, which the sentinels are
    /// asked for again when it stops taking writes (a failover).
    Sentinel(Arc<Followed>),
}

/// One server's connections: the one the store's commands go over, and a second one that
/// carries nothing but probes (see `probe.rs`), which a Redis that is alive answers whatever
/// holds up a call on the first: a segment lost on its way, a host that paused.
#[derive(Clone)]
pub(super) struct Server {
    /// Shared by the copies: replaced by [`renew_calls`](Server::renew_calls) and where
    /// redis's manager would never connect again (`renewable.rs`).
    calls: Arc<Renewable>,
    /// None over a connection made elsewhere (`RedisStore::from_manager`): no client to make
    /// it, or another calls connection, with.
    probe: Option<Probe>,
}

impl Server {
    /// `calls`, and a probe connection to the same server made with `client`. Made within
    /// the runtime its I/O is to run on.
    pub(super) fn new(calls: ConnectionManager, client: Option<redis::Client>) -> Server {
        Server {
            probe: client.clone().and_then(Probe::start),
            calls: Arc::new(Renewable::new(
                calls,
                client.map(|client| (client, single_config())),
            )),
        }
    }

    /// This server's probe (see `probe.rs`); none over a connection made elsewhere.
    pub(super) fn probe(&self) -> Option<Probe> {
        self.probe.clone()
    }

    /// The connection the calls go over now.
    fn calls(&self) -> ConnectionManager {
        self.calls.get()
    }

    /// Replaces the calls' connection with a new one, made on its next use: it went without
    /// answering for five timeouts while the server answered probes (see `deadline.rs`).
    /// redis's manager makes a connection again only when one fails, and one that a balancer
    /// or a NAT dropped without a word never does: every call would wait on it until TCP
    /// gives up (minutes). Calls still out on the old one keep it until they end. Made within
    /// the runtime its I/O is to run on.
    pub(super) fn renew_calls(&self) {
        self.calls.renew();
    }

    /// After a call failed with `error`: a failure to connect that redis's manager would
    /// keep for good has the calls' connection made again (see `renewable.rs`).
    fn failed(&self, error: &RedisError) {
        self.calls.after_error(error);
    }
}

/// A master found through the sentinels, and the way to find the next one.
pub(super) struct Followed {
    sentinels: Arc<tokio::sync::Mutex<SentinelClient>>,
    current: Arc<arc_swap::ArcSwap<Server>>,
    /// When the sentinels were last done being asked, and whether they are being asked now
    /// (see [`FOLLOW_EVERY`]).
    asked: Arc<parking_lot::Mutex<(Option<std::time::Instant>, bool)>>,
}

/// The sentinels are asked at most this often: a master that is down fails every call
/// until they promote another, and asking them per call would only add to the load.
const FOLLOW_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

impl Followed {
    /// Asks `sentinels` for the master of their service, and connects to it.
    pub(super) async fn start(mut sentinels: SentinelClient) -> RedisResult<Followed> {
        let manager = Followed::master(&mut sentinels).await?;
        Ok(Followed {
            sentinels: Arc::new(tokio::sync::Mutex::new(sentinels)),
            current: Arc::new(arc_swap::ArcSwap::from_pointee(manager)),
            asked: Arc::new(parking_lot::Mutex::new((
                Some(std::time::Instant::now()),
                false,
            ))),
        })
    }

    async fn master(sentinels: &mut SentinelClient) -> RedisResult<Server> {
        let master = sentinels.async_get_client().await?;
        let master = client(master.get_connection_info().clone())?;
        let calls = ConnectionManager::new_with_config(master.clone(), single_config()).await?;
        Ok(Server::new(calls, Some(master)))
    }

    /// The master's connections now.
    pub(super) fn manager(&self) -> Arc<Server> {
        self.current.load_full()
    }

    /// After `error` from `used`, the master's connection then: whether the call may be
    /// sent again at once, to another master. When the master may be another server now —
    /// it refuses writes as a replica, or cannot be reached — the sentinels are asked, in a
    /// task of the store's own (at most every [`FOLLOW_EVERY`], counted from when they
    /// answered), and the connection moves to the master they name; the call that saw the
    /// error does not wait for it. A call is sent again only if the connection moved since
    /// it was sent and Redis did not run it (it refused it, or refused the connection).
    pub(super) fn follow(&self, error: &RedisError, used: &Arc<Server>) -> bool {
        let refused = is_read_only(error) || error.is_connection_refusal();
        let lost = error.is_connection_dropped() || error.is_io_error();
        if !refused && !lost {
            return false;
        }
        if !Arc::ptr_eq(&self.current.load_full(), used) {
            return refused;
        }
        {
            let mut asked = self.asked.lock();
            let (last, asking) = *asked;
            if asking || last.is_some_and(|at| at.elapsed() < FOLLOW_EVERY) {
                return false;
            }
            *asked = (last, true);
        }
        let (sentinels, current, asked) = (
            Arc::clone(&self.sentinels),
            Arc::clone(&self.current),
            Arc::clone(&self.asked),
        );
        tokio::spawn(async move {
            let found = Followed::master(&mut *sentinels.lock().await).await;
            if let Ok(manager) = found {
                current.store(Arc::new(manager));
            }
            *asked.lock() = (Some(std::time::Instant::now()), false);
        });
        false
    }
}

/// Whether Redis refused a write as a replica (`READONLY`, or a script's write that Redis 6
/// reports inside its own error).
fn is_read_only(error: &RedisError) -> bool {
    error.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::ReadOnly)
        || error.to_string().contains("READONLY")
}

impl Connection {
    pub(super) fn is_cluster(&self) -> bool {
        matches!(self, Connection::Cluster(_))
    }

    pub(super) async fn query<T: FromRedisValue>(&self, command: &Cmd) -> RedisResult<T> {
        match self {
            Connection::Single(server) => {
                let answer = command.query_async(&mut server.calls()).await;
                if let Err(e) = &answer {
                    server.failed(e);
                }
                answer
            }
            Connection::Cluster(connection) => command.query_async(&mut connection.clone()).await,
            Connection::Sentinel(followed) => {
                let used = followed.manager();
                match command.query_async(&mut used.calls()).await {
                    Err(e) if followed.follow(&e, &used) => {
                        command.query_async(&mut followed.manager().calls()).await
                    }
                    Err(e) => {
                        used.failed(&e);
                        Err(e)
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
            Connection::Single(server) => Some(server.calls()),
            Connection::Sentinel(followed) => Some(followed.manager().calls()),
            Connection::Cluster(_) => None,
        }
    }

    /// The server a call sent now goes to, with its probe (see `probe.rs`): behind Sentinel,
    /// the master of this moment, not one a failover promotes while the call waits. None on
    /// a cluster, whose client keeps one connection a node (a call's timeout alone judges
    /// its node there).
    pub(super) fn server(&self) -> Option<Server> {
        match self {
            Connection::Single(server) => Some(server.clone()),
            Connection::Sentinel(followed) => Some((*followed.manager()).clone()),
            Connection::Cluster(_) => None,
        }
    }

    /// After a pipeline on [`one_server`](Connection::one_server) failed with `error`: has
    /// the sentinels asked for the master again, if it may have changed (see
    /// [`Followed::follow`]), and the server's connection made again if redis's manager
    /// would keep the failure for good (see `renewable.rs`). The pipeline is not sent again
    /// here.
    pub(super) fn after_failure(&self, error: &RedisError) {
        match self {
            Connection::Single(server) => server.failed(error),
            Connection::Sentinel(followed) => {
                let used = followed.manager();
                if !followed.follow(error, &used) {
                    used.failed(error);
                }
            }
            Connection::Cluster(_) => {}
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
            Err(e) if is_no_script(&e) => self.query(&as_source(script, command)).await,
            other => other,
        }
    }
}

/// `command` (`EVALSHA sha ...`) as `EVAL` of `script`'s source, which also caches it on
/// the server.
fn as_source(script: &Script, command: &Cmd) -> Cmd {
    with_head(command, "EVAL", script.source.as_bytes())
}

/// `command`, a call of a script or function (`EVALSHA sha ...`, `FCALL function ...`),
/// as `verb` of `named`: the arguments after the name are the same for `EVAL`, `EVALSHA`
/// and `FCALL`.
pub(super) fn with_head(command: &Cmd, verb: &str, named: &[u8]) -> Cmd {
    let mut call = redis::cmd(verb);
    call.arg(named);
    for arg in command.args_iter().skip(2) {
        if let Arg::Simple(bytes) = arg {
            call.arg(bytes);
        }
    }
    call
}

/// Whether Redis (or Valkey, which words the message differently) does not know the script.
pub(super) fn is_no_script(error: &RedisError) -> bool {
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
