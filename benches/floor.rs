//! Redis's floor for a load: the key stream of the limiter's calls sent as plain pipelined
//! commands, at the batch size the limiter's calls had in the same run, one pipeline in
//! flight at a time as the store sends its calls. A busy client is `INCR` and `PEXPIRE` of
//! one key; new clients a `SET key v PX 60000 NX` of a new key each, as many keys as the
//! limiter's round left (Redis's tables have more buckets per key at some sizes than at
//! others: bytes per key compare at one size). What Redis spends on that
//! is the least any limiter could make it spend; the limiter's figure over the floor is what
//! its scripts and marks cost beyond it.

use redis::AsyncCommands;

use crate::redis_server::RedisServer;

/// Checks sent per floor of a busy client: enough for a steady figure, bounded in count and
/// time; new clients' floors write as many keys as the limiter's round did, within bounds.
const CHECKS: usize = 200_000;
const MOST_KEYS: usize = 1_000_000;

/// What the floor cost Redis.
pub(crate) struct Floor {
    /// The pipelines' size.
    pub(crate) batch: usize,
    /// Redis's CPU per check, µs.
    pub(crate) redis_us: f64,
    /// Bytes per key, for new clients (`used_memory` over `DBSIZE`, from an empty Redis).
    pub(crate) key_bytes: Option<f64>,
    /// The keys they were measured over.
    pub(crate) keys: usize,
    /// Redis's time in the commands per check, µs (`INFO commandstats`).
    pub(crate) command_us: f64,
}

/// The floor of a busy client (`new_keys` none) or of a new client per check, as many as
/// `new_keys`, in pipelines of `batch`; `cpu_ns` reads a process's CPU time. `beside` starts
/// the load that runs meanwhile (stopped after): the limiter's rounds have Redis share its
/// CPU with the load generator, and a floor measured on an otherwise idle CPU is not the
/// floor of that load (its commands took half the time there).
pub(crate) fn floor(
    runtime: &tokio::runtime::Runtime,
    redis: &RedisServer,
    new_keys: Option<usize>,
    batch: usize,
    cpu_ns: impl Fn(u32) -> u64,
    beside: impl FnOnce() -> Vec<tokio::task::JoinHandle<()>>,
) -> Floor {
    let new_clients = new_keys.is_some();
    let checks = new_keys.map_or(CHECKS, |keys| keys.clamp(1_000, MOST_KEYS));
    let batch = batch.clamp(1, 128);
    redis.command(&["FLUSHALL", "SYNC"]);
    let empty = redis.used_memory();
    let usec = || -> u64 {
        redis
            .command_mix()
            .iter()
            .filter(|(name, _, _)| matches!(name.as_str(), "set" | "incr" | "pexpire"))
            .map(|(_, _, usec)| usec)
            .sum()
    };
    let (usec_before, before) = runtime.block_on(async {
        let load = beside();
        // The load under way before the floor starts.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let readings = (usec(), cpu_ns(redis.pid()));
        let client = redis::Client::open(redis.url()).expect("a Redis URL");
        let mut connection = client
            .get_multiplexed_async_connection()
            .await
            .expect("Redis answers");
        // Names as long as the store's (`PREFIX:{CLIENT}LIMIT`, 28 bytes for an IPv4 client).
        let mut next = 0x9E37_79B9_u64;
        let mut sent = 0;
        while sent < checks {
            let mut pipe = redis::pipe();
            for _ in 0..batch {
                if new_clients {
                    next = next.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    let name = format!("floor:{{{:016x}}}limit", next);
                    pipe.cmd("SET")
                        .arg(name)
                        .arg("1")
                        .arg("PX")
                        .arg(60_000)
                        .arg("NX")
                        .ignore();
                } else {
                    pipe.cmd("INCR").arg("floor:{busy}limit").ignore();
                    pipe.cmd("PEXPIRE")
                        .arg("floor:{busy}limit")
                        .arg(100)
                        .ignore();
                }
            }
            let () = pipe
                .query_async(&mut connection)
                .await
                .expect("the floor's pipeline");
            sent += batch;
        }
        let _: Option<String> = connection.get("floor:none").await.expect("Redis answers");
        for task in load {
            task.abort();
        }
        readings
    });
    let sent = sent_checks(checks, batch) as f64;
    let redis_us = (cpu_ns(redis.pid()) - before) as f64 / 1_000.0 / sent;
    let command_us = (usec() - usec_before) as f64 / sent;
    let keys = redis.integer(&["DBSIZE"]).max(1);
    let key_bytes = new_clients.then(|| (redis.used_memory() as f64 - empty as f64) / keys as f64);
    redis.command(&["FLUSHALL", "SYNC"]);
    Floor {
        batch,
        redis_us,
        key_bytes,
        keys: keys as usize,
        command_us,
    }
}

/// The checks `floor` sends for `checks`: whole pipelines of `batch`.
fn sent_checks(checks: usize, batch: usize) -> usize {
    checks.div_ceil(batch) * batch
}
