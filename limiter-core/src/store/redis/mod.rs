//! The Redis store: one budget shared by every instance of a service.

mod scripts;

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::RedisError;

use super::{Check, Limit, Store, StoreError};
use crate::Decision;
use scripts::{fits_in_lua, Script, Scripts};

/// Counts in Redis, so that every instance of a service shares one budget per client.
///
/// - **Atomic, one round trip**: each check is one `EVALSHA` of the algorithm's Lua script
///   (loaded once, reloaded transparently after `SCRIPT FLUSH` or a restart).
/// - **One clock**: scripts read the Redis server's `TIME`, so instances with skewed clocks
///   agree ([`use_caller_clock`](RedisStore::use_caller_clock) passes the limiter's clock
///   instead, for tests with a [`ManualClock`](crate::ManualClock)).
/// - **Same answers as the in-memory store**: the scripts follow the same definitions; the
///   tests replay the reference schedules through both.
/// - **Tidy**: every key written gets an expiry (a window after its last use; until full
///   again for the bucket). Key names are `PREFIX:SCOPE:{LIMIT:CLIENT}`, bounded in length
///   whatever a client sends: `SCOPE` is cut to 40 characters, `LIMIT` is the limit's 64-bit
///   id, `CLIENT` the key's bytes in hex, or their SHA-1 when 20 bytes or longer. The braces
///   are a Redis Cluster hash tag.
/// - **Faults are the limiter's policy**: a check that fails or exceeds the limiter's timeout
///   is handled as [`LimiterBuilder::on_store_error`](crate::LimiterBuilder::on_store_error)
///   says; the connection reconnects by itself when Redis comes back.
///
/// Lua numbers are doubles, so a policy whose arithmetic would pass 2⁵³ (a counter with
/// `max × window` beyond that, a bucket refilling for more than 52 days) is refused with an
/// error, handled like any other store error.
///
/// ```no_run
/// # async fn run() -> Result<(), limiter_core::StoreError> {
/// use limiter_core::{Limiter, RedisStore};
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
    scripts: Scripts,
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
                scripts: Scripts::new(),
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
            scripts: Scripts::new(),
        });
        change(&mut inner);
        RedisStore {
            inner: Arc::new(inner),
        }
    }

    /// The SHA-1 and source of the script for `algorithm`, for benchmarks that run it with
    /// `redis-benchmark`.
    #[doc(hidden)]
    pub fn script(&self, algorithm: crate::Algorithm) -> (&str, &str) {
        let script = self.inner.scripts.of(algorithm);
        (&script.sha, &script.source)
    }

    /// The Redis key holding `key`'s state under `limit`.
    pub fn key_name(&self, limit: &Limit, key: &[u8]) -> String {
        let scope: String = limit
            .scope()
            .chars()
            .filter(|c| c.is_ascii_graphic() && !matches!(c, '{' | '}'))
            .take(40)
            .collect();
        let mut name = format!("{}:{scope}:{{{:016x}:", self.inner.prefix, limit.id());
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

    async fn eval(&self, limit: &Limit, key: &[u8], now: Duration) -> Result<Decision, StoreError> {
        let policy = limit.policy();
        if !fits_in_lua(policy) {
            return Err(StoreError::msg(format!(
                "the policy of `{}` is beyond what the Redis store computes exactly (2^53)",
                limit.scope()
            )));
        }
        let script = self.inner.scripts.of(policy.algorithm());
        let (now, min_ttl_ms) = if self.inner.caller_clock {
            (now.as_millis().to_string(), CALLER_CLOCK_MIN_TTL_MS)
        } else {
            (String::new(), 0)
        };
        let mut command = redis::cmd("EVALSHA");
        command
            .arg(&script.sha)
            .arg(1)
            .arg(self.key_name(limit, key))
            .arg(policy.window_ms())
            .arg(policy.max().get())
            .arg(now)
            .arg(policy.emission_interval_ns())
            .arg(u64::from(policy.burst().get()) * policy.emission_interval_ns())
            .arg(min_ttl_ms);
        let mut connection = self.inner.connection.clone();
        let reply: Result<(i64, i64, i64), RedisError> =
            match command.query_async(&mut connection).await {
                Err(e) if is_no_script(&e) => {
                    load(&mut connection, script).await?;
                    command.query_async(&mut connection).await
                }
                other => other,
            };
        let (allowed, remaining, wait_ns) = reply.map_err(|e| error("Redis check failed", e))?;
        let max = policy.max().get();
        let wait = Duration::from_nanos(u64::try_from(wait_ns).unwrap_or(0));
        Ok(if allowed == 1 {
            Decision::allow(max, u32::try_from(remaining).unwrap_or(0), wait)
        } else {
            Decision::reject(max, wait)
        })
    }
}

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
        .arg(&script.source)
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
        Check::pending(self.eval(limit, key, now))
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
