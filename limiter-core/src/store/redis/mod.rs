//! The Redis store: one budget shared by every instance of a service.

mod scripts;

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::RedisError;

use super::{Charge, Check, Limit, Store, StoreError};
use crate::Decision;
use scripts::Script;

/// Counts in Redis, so that every instance of a service shares one budget per client.
///
/// - **Atomic, one round trip**: each request is one `EVALSHA` of one Lua script, whatever
///   the number of limits it is checked against (loaded once, reloaded transparently after
///   `SCRIPT FLUSH` or a restart); stacked limits count a request all or nothing.
/// - **One clock**: scripts read the Redis server's `TIME`, so instances with skewed clocks
///   agree ([`use_caller_clock`](RedisStore::use_caller_clock) passes the limiter's clock
///   instead, for tests with a [`ManualClock`](crate::ManualClock)).
/// - **Same answers as the in-memory store**: the scripts follow the same definitions; the
///   tests replay the reference schedules through both.
/// - **Tidy**: every key written gets an expiry (a window after its last use; until full
///   again for the bucket). Key names are `PREFIX:SCOPE:LIMIT:{CLIENT}`, bounded in length
///   whatever a client sends: `SCOPE` is the scope's printable ASCII cut to 40 characters,
///   `LIMIT` the limit's stable id in 16 hex digits ([`Limit`]'s documentation gives its
///   encoding), `CLIENT` the key's bytes in hex, or their SHA-1 when 20 bytes or longer. The
///   braces are a Redis Cluster hash tag: a client's states live on one node.
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
    connection: ConnectionManager,
    prefix: String,
    caller_clock: bool,
    script: Script,
    refund: Script,
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
        let manager = ConnectionManager::new_lazy_with_config(client, config())
            .map_err(|e| error("invalid Redis configuration", e))?;
        Ok(RedisStore::from_manager(manager))
    }

    /// A store over a connection manager you configured yourself.
    pub fn from_manager(connection: ConnectionManager) -> RedisStore {
        RedisStore {
            inner: Arc::new(Inner {
                connection,
                prefix: "limiter".to_string(),
                caller_clock: false,
                script: Script::check(),
                refund: Script::refund(),
            }),
        }
    }

    /// A store over a client you built (TLS, credentials, ...).
    pub async fn from_client(client: redis::Client) -> Result<RedisStore, StoreError> {
        let manager = ConnectionManager::new_with_config(client, config())
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
        let mut command = redis::cmd("EVALSHA");
        command.arg(&self.inner.script.sha).arg(unique.len());
        for charge in &unique {
            command.arg(self.key_name(charge.limit, charge.key));
        }
        if self.inner.caller_clock {
            command
                .arg(now.as_millis().to_string())
                .arg(CALLER_CLOCK_MIN_TTL_MS);
        } else {
            command.arg("").arg(0);
        }
        for charge in &unique {
            let policy = charge.limit.policy();
            command
                .arg(scripts::code(policy.algorithm()))
                .arg(policy.window_ms())
                .arg(policy.max().get())
                .arg(policy.emission_interval_ns())
                .arg(u64::from(policy.burst().get()) * policy.emission_interval_ns())
                .arg(charge.cost);
        }
        let reply: Vec<i64> = self.run(&self.inner.script, &command).await?;
        if reply.len() != 3 * unique.len() {
            return Err(StoreError::msg(format!(
                "the rate limit script answered {} numbers for {} limits",
                reply.len(),
                unique.len()
            )));
        }
        let decisions: Vec<Decision> = unique
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
        Ok(slot_of.into_iter().map(|u| decisions[u]).collect())
    }

    async fn take_back(
        &self,
        charges: &[Charge<'_>],
        at: Duration,
        now: Duration,
    ) -> Result<(), StoreError> {
        let mut command = redis::cmd("EVALSHA");
        command.arg(&self.inner.refund.sha).arg(charges.len());
        for charge in charges {
            command.arg(self.key_name(charge.limit, charge.key));
        }
        command.arg(at.as_millis().to_string());
        if self.inner.caller_clock {
            command.arg(now.as_millis().to_string()).arg(0);
        } else {
            // The server's clock placed the check; the time since it is the caller's to
            // measure, with a margin for the two trips' different latencies.
            let elapsed = now.saturating_sub(at) + REFUND_MARGIN;
            command.arg("").arg(elapsed.as_millis().to_string());
        }
        for charge in charges {
            let policy = charge.limit.policy();
            command
                .arg(scripts::code(policy.algorithm()))
                .arg(policy.window_ms())
                .arg(policy.max().get())
                .arg(policy.emission_interval_ns())
                .arg(charge.cost.max(1));
        }
        self.run::<i64>(&self.inner.refund, &command)
            .await
            .map(drop)
    }

    /// Runs `command` (an `EVALSHA` of `script`), loading the script first if Redis does
    /// not know it (a restart, `SCRIPT FLUSH`).
    async fn run<T: redis::FromRedisValue>(
        &self,
        script: &Script,
        command: &redis::Cmd,
    ) -> Result<T, StoreError> {
        let mut connection = self.inner.connection.clone();
        let reply = match command.query_async(&mut connection).await {
            Err(e) if is_no_script(&e) => {
                load(&mut connection, script).await?;
                command.query_async(&mut connection).await
            }
            other => other,
        };
        reply.map_err(|e| error("Redis check failed", e))
    }
}

/// How much earlier than the caller measures a refund places its check, with the server's
/// clock: a refund placed too early takes back older units or none (erring on the side of
/// the limit), one placed too late could take back newer units than its own.
const REFUND_MARGIN: Duration = Duration::from_millis(250);

/// With the caller's clock, keys live at least this long in Redis's own time (a minute): the
/// caller's time need not run at Redis's pace, and expiry must not cut a window short.
const CALLER_CLOCK_MIN_TTL_MS: u64 = 60_000;

/// Whether Redis (or Valkey, which words the message differently) does not know the script.
fn is_no_script(error: &RedisError) -> bool {
    error
        .code()
        .is_some_and(|code| code.starts_with("NOSCRIPT"))
        || error.to_string().starts_with("NOSCRIPT")
}

async fn load(connection: &mut ConnectionManager, script: &Script) -> Result<(), StoreError> {
    redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(script.source)
        .query_async::<String>(connection)
        .await
        .map(drop)
        .map_err(|e| error("cannot load the rate limit script", e))
}

fn config() -> ConnectionManagerConfig {
    ConnectionManagerConfig::new()
        .set_connection_timeout(Some(Duration::from_secs(1)))
        .set_number_of_retries(2)
        .set_max_delay(Duration::from_millis(500))
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

    fn forget<'a>(&'a self, limit: &'a Limit, key: &'a [u8]) -> Check<'a, ()> {
        Check::pending(async move {
            let mut connection = self.inner.connection.clone();
            redis::cmd("DEL")
                .arg(self.key_name(limit, key))
                .query_async::<i64>(&mut connection)
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
