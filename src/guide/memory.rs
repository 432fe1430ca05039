//! # The in-memory store
//!
//! - Exact under concurrency: up to 64 shards, each behind a `parking_lot` mutex (a waiter
//!   spins briefly, then sleeps, so a preempted holder is never starved); many threads on one
//!   key admit exactly `N`. A request's stacked limits are decided under the locks of all their
//!   shards at once (taken in order), all or nothing.
//! - A key is a 64-bit SipHash fingerprint under a per-process random secret; its state is 8
//!   bytes; both sit in one 16-byte slot of an open-addressing table, so a lookup reads one
//!   cache line. A check of a key already held allocates nothing.
//! - Self-cleaning, with no call to remember: state is dropped a window after its last use (two
//!   for the counter), as traffic flows; one request every 10 ms also visits the next shard.
//! - **Bounded in keys and bytes**: `MemoryStore::with_bounds(max_keys, max_bytes)` (defaults
//!   1,000,000 keys and 64 MiB: a million keys of any algorithm with `N = 5`), or
//!   `with_max_keys` / `with_max_bytes`. Bytes count the tables and the sliding logs' rings
//!   (`4 × N` bytes per client with two instants or more: a log of 65,535 is 256 KiB), and are
//!   what the process really holds (a counting allocator reads them within 0.1% in
//!   `tests/memory_bound.rs`).
//! - **When full, a newcomer still gets its own exact budget**, and **one limit's flood never
//!   evicts another limit's clients**: room is made by the limit that holds the most — keys
//!   for the key bound; bytes for the byte bound, by halving that limit's table (its states
//!   closest to expiring go) — which is the newcomer's own when the flood is its own. Within a
//!   limit, the state forgotten is the one closest to expiring among eight keys (sampled from
//!   a point clients cannot predict), as nginx's zones drop their oldest state. What eviction
//!   can give away: the forgotten client — of the largest limit, never of one within its
//!   share — starts afresh, which a client rotating its keys gets anyway; nobody is ever
//!   counted in a bucket shared with others. A brute-forcer who floods the search route with
//!   chosen keys to reset their own login block gets nothing: 600,000 requests with chosen
//!   keys on two routes of an 8 MiB store, then 20,000 newcomers on login, reset 0 of 50
//!   blocked clients (`tests/adversary`, and in process at 8 MiB and at the default bounds in
//!   `limiter-core/tests/eviction.rs`). The counter's state knows only its
//!   window, so among keys of one window it cannot tell old from new.
//!   `MemoryStore::evictions()` counts them.
//! - **Limits chosen per request stay bounded**: a `policy` function choosing from many
//!   policies (a number the request carries) makes a limit each; at most 256 are kept per
//!   handler and 4,096 remembered per limiter for `reset` (a `warn` once beyond), and the
//!   store's tables for them count in its bytes and go when empty (`tests/per_request_policies.rs`:
//!   40,000 distinct policies, no growth over the second 20,000).
//! - The default clock is the kernel's coarse monotonic clock: 3 ns a read instead of 23 ns,
//!   resolution 1–4 ms, never backwards. `PreciseClock` and the test `ManualClock` plug into
//!   `Limiter::builder().clock(...)`. See [the guarantees](super::guarantees) for what a tick means.
//!
//! ## A restart is not an amnesty
//!
//! Without more, every deploy or crash hands every client a fresh budget: a brute-forcer
//! blocked on login gets new tries at each restart. Save the store when the server stops and
//! read it back when it starts:
//!
//! ```rust,no_run
//! use actix_web::{web, App, HttpServer};
//! use limiter::{rate_limit, Limiter, MemoryStore};
//!
//! #[rate_limit(5, per = "15m", count = "failures", scope = "login")]
//! async fn login() -> &'static str { "ok" }
//!
//! #[actix_web::main]
//! async fn main() -> std::io::Result<()> {
//!     let state = "/var/lib/my-service/limiter.state"; // readable by the service only
//!     let store = MemoryStore::new().restore_or_empty(state);
//!     let limiter = Limiter::builder().store(store.clone()).build();
//!     HttpServer::new(move || {
//!         App::new().app_data(limiter.clone()).route("/login", web::post().to(login))
//!     })
//!     .bind("127.0.0.1:8080")?
//!     .run()
//!     .await?; // returns after a graceful stop (SIGTERM, SIGINT)
//!     store.save(state)?;
//!     Ok(())
//! }
//! ```
//!
//! - **What is kept**: every state that still counts (expired ones are left out), with the
//!   fingerprints' secret, since the store knows keys only by their fingerprints — so keep
//!   the file where only the service reads it. States that do not fit the restored store's
//!   bounds are left out, as newcomers would be without an eviction.
//! - **Downtime is time gone by**: the file carries the clock reading and the wall time of
//!   the save, and the restore moves every state by what the clocks say passed — a client
//!   blocked for 15 minutes by a store saved 10 minutes ago has 5 left, on the same machine
//!   (whose monotonic clock ran on: states keep their instants exactly) or on another (whose
//!   clock started again: the wall time's downtime is counted, to the millisecond). The
//!   counter's windows are aligned to the clock, so on a new clock its state moves by whole
//!   windows (up to half a window off); the other algorithms move exactly.
//! - **Checked, never trusted blindly**: a versioned format with a hash of its contents and
//!   the fingerprint of a probe key. A damaged file, one of another format version or written
//!   by a build that hashes keys otherwise (std's `DefaultHasher` may change between Rust
//!   releases), or a missing one, is refused with its reason (`RestoreError`), and
//!   `restore_or_empty` then starts empty with a `warn` event (an `info` for a first start):
//!   a wrong state would refuse innocent clients, an empty one only forgives. Never a panic.
//! - **Fast**: a million keys (sliding logs of one instant) written in 38–71 ms and read back in
//!   85–92 ms, 14 bytes a key, in a release build here (`limiter-core/tests/restart.rs`).
//! - **Tested**: random schedules of every algorithm, saved, restored on the clock that ran
//!   on or on another, decide afterwards exactly as the store kept running through the
//!   downtime (`limiter-core/tests/restart.rs`); over HTTP, a blocked client is still refused
//!   after a graceful stop and ten minutes down, with `Retry-After: 300` (`tests/restart.rs`).
//! - `save_at` / `restore_at` take the clock reading and the wall time for a store read with
//!   another clock (a `ManualClock` in tests). The Redis store needs none of this: Redis keeps
//!   the budgets across the service's restarts.
