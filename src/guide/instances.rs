//! # Several instances
//!
//! Two instances behind a balancer each count their half, and the real limit doubles. The
//! Redis store (feature `redis`) gives them one budget: each check is one atomic script, on
//! Redis's clock, with the same decisions as the in-memory store. It is tested against Redis
//! 7.0 and Valkey 8.0: CI runs every Redis test, the cluster's, the TLS one and the attacks
//! on both.
//!
//! **Servers.** Redis 6.0 or later, or Valkey. From Redis 6.2 a new client's first check
//! writes a mark whose expiry is its state (`SET ... NX PXAT`); an older server gets the
//! packed state instead (`SET ... NX PX`). The check is a function library where the server
//! takes one (`FCALL`: Redis 7, Valkey), else a script.
//!
//! **The tests** start their own servers on free ports: `cargo test --workspace
//! --all-features` runs the Redis store's tests against a `redis-server`, a three-master
//! Redis Cluster, Sentinel and TLS, and the adversarial suite. They need `redis-server`,
//! `redis-cli` and `openssl` (`apt-get install -y redis-server redis-tools openssl`; `.ci/run`
//! installs them when missing). `LIMITER_REDIS_SERVER=valkey-server` runs the same tests on
//! Valkey (`.ci/install-valkey` installs Valkey 8 from Debian's bookworm-backports; `.ci/run`
//! runs both).
//!
//! **Scripts must be allowed.** `RedisStore::connect` (and `from_client`) loads the check
//! script at once: a server that refuses scripts — an ACL user without `@scripting`, a
//! managed plan that forbids `EVAL`, a server without Lua — is an error there that names
//! the cause and the fix (`+@scripting`), not an outage of every check. (A lazily connected
//! store, or a cluster's, meets the refusal at its first check: the error names it, and the
//! fault policy answers.)
//!
//! **TLS** (a managed Redis that requires it): feature `redis-tls` takes `rediss://` URLs,
//! through redis's rustls support. The server's certificate must chain to a root the system
//! trusts, or to the CA in the file `SSL_CERT_FILE` names (a cloud provider's CA bundle);
//! one that does not is refused when connecting (`StoreError`: "invalid peer certificate:
//! UnknownIssuer"). Without the feature a `rediss://` URL is refused when the store is made
//! ("invalid Redis URL: can't connect with TLS, the feature is not enabled").
//!
//! ```
//! # #[cfg(feature = "redis")]
//! # fn build() -> Result<(), limiter::StoreError> {
//! use std::time::Duration;
//! use limiter::{Limiter, OnStoreError, RedisStore};
//!
//! let limiter = Limiter::builder()
//!     .store(RedisStore::connect_lazily("redis://redis.internal:6379")?)
//!     .on_store_error(OnStoreError::FallBackToMemory) // the default
//!     .store_timeout(Duration::from_millis(50))      // the default
//!     .build();
//! # Ok(()) }
//! ```
//!
//! **When Redis fails** (an error, or no answer within the timeout), the
//! [`OnStoreError`](crate::OnStoreError) policy decides for that check; three failed calls
//! in a row mark Redis down, and it is then retried every 100 ms until it answers. A call
//! Redis refuses (out of memory, no replicas, a save that failed) fails its own checks only:
//! Redis is there, and the next checks still ask it, so a flood it can still reject is
//! rejected; such refusals are logged once a minute. Load is not a
//! failure: the timeout judges Redis's answer to each call, not the time a check waits for
//! its turn, and a dropped connection is reconnected and the call sent again at once.
//!
//! | policy | requests meanwhile | what it costs you |
//! | --- | --- | --- |
//! | `FallBackToMemory` (default) | counted in each instance's memory | limits hold per instance: `k` instances admit up to `k ×` the limit, or about the limit in all with [`fallback_share(k)`](crate::LimiterBuilder::fallback_share) |
//! | `FailOpen` | admitted, unlimited | no protection while Redis is away |
//! | `FailClosed` | `503` with `Retry-After: 1` | an outage of Redis is an outage of the route |
//!
//! The same choice, testable without Redis, with a store that fails:
//!
//! ```
//! use std::time::Duration;
//! use limiter::{Charge, Check, Checked, Limit, Limiter, OnStoreError, Policy, Receipt, Store, StoreError};
//!
//! struct Down;
//! impl Store for Down {
//!     fn check<'a>(&'a self, _: &'a Limit, _: &'a [u8], _: Duration) -> Check<'a> {
//!         Check::ready(Err(StoreError::msg("connection refused")))
//!     }
//!     fn check_all<'a>(&'a self, _: &'a [Charge<'a>], _: Duration) -> Check<'a, Checked> {
//!         Check::ready(Err(StoreError::msg("connection refused")))
//!     }
//!     fn refund<'a>(&'a self, _: &'a [Charge<'a>], _: &'a Receipt, _: Duration) -> Check<'a, ()> {
//!         Check::ready(Ok(()))
//!     }
//!     fn reset<'a>(&'a self, _: &'a Limit, _: &'a [u8]) -> Check<'a, ()> {
//!         Check::ready(Ok(()))
//!     }
//! }
//!
//! # actix_web::rt::System::new().block_on(async {
//! let limit = Limit::new("login", Policy::new(1, Duration::from_secs(60)).unwrap());
//! let limiter = Limiter::builder().store(Down).build(); // falls back to memory
//! let first = limiter.check(&limit, b"ann").await.unwrap();
//! let second = limiter.check(&limit, b"ann").await.unwrap();
//! assert!(first.allowed() && !second.allowed()); // still limited, in this instance
//!
//! let limiter = Limiter::builder().store(Down).on_store_error(OnStoreError::FailClosed).build();
//! assert!(limiter.check(&limit, b"ann").await.is_err()); // a 503 in a handler
//! # });
//! ```
//!
//! # The Redis store in depth
//!
//! ```rust,ignore
//! let limiter = Limiter::builder()
//!     .store(limiter::RedisStore::connect("redis://127.0.0.1:6379").await?) // feature "redis"
//!     .build();
//! ```
//!
//! - **One exact budget across instances.** Each request is decided by one call to Redis,
//!   whatever the number of its limits (on a cluster, one per node its keys live on; a new
//!   client's first check, a plain write: below): atomic, stacked limits all or nothing,
//!   the same rules and the same decisions as the in-memory store (the tests replay random
//!   schedules, stacks and policies at their bounds through both). On Redis 7 and Valkey
//!   the check is a function library the store loads when it connects (`FUNCTION LOAD
//!   REPLACE`, on every primary of a cluster; a load reaches the replicas), called with
//!   `FCALL`: its functions are made once, where a script makes them on every call. A
//!   server that lost it (a restart, `FUNCTION FLUSH`) answers "Function not found", and
//!   the store loads it again and sends the call again. The library is named after the
//!   check's source (`limiter_` and 16 hex digits): two versions side by side in a rolling
//!   deploy each call their own, and an old one stays loaded until removed
//!   (`FUNCTION DELETE limiter_...`; `FUNCTION LIST` shows them, about 150 KB of Redis memory each). A
//!   server that refuses functions (Redis before 7, an ACL or plan without `FCALL` or
//!   `FUNCTION`) gets the check as a script (`EVALSHA`), and so does a call refused before it
//!   ran for want of memory (`maxmemory` with `noeviction`) or of replicas
//!   (`min-replicas-to-write`): a server refuses a function that may write up front, where
//!   it runs a script until its first write, so a flood over its limit is still rejected
//!   there (a new client's check, which must write, fails); one that does not know the script
//!   (after `SCRIPT FLUSH`, a restart, a failover) answers `NOSCRIPT`, and that one check
//!   runs the source with `EVAL`, which caches it there again. Every policy
//!   is computed exactly — `Policy` bounds its numbers to what Lua's doubles hold — so a
//!   configuration is never refused at run time (which would look like an outage).
//! - **Batched under load, exactly.** The checks that arrive while earlier ones are in Redis
//!   go out together: one call for up to 128, one batch in flight on one server (at
//!   most two calls per node on a cluster), nothing held back to fill a batch (an idle store
//!   sends each check at once). A call reads the server's `TIME` once, lists each policy
//!   once, reads all its keys in one `MGET` (one per slot on a cluster) and writes each once
//!   however many of its checks count on it, and decides its checks in order, each all or nothing, exactly
//!   as if each had been sent alone (`tests/redis.rs`: random bursts of 1 to 12 checks decide
//!   as the memory store one by one; 800 concurrent checks of 8 keys take at most 200 calls
//!   and leave each key the exact sequence 29, 28, … 0). When a call fails, the checks still
//!   waiting behind it fail with it and are never sent afterwards, so the fault policy's
//!   answer is not followed by a second count; nor is a check whose caller went away.
//! - **A new client costs Redis one `SET`.** Most checks a busy Redis sees are of clients
//!   it holds nothing for; their answer is known before asking (one unit admitted). On one
//!   server, such a check (one limit without a penalty, one unit) of a key the store has not
//!   sent lately is a plain `SET key STATE NX PX LIFETIME` of the state the script would
//!   write, the batch's in one pipeline, and no script; the batch's other checks that touch
//!   none of those keys (returning clients) go in the same pipeline, one script call after
//!   the writes, so that a batch of both is one round trip. A check that shares a key with a
//!   first check before it (a new client's second request in the same batch), and a first
//!   check whose key exists after all (`NX` wrote nothing: another instance counted that
//!   client), go to the script in a second call, in order. On Redis's clock a first check
//!   counts at the store's reading of it — the latest `TIME` a call brought (at most 250 ms
//!   old, from a call answered within 10 ms) plus the time since: never ahead of the server's clock, behind by at most that round trip, as if the
//!   request had come that much earlier. Receipts carry the reading, so refunds stay exact;
//!   the equivalence tests run through it on the caller's clock, and `tests/redis.rs` checks
//!   the reading against the server's. Every key lives 12 ms longer than its state
//!   matters, so that a key found gone is one whose state stopped mattering by that
//!   reading. Clusters, long logs (more than 128) and calendar quotas keep the script for
//!   every check, and so does a store whose calls take longer than 10 ms (no reading then).
//! - **Sentinel**: `RedisStore::connect_sentinel(&["redis://10.0.0.1:26379"], "limits")`
//!   counts on the master the sentinels name, and asks them again (in a task of its own, at
//!   most every 100 ms) when it refuses writes or cannot be reached; the checks in between
//!   get the fault policy (`tests/redis_sentinel.rs`: a failover, and exactly the budget
//!   left counted on the new master). Masters that need a password, a user, a database or
//!   TLS: build redis's `SentinelClient` with a `SentinelNodeConnectionInfo` saying so and
//!   give it to `RedisStore::from_sentinel` (tested with a password; TLS masters are not
//!   tested here). A password missing or wrong, on any server, is an error when the store
//!   connects, saying so: a server that wants one refuses the script (`unauthenticated
//!   bulk length`) and every check. A store refused its login later (a password changed
//!   under it, a server restarted with another one) fails each check naming that, tries
//!   again at most every 250 ms, and counts again once let in
//!   (`tests/redis_operations.rs`; not a store made `from_manager`, which has no client to
//!   connect again with: redis's manager keeps such a failure for good).
//! - **No long scripts**: Redis runs one script at a time, so none scans: a log of more than
//!   128 instants is a list, whose first instant still in the window is found by galloping
//!   from the oldest and bisecting, one `LINDEX` at a time (a log of 128 or fewer is a packed
//!   string of 4 bytes an instant, read and rewritten whole). A check that drops a full log
//!   of 65,535 instants reads it two dozen times and costs Redis well under a millisecond
//!   (`tests/redis.rs`).
//! - **One clock**: scripts read the Redis server's `TIME`, so instances with skewed clocks
//!   agree. A reading earlier than a key's state (the server's clock stepping back) is counted
//!   at the state's newest instant, as in memory.
//! - **Small, tidy keys**: the fixed window, the counter, the bucket and sliding logs of up
//!   to 128 keep one string of a few packed integers per client, read for a whole call in one
//!   `MGET` and written with its expiry in one `SET PX`. A new client's first check holds
//!   less: a small integer, the key's expiry saying when it was counted (`SET key MARK NX
//!   PXAT EXPIRES`, on the server's clock), which Redis 7.0 keeps in 112 bytes a client and
//!   Valkey 8.0 in 96, name and expiry included (a packed state: 32 to 48 bytes more; the
//!   guide's [performance](super::performance) page has the figures). The expiry is then
//!   part of the state: replication, failovers, RDB and AOF keep it (as an absolute time),
//!   but a copy that moves keys with their time to live (`MIGRATE`, `DUMP`/`RESTORE`
//!   without `ABSTTL`) onto a server whose clock is more than 4 s apart misreads such
//!   states until they expire (a window or two). Every key written
//!   expires when its state stops mattering: a fixed window's end, the end of the counter's
//!   next window, the moment a bucket is full again. A log's expiry is read once per call
//!   and extended only when it falls short (to two windows), so most pushes set none.
//! - **One key layout**: `PREFIX:{CLIENT}LIMIT`, bounded whatever a client sends. `PREFIX`
//!   is `limiter` (`RedisStore::with_prefix` changes it; braces in it are written as
//!   parentheses, so that the client's are the name's hash tag); `CLIENT` the store key's bytes in
//!   unpadded base64url (RFC 4648 §5: `A`–`Z`, `a`–`z`, `0`–`9`, `-`, `_`), or their SHA-1's
//!   (27 characters) when the key is 20 bytes or longer, or empty; `LIMIT` 11 characters of the same
//!   alphabet for 8 bytes of a stable id of (scope, policy) — the first 8 bytes of the
//!   SHA-1 of `SCOPE\nALGORITHM\nMAX\nWINDOW_MS\nBURST`, big-endian, the same on every
//!   platform and compiler. The braces are a Redis Cluster hash tag: a client's states
//!   share a slot. An IPv4 client's name is 28 bytes (`limiter:{NMsAcQc}v0qnzJRcWdg`), the
//!   most that fits Redis's 32-byte allocation with its header: at a million clients the
//!   names are a third of Redis's memory, and the scope's name is not in them for that
//!   reason. `tests/redis.rs` checks the names the store writes against this layout. The
//!   layout is the state format's version: limiter 0.1.0 keeps hashes under
//!   `PREFIX:SCOPE:LIMIT:{CLIENT}`, so during a rolling deploy from 0.1.0 the instances of
//!   each version never read the other's states — each counts its own budget until the 0.1.0
//!   ones are gone (a client may get up to two budgets for one window of the deploy).
//! - **Name your scopes** when budgets live in Redis: without `scope`, a limit's scope is its
//!   handler's module path and name (`my_app::auth::login`, as `module_path!()` writes it —
//!   the same with every compiler), so renaming the crate or moving the handler starts new
//!   budgets, and during a rolling deploy old and new instances count apart. (Two handlers
//!   of one name in one module, in two `impl` blocks say, keep apart by their full paths,
//!   whose form the standard library does not promise: name their scopes.) A named scope
//!   (`scope = "login"`) keeps the budget whatever the code around it does; changing the limit
//!   itself also starts a new budget, by design.
//! - **Load is not an outage.** The timeout (`.store_timeout(...)`, default 50 ms) judges
//!   Redis: each call's answer, never the time a check waits for its turn in the batch queue.
//!   At most 4,096 checks wait; a check that finds the queue full waits for room
//!   (backpressure) instead of failing. The calls run on a thread of the store's own, so a
//!   busy or blocked handler cannot stall them, and a check works from any thread. Nor does
//!   the host's own delay count: when the timer fires, a reply that has arrived is read
//!   first, and the time the store's thread waited for a CPU (Linux counts it per thread;
//!   elsewhere, a timer that fired late by half the timeout or more) is given back to the
//!   call, up to five timeouts of wall time in all. Nor does one late answer prove Redis
//!   down: a call that has had its timeout fails only if Redis, asked on a connection of
//!   the store's own (an `EXISTS` of a key under the store's prefix, which a proxy in front of
//!   Redis must forward where it may answer a `PING` itself: behind a test proxy that
//!   answers `PING` for a Redis gone, a request waited 155 ms with a 100 ms timeout, where
//!   a `PING` probe made it 500), does not answer that within half a timeout either; alive,
//!   the call gets another timeout, up to the same five (a segment lost and sent again, a
//!   virtual machine paused by its host: calls held up 120 ms while Redis answered were
//!   all answered by Redis). A call that goes five timeouts without
//!   an answer while Redis answers probes fails, and its connection is taken for dead (a
//!   balancer or a NAT that dropped the flow without a word, which redis's connection
//!   manager never notices): the next calls go over a new one. The store's connections send
//!   each call at once (`TCP_NODELAY`): with Nagle's algorithm, redis's default, a batch
//!   written in two segments waits 40 ms for Redis's delayed acknowledgement, long enough to
//!   fail calls to a healthy Redis on a busy host; a client you build yourself for
//!   `from_manager` needs it too. A burst of 1,000 concurrent failed logins of one client
//!   over two instances admits exactly 5 of 5, under every fault policy, on an idle and on a
//!   busy host (`tests/adversary`).
//! - **A blip is not an outage.** A call whose connection dropped is sent again at once over a
//!   new one (one `CLIENT KILL`: 50 of 50 requests answered from Redis, none by the fault
//!   policy). A failed check gets the fault policy alone; three failed calls in a row (a call
//!   that fails its hundred checks is one failure) mark Redis down, and then one request per
//!   100 ms tries it while the others get the policy's answer at once; the first answer brings
//!   it back. A call that times out (its probe unanswered too) fails the checks waiting
//!   behind it at once, so a stalled Redis costs each request about one and a half timeouts
//!   (79 ms at the default 50); refunds, resets and concurrency slots are bounded the same
//!   way (a blip's retry shares its call's timeout). A store made `from_manager` has no
//!   client to open the probe's connection with, nor a cluster's one connection a node a
//!   second one: the timeout alone judges those. Each store keeps two connections to a
//!   server (count them against `maxclients` and a plan's limit); the probe's is made with
//!   the other and used every 30 s, so that it is open when a call needs it.
//! - **Faults are a policy**: `.on_store_error(OnStoreError::FallBackToMemory)` (the default:
//!   keep limiting per instance while Redis is away), `FailOpen`, or `FailClosed` (`503` with
//!   `Retry-After: 1`). Falling back, `k` instances admit up to `k × N` behind a balancer;
//!   `.fallback_share(k)` counts `N / k` per instance (rounded up) instead. Losing and
//!   regaining Redis are one `tracing` event each, not one per request.
//! - **Rejections are answered locally, exactly.** A rejection Redis decides says "not
//!   before T" for its limit and key, and nothing any instance does admits that key earlier:
//!   each instance remembers it (bounded: `.rejection_cache(65_536)` by default, `0` turns it
//!   off) and answers that key's requests itself until T, with `Retry-After` counted down —
//!   the answer Redis would give. (A single limit's rejection of one unit: a stack's, whose
//!   other limits' fields may move, and a cost's are asked of Redis each time.) Under a
//!   flood from one client, each instance asks Redis
//!   about once per retry window: 10,000 requests against 5 a minute over two instances make
//!   one write and 6 calls of the check (`tests/redis.rs`, which also replays random schedules over 1 to 3
//!   instances against one memory store: the same decisions). Measured over HTTP, a rejected
//!   flood on Redis runs at 0.95–1.01× the in-memory rejected flood (three runs of
//!   `cargo bench --manifest-path benches/Cargo.toml --features redis --bench http`, rows
//!   `redis_rejecting` and `rejecting`). Kept out, so that nothing makes a
//!   remembered key admissible earlier: costs above 1; any scope that some declaration counts
//!   with `count = "failures"` (the same on every instance: declarations are the program's),
//!   or that this instance has refunded — only handlers (and middlewares) with one plain limit
//!   use it; stacks and handlers with options always ask Redis — and a policy changed at run
//!   time is another limit. A
//!   `reset` forgets this instance's entries at once; other instances answer theirs until
//!   they end (at most the `Retry-After` they announced), so that no client can empty every
//!   instance's cache by getting itself reset. A tool's reset
//!   (`RedisStore::reset_everywhere`, `limiter-cli reset`) also counts one in
//!   `PREFIX:resets`, and every instance then forgets all it remembers within its reading
//!   interval (a second by default; `RedisStore::overrides_every`): a customer support
//!   unblocks is admitted everywhere (`tests/cli.rs`). A check whose rejection was on its
//!   way back from Redis while the reset happened can still be remembered after it.
//! - `RedisStore::connect_lazily(url)` starts even while Redis is down;
//!   `RedisStore::from_manager(...)`/`from_client(...)` take a connection you configured.
//!
//! ## Redis Cluster
//!
//! ```rust,ignore
//! let store = limiter::RedisStore::connect_cluster(&[
//!     "redis://10.0.0.1:6379", // one node is enough to find the others;
//!     "redis://10.0.0.2:6379", // more let the service start while some are down
//! ]).await?;
//! ```
//!
//! - **Each check goes to the node that serves its keys.** A key's slot is its client's hash
//!   tag (`{CLIENT}`), so every limit of one client — a stack of `key = "ip"` limits, say —
//!   lives on one node and is checked there in one atomic script, as on one server. Checks
//!   are batched per node: the checks of every slot a node serves, new clients' included,
//!   go out in one script call, grouped by the store's reading of `CLUSTER SLOTS` (a node
//!   takes declared keys of one slot only: the others are passed as arguments, and the
//!   script reads every slot's keys before it writes, so that a node that no longer serves
//!   one — a resharding — refuses the call unchanged, its checks go one call per slot, all
//!   at once, and the map is read again). `MOVED`
//!   and `ASK` are followed and the slot map refreshed (the `redis` crate's cluster
//!   connection); a replica promoted after a failover has the library already (a load
//!   reaches a primary's replicas). A primary without it (restarted) has it loaded on every
//!   primary at its first call, which is then sent again; while another primary is down
//!   that load fails, and such a call goes as the script's source (`EVAL`, on that node
//!   only), as do the scripts on `NOSCRIPT`.
//! - **Limits of one request on different nodes** (a stack of an `ip` limit and a `user`
//!   limit: two clients, two slots) are one script per node, in turn. A node that rejects
//!   makes the parts counted before it give their units back — at the very reading they were
//!   counted at, so exactly — and the parts after it only read; a node that fails mid-way
//!   fails the request (the store error policy answers it) and the parts counted before it
//!   are given back too. The answers are the memory
//!   store's all-or-nothing ones (`stacks_across_nodes_answer_as_the_memory_store_does`);
//!   between a part's count and its refund a concurrent request may find those units taken:
//!   an error on the side of the limit, never past it. Such stacks cost one round trip per
//!   node, and a rejection up to twice that.
//! - **A node that fails fails its own slots only.** The limiter tracks the store's health
//!   per slot: requests whose state lives on the failed node get the store error policy
//!   (within `store_timeout`; once down, one request per slot per 100 ms tries the node again), every
//!   other client keeps its exact budget on the surviving nodes. For those to keep serving,
//!   set `cluster-require-full-coverage no` on the servers; with Redis's default the whole
//!   cluster refuses commands once it marks a node failed, and every request gets the
//!   policy. With replicas, a failover brings the slots back after `cluster-node-timeout`,
//!   with the state the replica had.
//! - **Tested on a real cluster**: `tests/redis_cluster.rs` starts three masters on free
//!   ports (`redis-cli --cluster create`), replays random schedules and cross-node stacks
//!   against the memory store, runs two instances over 24 clients spread over every node
//!   (exactly 5 of 20 admitted each; a flood of 4,800 more makes at most one call per
//!   client and instance), flushes the scripts on every node, kills a master mid-run (its
//!   clients get `FailClosed`/`FailOpen` within the timeout; the others' budgets stay exact
//!   on both instances), and kills a master that has a replica: once the replica takes over
//!   (a few seconds with `cluster-node-timeout 1000`), the first check it serves runs the
//!   script's source — Redis does not replicate its script cache — and every client's budget
//!   carries on exactly. Replication is asynchronous: units counted in the last moments
//!   before a master fails can be lost with it, and those clients get them back.
//! - `RedisStore::connect_cluster_lazily(nodes)` starts while the cluster is away;
//!   `RedisStore::from_cluster(...)` takes a cluster connection you configured (TLS,
//!   credentials, reading from replicas is not used: every check writes).
//!
//! Two instances, one budget (`examples/redis.rs`):
//!
//! ```text
//! redis-server --port 6390 --save '' --appendonly no &
//! REDIS_URL=redis://127.0.0.1:6390 PORT=8081 cargo run --features redis --example redis &
//! REDIS_URL=redis://127.0.0.1:6390 PORT=8082 cargo run --features redis --example redis &
//! for port in 8081 8082 8081 8082 8081 8082; do
//!   curl -s -o /dev/null -w "$port %{http_code}\n" -X POST http://127.0.0.1:$port/login
//! done   # five 200s in total, then 429, whichever instance answers
//! ```
