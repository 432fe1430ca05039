//! Redis's floor for a load: the key stream of the limiter's calls sent as plain pipelined
//! commands, at the batch size the limiter's calls had in the same run, one pipeline in
//! flight at a time as the store sends its calls. A busy client is `INCR` and `PEXPIRE` of
//! one key; new clients a `SET key v PX 60000 NX` of a new key each. What Redis spends on that
//! is the least any limiter could make it spend; the limiter's figure over the floor is what
//! its scripts and marks cost beyond it.

use redis::AsyncCommands;

use crate::redis_server::RedisServer;

/// Checks sent per floor: enough for a steady figure, bounded in count and time.
const CHECKS: usize = 200_000;

/// What the floor cost Redis.
pub(crate) struct Floor {
    /// The pipelines' size.
    pub(crate) batch: usize,
    /// Redis's CPU per check, µs.
    pub(crate) redis_us: f64,
    /// Bytes per key, for new clients (`used_memory` over `DBSIZE`, from an empty Redis).
    pub(crate) key_bytes: Option<f64>,
}

/// The floor of a busy client (`new_clients` false) or of a new client per check, in
/// pipelines of `batch`; `cpu_ns` reads a process's CPU time.
pub(crate) fn floor(
    runtime: &tokio::runtime::Runtime,
    redis: &RedisServer,
    new_clients: bool,
    batch: usize,
    cpu_ns: impl Fn(u32) -> u64,
) -> Floor {
    let batch = batch.clamp(1, 128);
    redis.command(&["FLUSHALL", "SYNC"]);
    let empty = redis.used_memory();
    let before = cpu_ns(redis.pid());
    runtime.block_on(async {
        let client = redis::Client::open(redis.url()).expect("a Redis URL");
        let mut connection = client
            .get_multiplexed_async_connection()
            .await
            .expect("Redis answers");
        // Names as long as the store's (`PREFIX:{CLIENT}LIMIT`, 28 bytes for an IPv4 client).
        let mut next = 0x9E37_79B9_u64;
        let mut sent = 0;
        while sent < CHECKS {
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
    });
    let redis_us = (cpu_ns(redis.pid()) - before) as f64 / 1_000.0 / CHECKS as f64;
    let key_bytes = new_clients.then(|| {
        let keys = redis.integer(&["DBSIZE"]).max(1) as f64;
        (redis.used_memory() as f64 - empty as f64) / keys
    });
    redis.command(&["FLUSHALL", "SYNC"]);
    Floor {
        batch,
        redis_us,
        key_bytes,
    }
}
