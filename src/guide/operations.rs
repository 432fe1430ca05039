//! # Operating it
//!
//! What an operator needs once limiter guards a real service, and where each is told:
//!
//! - **A restart is not an amnesty**: save the in-memory store at a graceful stop and
//!   restore it at start; the downtime counts as time gone by ([the in-memory
//!   store](super::memory#a-restart-is-not-an-amnesty)).
//! - **Who is being limited right now**: each scope's most rejected clients of the last
//!   minutes, on the routes page and from `Limiter::rejected_clients` ([seeing
//!   it](super::observability)).
//! - **Rolling a limit out**: `enforce = "10%"`, raised while serving ([production
//!   controls](super::controls#rolling-a-limit-out-gradually)).
//! - **Acting without a deploy**: `limiter-cli`, below, and the policies stored in Redis
//!   that every instance follows ([production
//!   controls](super::controls#limits-from-configuration-changed-while-running)).
//!
//! ## `limiter-cli`
//!
//! A binary of this crate behind the feature `cli`, which talks to the fleet's Redis:
//!
//! ```text
//! cargo install limiter --features cli          # or: cargo run --features cli --bin limiter-cli --
//! limiter-cli --redis redis://10.0.0.5:6379 limits
//! login      5 per 15m, sliding_window, block 1h   b4e027f5f74c97f9
//! search     100 per 1m, fixed_window              73aba584c0094a1a
//! api        10000 per month, fixed_window         5d1c0b7e22a4f9e0
//! uploads    4 in flight                           0a7d3e5c9b1f2468
//! limiter-cli show ip:203.0.113.7
//! login      5 per 15m, sliding_window, block 1h   remaining 0 of 5   reset in 412s   blocked for 3412s
//! search     100 per 1m, fixed_window              remaining 100 of 100  reset in 0s  not blocked
//! api        10000 per month, fixed_window         remaining 0 of 10000  reset in 2446969s  used up: admitted again in 2446969s (28d 7h 42m)
//! uploads    4 in flight                           1 in flight now
//! limiter-cli reset ip:203.0.113.7 login       # every instance admits it within a second
//! limiter-cli set search "200 per 1m"          # every instance applies it within a second
//! limiter-cli unset search                     # back to the declared limit
//! ```
//!
//! - **`limits`** lists what the instances count with, concurrency limits included: each
//!   instance writes a limit into
//!   the hash `PREFIX:limits` the first time it counts with it (one `HSET` per limit and
//!   process, not waited for; at most 10,000 per process) and all of its limits again every
//!   60 readings (a minute by default), and the policies stored as overrides. Entries are
//!   never removed: delete the hash to prune what no instance uses any more, and the running
//!   instances write theirs back within a minute (after a `FLUSHALL` or a failover too).
//! - **`show CLIENT`** reads the client's state under every limit in use, on the Redis
//!   server's clock, counting nothing (`RedisStore::status`): remaining, when quota comes
//!   back, and either how long a block refuses it (a penalty's, however long it outlasts
//!   the window) or, its quota used up, when it is admitted again; under each concurrency
//!   limit, its requests in flight. `CLIENT` is the client as the limit keys it:
//!   `ip:ADDRESS` (an IPv6 address stands for its /56, or `--ipv6-prefix`), `user:ID`,
//!   `header:VALUE`, `function:VALUE`, `checked:VALUE` or `global`.
//! - **`reset CLIENT [SCOPE]`** forgets the client's state under every registered limit (of
//!   `SCOPE`) and counts one in `PREFIX:resets` (`RedisStore::reset_everywhere`): every
//!   instance forgets the rejections it remembers within its reading interval, so the
//!   client is admitted everywhere. What it cannot reach: an instance's in-memory fallback
//!   counts (while Redis was away), and a limit no running instance registered yet (within
//!   a minute of a deleted registry).
//! - **`set SCOPE POLICY`** / **`unset SCOPE`** write the hash `PREFIX:overrides`, which
//!   every limiter over the store reads every second (`RedisStore::overrides_every`). A
//!   policy naming no algorithm keeps each declared limit's.
//! - `--redis URL` (default `LIMITER_REDIS_URL`, else `redis://127.0.0.1:6379`),
//!   `--prefix PREFIX` (default `limiter`, as `RedisStore::with_prefix`). A usage mistake
//!   prints its reason and the usage, exit status 2; a failure (Redis unreachable, refusing,
//!   slower than 5 s) prints its cause and a one-line hint, exit status 1. It talks to one Redis server (or a primary
//!   behind a proxy), not to a Redis Cluster, and waits up to 5 s for each answer.
//! - The keys `PREFIX:limits`, `PREFIX:overrides` and `PREFIX:resets` have no expiry: keep
//!   an eviction policy that spares them (`volatile-*` or `noeviction`), or an evicted
//!   override is taken back.
//!
//! Tested against a real `redis-server` with two instances of a service running over HTTP
//! (`tests/cli.rs`, feature `cli`): the limits listed (a concurrency limit too), a client
//! shown used up for its 900 s, blocked for the 2 min its block outlasts a 20 s window, a
//! used-up monthly quota and a slot in flight, reset and admitted again by both instances (the one that remembered its rejection
//! too), a policy set that both pick up and taken back, and each mistake refused with its
//! reason.
