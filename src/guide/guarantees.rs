//! # Guarantees
//!
//! What holds, exactly, and the test that would catch it breaking:
//!
//! - **Never more than the algorithm's bound, whatever order readings arrive in.** A check
//!   reads the clock, then takes its shard's lock; a worker preempted in between reaches the
//!   store after later readings. A reading earlier than a key's state is counted at the
//!   newest instant that state holds: nothing is dropped, reset or rewound by it, in memory
//!   and in every Redis script. A request is therefore counted at an instant between its
//!   reading and its arrival at the store, and with readings up to `d` older than their
//!   arrival the sliding window admits at most `N` in any interval of `T − d` of arrival time,
//!   the counter `2N`, the fixed window reopens only `T` after the reading that opened it, and
//!   the bucket stays within `B + (interval + d)/I` (`limiter-core/tests/out_of_order.rs`:
//!   the reproductions, random lagging schedules in memory, and eight threads on two cores
//!   that yield between reading the real clock and checking; through Redis,
//!   `lagging_readings_keep_every_bound_in_the_scripts` in `tests/redis.rs`).
//! - **The coarse clock's tick is part of `d`.** A reading is the time of the last tick, up to
//!   one tick (1–4 ms) before the request: two requests counted in one window may be up to one
//!   tick less than `T` apart in real time (`N = 1` per second admits two requests 996.1 ms
//!   apart with a 4 ms tick, and never closer; the test shows it). Whole milliseconds make
//!   `d` at least 1 ms with `PreciseClock`. Within the clock's own readings, the limit is
//!   exact.
//! - **Stacked limits are one answer**, all or nothing, with the longest wait as `Retry-After`
//!   (reference models of stacks on random schedules; Redis equal to memory).
//! - **A block holds, exactly, everywhere** (`block = "15m"`): a client a limit rejects is
//!   refused on every instance until its block ends, `Retry-After` counting it down, and
//!   nothing is counted meanwhile; 200 concurrent requests of one client over two instances
//!   admit exactly the limit, every other one refused with the block's `Retry-After`
//!   (`tests/penalties.rs`); the Redis script decides as the memory store on random
//!   schedules with penalties drawn among the policies (`tests/redis.rs`).
//! - **Bounded memory that is not a denial of service** ([the in-memory store](super::memory)):
//!   keys and bytes bounded, newcomers always counted alone; a full store makes room from the
//!   limit whose keys use the most, so flooding one route never resets another route's
//!   blocked clients (`limiter-core/tests/eviction.rs`, and the attack below).
//! - **Refunds give back exactly what is owed, where it was counted**: a check returns a
//!   receipt (its backend, the instant the store used, when a bucket's tokens come back
//!   anyway), and `count = "failures"` gives back by it — on Redis's clock as on the
//!   caller's (`tests/controls.rs`, and the attacks below).
//! - **Controls compose**: every pair of cost, failures, a count function, block, delay,
//!   concurrency, enforce, dry run, exempt, a policy function, an override, a stack and a
//!   restart decides as each does alone, in memory and on Redis, on both clocks
//!   (`cargo test --all-features --test http composition:: -- --nocapture` prints the matrix).
//! - **Load is not an outage**: the Redis timeout judges each call, not the queue nor a
//!   starved thread; a blip (one dropped connection) is retried; the fault policy answers only
//!   when Redis is shown down: a late call fails only if Redis does not answer a probe on a
//!   connection of its own either (up to five timeouts in all while it does). See
//!   [several instances](super::instances).
//! - **A rejected request never holds a connection**: its body is read only when small and
//!   quick; otherwise the connection closes after the 429 ([common mistakes](super::mistakes)).
//! - **Defaults never refuse an innocent client**: the header your proxy writes is believed
//!   (`X-Forwarded-For` by default), one passed through from a client is reported, never a
//!   `400` ([the keys](super::keys)).
//! - **A restart is not an amnesty**: `MemoryStore::save` at a graceful stop and
//!   `restore_or_empty` at start keep every budget, the downtime counted as time gone by; a
//!   damaged or foreign file starts empty, with its reason ([the in-memory
//!   store](super::memory#a-restart-is-not-an-amnesty)).
//! - **No run-time surprises.** Everything the attribute accepts runs without a panic
//!   (`tests/attribute_fuzz.rs`); every policy is computed exactly by every store; error
//!   responses never show internals.
//! - **Stable names, distinct budgets**: limit ids from a documented encoding; default scopes
//!   from `module_path!()` and the fn's name; handlers never share a budget unless they name
//!   one scope, and one scope never gets two limits.
//!
//! ## Against a client who pushes
//!
//! `tests/adversary` is the standing suite of attacks: real HTTP on loopback, real Redis
//! servers it starts itself (through a proxy that injects latency), every attack bounded in
//! count and time, each asserting the bound and printing the margin. It runs in
//! `cargo test --workspace --all-features` (smaller floods in a debug build) and in release in
//! `.ci/run`; `cargo test --release --all-features --test adversary -- --nocapture` prints the
//! figures. One run (release, this machine):
//!
//! | attack | what holds | measured |
//! | --- | --- | --- |
//! | 1,000 concurrent failed logins of one client over two instances on one Redis, each fault policy, an idle host and three rounds on a busy one (four spinning threads on two cores) | exactly the limit; no 503, no request let through unlimited, while Redis is healthy | 5 of 5 admitted, 995 × 429, 0 other, in all twelve; slowest 47–154 ms in CI, a new client's first check by a plain `SET` and the rest by the script |
//! | one slow call carrying 200 checks | one failure, not an outage | 200 answered by the policy within 86 ms (a timeout and the probe's half); the next 20 from Redis |
//! | Redis: connections killed, slowed past the timeout, paused, killed and restarted, flushed; one connection held up, or dead without a word, while Redis answers | a blip is no outage; a fault costs each request about one and a half timeouts (the timeout, then half of one for a probe on a connection of its own); counting resumes without a restart | `CLIENT KILL`: 50 of 50 answered from Redis; 300 ms slow, paused or killed: every request answered by the policy within 79 ms; back 0.1–0.4 s after Redis is; calls held up 120 ms while Redis answers probes: 10 of 10 and a burst of 200 of 200 answered from Redis; the calls' connection dead without a word: 1 request answered by the policy after 252 ms, the next 9 from Redis over a new connection |
//! | Redis full (`maxmemory`, `noeviction`) while new clients keep coming and one client floods a stacked route, under `FailOpen` | Redis is up: the flood stays rejected by Redis; each refused new client gets the policy alone | 10 of 10 rounds rejected |
//! | 10,000 checks at once on a Redis 20 ms away; a proxy that answers `PING` for a Redis gone | load waits its turn; a proxy's `PING` is no proof of life | 10,000 decided by Redis, none failed, 2.0 s; 155 ms a request at a 100 ms timeout (a `PING` probe: 503 ms) |
//! | a stall while falling back to memory | at most the limit in Redis plus the limit in this instance's memory (`fallback_share(k)`: its share) | 8 of at most 10 (5 + 5); 6 of at most 8 with a share of 2 |
//! | 600,000 chosen keys on two routes of an 8 MiB store, then 20,000 newcomers on login | login's blocked clients stay blocked; the byte bound holds | 0 of 50 reset (control: 0); 8.2 MB held; RSS 8 → 20 MiB |
//! | successes on `count = "failures"`, Redis's own clock, each algorithm | every success given back | 200, 200, 200, 200, then 401, 429, for all four |
//! | a success finishing after its bucket token came back by itself | nothing given back | 429 with Retry-After 5, in memory and on Redis |
//! | a refund across an outage, in either direction | given back to the store that counted | the next failure gets 429 both ways |
//! | an `async` key or policy function that never answers (a database down) | the request waits at most `resolver_timeout`, for all its resolvers together, then is counted by its address under the declared policy; never refused for it | one stuck resolver, and three on one request: given up after the one 30 ms timeout (30–31 ms, tokio's paused clock) |
//! | two handlers of one scope, one counting failures, two instances | no remembered rejection outlives a refund | 200, 429, 200 around the refund |
//! | a refund into a full log of 65,535 instants on Redis | a few reads, never the whole log | 0 `LRANGE`, 18 `LINDEX` per refund |
//! | a running store refused its login when it connects again (a password changed, then put back); a lazy store with a wrong one, then let in | each check fails (by the fault policy) naming the refused login; counting resumes by itself once let in (redis's connection manager keeps such a failure for good; a store made `from_manager` still does) | named from 0.6 s on (the first are redis's retries of the login, 300–600 ms); counting again 0.2 s after the password is back, at most 250 ms |
//! | 1,000 requests at once on a route of eight concurrency slots, in memory and over two instances on one Redis; Redis slowed past the timeout, and killed (its data lost) while eight slots are held and renewed; 200 clients resetting their connection mid-answer | never more running at once than the slots where the store can count them; every slot comes back | at most 8 running; every slot free again after each attack |
//! | a body at 5 bytes/s; 200 of them; a chunked 10 MB body; `Expect: 100-continue` | the 429 at once, the connection closed | 429 after 200 ms; 200 of 200 answered and closed in 2 s; closed after 1.1 s, 1.3 MB in; 100, then 429, closed |
//!
//! What the suite does not show, and so is not promised: a check that times out while Redis
//! holds it may still be counted when Redis runs it (erring on the side of the limit: a
//! stall's three timed-out checks above were counted twice, by the fallback and by Redis);
//! state held only by Redis is lost with Redis (a restarted empty Redis gives every client a
//! fresh budget); and across instances, a reset or a refund on one reaches another's
//! remembered rejections only when those end (at most the `Retry-After` they announced) —
//! except for scopes that refund, which are never remembered.
