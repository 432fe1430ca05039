//! # Performance
//!
//! Side by side with the peers a user would pick instead: governor and actix-governor in
//! memory, actix-extensible-rate-limit on Redis. The benchmarks (`benches/`, a workspace of
//! their own) run from the repository's root. On this shared 2-core EPYC VM timings move by
//! about ±10% between runs: read the ratios within a run. A table that holds several runs
//! says so.
//!
//! ## In memory
//!
//! ```text
//! cargo bench --manifest-path benches/Cargo.toml --bench store && python3 benches/ratios.py
//! cargo bench --manifest-path benches/Cargo.toml --bench contention
//! cargo bench --manifest-path benches/Cargo.toml --bench memory
//! cargo bench --manifest-path benches/Cargo.toml --bench overrides
//! ```
//!
//! ns per check, the clock read included, IPv4 keys, medians of three runs (ours / governor's
//! in brackets; governor's own figure moves by up to 2× between runs here):
//!
//! | workload | governor | sliding_window | fixed_window | sliding_window_counter | token_bucket |
//! | --- | --- | --- | --- | --- | --- |
//! | hot key, 1 thread | 29.3 | 27.0 (0.92) | 24.0 (0.82) | 27.3 (0.93) | 25.5 (0.88) |
//! | hot key, 2 threads | 60.1 | 32.4 (0.53) | 35.4 (0.57) | 31.9 (0.56) | 33.0 (0.56) |
//! | 100k keys, 1 thread | 95.5 | 83.6 (0.82) | 47.6 (0.45) | 76.1 (0.62) | 46.8 (0.51) |
//! | 100k keys, 2 threads | 42.1 | 44.3 (0.90) | 33.6 (0.73) | 34.4 (0.84) | 31.3 (0.76) |
//! | rejecting, 1 thread | 25.8 | 25.3 (0.98) | 22.9 (0.89) | 26.5 (1.03) | 24.4 (0.94) |
//!
//! `contention`, 8 threads on the 2 cores, two runs (the worst check is a thread preempted
//! for a scheduler slice, 12 ms here; the 99.9th percentile is 0.2–1 µs):
//!
//! | workload, 8 threads | checks/s | worst check |
//! | --- | --- | --- |
//! | one key, sliding_window | 15.4–16.2 M | 22–25 ms |
//! | one key, token_bucket | 13.5–13.9 M | 29 ms |
//! | 100k keys, fixed_window | 14.9–15.6 M | 12 ms |
//! | 100k keys, token_bucket | 14.3–15.0 M | 12–14 ms |
//!
//! Bytes per key after 1,000,000 distinct IPv4 keys, read by a counting allocator (`memory`):
//!
//! | | bytes/key | × governor |
//! | --- | --- | --- |
//! | governor keyed (`IpAddr`) | 69.2 | |
//! | `fixed_window`, `token_bucket`, `sliding_window_counter` | 33.6 | 0.49 |
//! | `sliding_window`, N = 5, one request per key | 33.6 | 0.49 |
//! | `sliding_window`, N = 5, five requests per key (every log full) | 56.9 | 0.82 |
//!
//! `overrides` (fixed windows, one thread): 26 ns a check with no policy configured, 46 once
//! another scope has one, 53 under its own scope's, 103 while another thread calls
//! `set_policy` without pause.
//!
//! ## Over HTTP
//!
//! ```text
//! cargo bench --manifest-path benches/Cargo.toml --bench http         # ONLY=bare,limiter,... picks variants
//! benches/callgrind.sh bare headers limiter quiet rejecting rejecting_untracked middleware governor
//! ```
//!
//! `benches/callgrind_gate.sh`, which `.ci/run` runs, holds eight of these paths (allowed,
//! fields off, rejected, the middleware, a concurrency slot, every option, a new client per
//! request) to the instructions pinned in `benches/callgrind.pinned`: a path that grows more
//! than 5% fails CI (`PIN=1` re-pins a cost that is meant).
//!
//! Hello world on loopback, one actix worker on CPU 0, the load (32 keep-alive connections)
//! on CPU 1, medians of three alternating rounds, CPU time from the server's `schedstat`
//! (`benches/side_by_side.sh`, one run):
//!
//! | variant | req/s | × bare | µs CPU / request | vs bare |
//! | --- | --- | --- | --- | --- |
//! | bare actix | 187,139 | 1.000 | 5.26 | |
//! | `#[rate_limit]`, limit never reached | 163,123 | 0.872 | 6.02 | +0.76 |
//! | actix-governor middleware (sends no header fields) | 178,087 | 0.952 | 5.50 | +0.24 |
//! | `#[rate_limit]`, every request rejected (429) | 139,501 | 0.745 | 7.02 | +1.76 |
//!
//! The two RateLimit fields are most of the difference with actix-governor, which sends
//! none (bare actix sending them: below, by callgrind). Other rows, from runs of their own (bare actix
//! at 7.7–8.4 µs CPU a request there), as ratios within their run:
//!
//! | variant | × bare | µs CPU / request vs bare | ratio |
//! | --- | --- | --- | --- |
//! | `RateLimit` middleware, limit never reached (two runs) | 0.89–0.95 | +0.32 to +0.85 | 0.89–1.03× actix-governor's middleware |
//! | `#[rate_limit]` with every option: cost, `count = "failures"`, `exempt`, `policy`, a second limit in `dry_run` (two runs) | 0.70–0.78 | +2.1 to +3.3 | 0.75–0.90× the plain attribute |
//! | `#[concurrency_limit(64)]`, limit never reached | 0.80 | +2.25 | 0.87× the plain attribute |
//! | a bucket of 2,000/s with `delay = "1s"`, overrun by 32 connections of one client | | 55 µs per request | 2,005 req/s: the bucket's rate |
//! | `#[rate_limit]` with feature `metrics` and a Prometheus recorder (`--features metrics`, row `metrics`) | | | 0.995× the throughput without, −0.03 µs CPU a request |
//! | rejected form posts on kept-alive connections (`post_kept`) | | | 4.8× the throughput of closing each connection (`post_closed`) |
//!
//! Instructions per request, counted by callgrind (user space only): each server answers
//! 1,000 then 6,000 keep-alive GETs on one connection, the difference over 5,000 is one
//! request; the median of three runs (`benches/callgrind_gate.sh`, whose pins these are).
//! A server's total moved by up to 3% from run to run until the bench stopped making
//! actix-governor's configuration for every variant (governor's clock calibrates itself
//! for a time, and callgrind counted that loop); now two runs agree within 0.03%, but for
//! a flood's 429s, which are built anew each time their `Retry-After` changes, a second at
//! a time (±0.5%). The instructions of the handler's future (actix's, which runs the attribute's decision,
//! the handler and its response; `benches/callgrind.sh` prints them) do not, and show what a
//! change to the decision costs to the instruction. Actix-governor decides in a middleware,
//! outside the handler's future:
//!
//! | variant | instructions / request | in the handler's future |
//! | --- | --- | --- |
//! | bare actix | 18,844 | 779 |
//! | bare actix sending the same two header fields | 22,028 | 3,528 |
//! | `#[rate_limit]`, limit never reached | 22,374 | 4,020 |
//! | `#[rate_limit]`, header fields off | 20,654 | 2,478 |
//! | actix-governor middleware (no fields) | 20,068 | 779 |
//! | `#[rate_limit]`, every request rejected (429) | 23,764 | 4,867 |
//! | `RateLimit` middleware, limit never reached | 22,764 | 1,118 |
//! | `#[rate_limit]` behind a trusted proxy, a new client per request (`MANY=1`; bare 18,488) | 24,398 | 5,864 |
//! | actix-governor keyed by the address actix reads from `X-Forwarded-For` (the extractor its documentation asks for; believes any peer, sends no fields), a new client per request (`MANY=1`) | 23,992 | 779 |
//!
//! The last two side by side (one run, `MANY=1`, the `governor_xff` variant, totals that
//! agree within 0.03% from run to run): bare 18,830, actix-governor with that extractor
//! 24,124 (+5,294), the attribute behind a trusted proxy 24,044 (+5,214: 0.98× as many added
//! instructions, with the rightmost-untrusted walk and the two RateLimit fields, which cost
//! about 350 of them; 1.04× before forwarded dotted quads were read without the general
//! parser).
//!
//! Where a limited request's instructions go (callgrind_annotate on a build with line
//! tables): the store's check about 500 (the key's SipHash about 300 of it, the shard's
//! lock and the sliding log the rest), the address's key 150, the clock 45, finding the
//! `Limiter` in the app data 80, the handler's wrapping and the response's move about 300;
//! with fields on, two fields (about 260 each for actix's header map) and their values. A
//! 429 adds its body, three fields and the summary of rejected clients (about 350, with its
//! events 450); a flood's 429s alike (the same `Retry-After` and fields) are copies of the
//! last one the worker built, its header map copied rather than five fields made and
//! hashed into it (about 1,200 fewer). A new client behind a trusted proxy adds the walk of
//! `X-Forwarded-For` (about 480: two header lookups, the trusted proxies' check, the
//! address read as a plain dotted quad where it is one, else the general way) and the
//! key's first place in the store (about 650).
//!
//! ### On axum, beside tower_governor
//!
//! The same hello world on axum (`benches/axum_serve.rs`, in the http bench: one
//! current-thread runtime on CPU 0, the peer's address from `ConnectInfo` for every
//! variant), beside tower_governor 0.8's `GovernorLayer` keyed by the peer (GCRA, no header
//! fields unless `use_headers`). Instructions per request over bare axum (15,004), callgrind
//! as above (`IN_HANDLER=0 benches/callgrind.sh axum_bare axum_limiter ...`, N1=2000,
//! N2=12000; `MANY=1` for the new clients, bare 14,996). tower_governor's allowed figure
//! moved from +1,179 to +1,466 over three runs; the ratios below take both ends:
//!
//! | load | limiter-axum | tower_governor | ratio |
//! | --- | --- | --- | --- |
//! | allowed, `#[rate_limit]` with no setup (sliding log, two RateLimit fields) | +2,935 to +2,959 | +1,179 to +1,491 (no fields) | 2.0–2.5 |
//! | allowed, its fields off (`ietf_headers(false)`, the limiter `install`ed: `axum_quiet`), one run, bare 14,875 | +1,491 | +1,491 (no fields) | 1.00 |
//! | allowed, the same, its limiter handed over as `Extension(limiter)` | +4,438 | +1,179 to +1,466 | 3.0–3.8 |
//! | allowed, beside tower_governor sending its two `x-ratelimit-*` fields | +2,935 | +4,658 | 0.63 |
//! | allowed, `RateLimitLayer` on the route | +4,282 | +1,179 to +1,466 | 2.9–3.6 |
//! | rejected flood (429; `Extension(limiter)`) | +6,279 | +3,887 | 1.62 |
//! | a new client per request (ours behind a trusted proxy, its limiter `install`ed; its `SmartIpKeyExtractor` believes any peer; bare 14,879) | +5,094 | +3,177 | 1.60 |
//!
//! CPU time added per request over bare axum (µs, five alternating rounds a run; this
//! machine's steal makes each figure move by a factor of two from run to run), two runs
//! with the limiter `install`ed or set up by no one:
//!
//! | load | limiter-axum | tower_governor | ratio |
//! | --- | --- | --- | --- |
//! | allowed, the attribute (two RateLimit fields) | +0.58, +0.59 | +0.22, +0.42 (no fields) | 2.6, 1.4 |
//! | allowed, its fields off | +0.49 (second run) | +0.42 | 1.15 |
//! | allowed, beside tower_governor's own two fields | +0.58, +0.59 | +0.63, +0.59 | 0.91, 1.01 |
//! | rejected flood | +1.06, +1.60 | +21.8, +23.1 | 0.05, 0.07 |
//! | a new client per request | +0.98, +1.19 | +0.55, +0.77 | 1.8, 1.5 |
//!
//! (tower_governor's 429s cost it 3.9k instructions but over 20 µs of CPU each: not looked
//! into.)
//!
//! So: on a rejected flood limiter-axum adds a twentieth of tower_governor's CPU; on the
//! allowed path, like for like, as much as tower_governor: as many instructions with the
//! fields off on both, two thirds of them (and about as much CPU) with both sending
//! fields. With its fields on against tower_governor's none, it adds 1.4–2.6 times as
//! much: the two fields alone (below) cost more than all tower_governor adds. Of
//! tower_governor's own figure, about 1,250 is axum's: a `Router::layer` boxes a clone of
//! each route's service per request. That is also what `Extension(limiter)` costs (a layer
//! too), and what [`limiter_axum::install`](https://docs.rs/limiter-axum) saves: a
//! configured limiter installed as the process's own needs no layer. Where the attribute's
//! instructions go: the two fields about 1,300 (their names hashed into http 1's map, 400;
//! the `RateLimit` value made, 200, and checked, 124; hyper writing them, 216), the store's check about 470,
//! the key about 200, the decision and the extractor's future about 900 (of which 256 are
//! copies of the futures, the request's parts among them). The rejected path
//! has no copy of the last 429 (actix's does).
//!
//! ## On Redis
//!
//! ```text
//! benches/side_by_side.sh          # every load below, the peers and Redis's floors, in one run
//! KEYS=1 benches/script_callgrind.sh peer f2 f3 f4 f5 f1       # Redis instructions, one check a call
//! benches/script_callgrind.sh peer mark set f2 f3 f4 f5 f1     # 16 new clients a call
//! HOT=1 benches/script_callgrind.sh peer f2 f5 f1              # one busy client, 16 a call
//! cargo bench --manifest-path benches/Cargo.toml --features redis --bench redis
//! ```
//!
//! The http bench against actix-extensible-rate-limit (a fixed window in a `MULTI`/`EXEC`
//! per request) on a `redis-server` the bench starts, pinned beside the load; a new client
//! per request is one of 2^20 addresses named by a trusted proxy. Redis CPU from its
//! `schedstat`; the floor is the same key stream as plain pipelined commands (`benches/
//! floor.rs`: `INCR` + `PEXPIRE` for a busy client, `SET NX PX` for new clients) in
//! pipelines as long as the limiter's round trips, over as many keys, sent while the same
//! HTTP load runs against bare actix — Redis shares its CPU with the load generator in the
//! limiter's rounds, and its commands take half the time on an idle one. The http bench's
//! Redis variants (`ONLY=bare,redis,redis_fixed,aerl_redis,redis_many,aerl_many`, three
//! rounds), run on the commit before a check's future shrank from 3,176 bytes to 680 and on
//! the one after, alternating, two runs of each (`redis_many_log` one run of each): each
//! cell is before → after, the two runs side by side. Only the ratios within a run mean
//! anything here (the machine's steal moved bare actix from 6.2 to 6.9 µs a request):
//!
//! | load | throughput × the peer | Redis CPU / request × the peer's | × Redis's floor | checks a round trip | instance CPU over bare × the peer's |
//! | --- | --- | --- | --- | --- | --- |
//! | one busy client, sliding log (the default) | 1.24, 1.27 → 1.31, 1.29 | 0.35, 0.33 → 0.33, 0.34 | 1.66, 1.51 → 1.48, 1.60 | 30 | 0.65, 0.63 → 0.58, 0.60 (+4.30 µs against +7.44) |
//! | one busy client, fixed window | 1.30, 1.27 → 1.33, 1.36 | 0.24, 0.24 → 0.25, 0.24 | 1.13, 1.11 → 1.14, 1.14 | 30 | 0.63, 0.68 → 0.61, 0.56 |
//! | a new client per request, fixed window | 1.17, 1.20 → 1.20, 1.20 | 0.46, 0.47 → 0.44, 0.49 | 1.39, 1.54 → 1.42, 1.48 | 29 | 0.69, 0.68 → 0.67, 0.65 |
//! | a new client per request, sliding log | 1.29 → 1.22 | 0.51 → 0.47 | 1.31 → 1.23 | 29 | 0.57 → 0.61 |
//!
//! Where a busy client's instance CPU went (perf on the worker and the store's thread, then
//! valgrind's DHAT on the allocations): most of the worker's time is the kernel's, sending
//! the responses, as for bare actix; the store's own thread takes about 1.3 µs a request
//! (its socket, the wakes of the callers' workers: about one eventfd write for four checks);
//! the rest is the worker's part of a remote check: 37 allocations a request (DHAT, 32
//! connections, under valgrind's slower pace), against 11 with the in-memory store — the
//! check's futures, its key's name, its arguments, its answer. Each
//! check's future was 3,176 bytes, taken from the allocator's slow path
//! (`malloc_consolidate`) and copied, because it held the path of a check across cluster
//! nodes inline; it is 680 now.
//!
//! Bytes a key for a new client: 119–120, the floor's plain key with an expiry 118 over as
//! many keys (94,000–97,000), the peer's 138. A busy client's checks side by side in one
//! call are one entry of it: its key named once, its units counted at once, one answer for
//! them all.
//! Checks answered on the store's own thread come back to their callers on theirs: after a
//! call of several checks the next call waits, at most as long as that call took, for as
//! many to gather. A returning client among new ones, whose `SET NX` finds its key, goes
//! first in the next batch's round trip rather than in a second call.
//!
//! A new client's first check is one `SET key MARK NX PXAT` (no script); a busy client's
//! checks share a call of the check's function library (`FCALL`; a script where the server
//! takes no functions). Redis instructions per check, Redis 7.0 (`script_callgrind.sh`):
//!
//! | | fixed window | counter | bucket | short log | long log |
//! | --- | --- | --- | --- | --- | --- |
//! | one check a call (`KEYS=1`) | 81,400 | 88,800 | 84,800 | 84,100 | 84,500 |
//! | 16 new clients a call | 28,500 | 28,900 | 29,900 | 28,700 | 49,600 |
//! | one busy client, 16 a call as one entry, mostly rejected (`HOT=1`; the peer 31,300) | 4,300 | | | 6,800 | 5,700 |
//!
//! A new client's first check as the store sends it: 10,200 instructions and 132 bytes of
//! Redis memory on Redis 7.0 (`mark`), against the peer's transaction's 34,500 and 156; on
//! Valkey 8.0 (`REDIS_SERVER=valkey-server`) 9,400 and 116 against 39,900 and 140. On a cluster
//! of three Redis 7.0 masters, 1,200 checks of 600 new clients take 40 calls and 12.3 µs of
//! Redis command time a check, batched per node (`cargo test --all-features --test on_redis
//! new_clients_batch_per_node -- --nocapture` prints them).
//!
//! The store alone (`--bench redis`, two runs: 32 tasks, a key of its own per check, against
//! 32 clients sending one check per call): 27,048–88,400 checks a second, 0.85–2.32× those
//! clients, 2.1–3.2 µs of Redis a check — bound by the round trip, one batch in flight on one
//! server. A sliding log costs Redis 4.4–4.9 bytes an instant up to 128, 10–11 beyond.
