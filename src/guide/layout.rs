//! # Layout of the repository
//!
//! Every folder, and what it holds. Four crates: the facade `limiter` (the root package,
//! `src/`), the engine `limiter-core`, which has no actix-web in its dependency tree, what every
//! front end shares, `limiter-http` (the key logic, the `Limiter` and its settings, a
//! handler's limits, the decision pipeline, the answers' bytes; no web framework in it
//! either), and the proc macro `limiter-macros`. `benches/` is a workspace of its own, which
//! `cargo test --workspace` and `cargo run --example basic` never build.
//!
//! | folder | holds |
//! | --- | --- |
//! | `/` | `Cargo.toml` (the workspace, its shared lints and dependency versions, and the facade package), `README.md`, `CHANGELOG.md`, the licenses |
//! | `src/` | the facade users depend on: `lib.rs` re-exports the engine's items one by one, beside the attribute and the actix glue |
//! | `src/actix/` | the actix glue, one file per concern (its module page lists them): the attribute's runtime, the `RateLimit` and `ConcurrencyLimit` middlewares, `check`, actix's request as the key logic reads it, the RateLimit fields on actix's header map, the 429 and failure responses, concurrency slots, the routes page, mistakes; `front.rs`, the `Actix` front end the shared code is generic over |
//! | `src/guide/` | this guide: one rustdoc page per module |
//! | `src/docs/` | the reference pages of `#[rate_limit]` and `#[concurrency_limit]`, pulled into their rustdoc by `include_str!` |
//! | `src/bin/` | `limiter-cli` (feature `cli`): a fleet's limits, a client's state, resets and overrides, through Redis |
//! | `limiter-core/` | the engine's package: `Cargo.toml` (features `redis`, `redis-tls`, `metrics`) |
//! | `limiter-core/src/` | the engine's root files: `clock.rs`, `decision.rs`, `concurrency.rs`, `registry.rs` (the declared limits, `routes()`), `policy_text.rs` (policies as text), `observe.rs` (the engine's metrics) |
//! | `limiter-core/src/policy/` | what a limit allows: the policy, its calendar periods, its penalty, its errors |
//! | `limiter-core/src/algorithm/` | the four algorithms and the calendar quota, each a pure state machine (state, now, policy → decision), with worked examples as unit tests |
//! | `limiter-core/src/limiter/` | the engine's `Limiter`: its builder, the fault policy and breaker, the in-memory fallback, remembered rejections, concurrency slots, configured overrides and what it applies of a store's readings (`following.rs`) |
//! | `limiter-core/src/store/` | the `Store` trait and what every store shares (`mod.rs`, `receipt.rs`); the in-memory store (`memory.rs`) |
//! | `limiter-core/src/store/memory/` | the in-memory store's parts: fingerprint tables, compact states, sliding logs and their rings, concurrency slots, saving and restoring (`saved.rs`, `save_format.rs`) |
//! | `limiter-core/src/store/memory/shard/` | one shard: its tables, its bounds and evictions, its penalty records |
//! | `limiter-core/src/store/redis/` | the Redis store (feature `redis`): connecting, the check as a function library or a script, batches, calls, new clients' first writes, key names, cluster nodes, deadlines and probes, refunds, slots, overrides, inspection for `limiter-cli`; the Lua sources (`check.lua`, `first_state.lua`, `script_head.lua`, `refund.lua`, `slots.lua`) |
//! | `limiter-core/tests/` | the engine's tests: `engine` (a binary of modules: reference models, late readings, eviction, penalties, restarts, stores, concurrency, boundaries), and `memory` and `memory_bound`, which count every allocation |
//! | `limiter-core/tests/common/` | what those tests share: a counting allocator, schedules of late readings |
//! | `limiter-http/` | the front ends' shared package: who a request's client is and what its responses carry, whatever the framework |
//! | `limiter-http/src/` | trusted proxies and forwarding headers (`proxy.rs`), the client read through the `RequestHead` trait a front end implements (`client.rs`), keys and their namespaces (`client_key.rs`), the forwarding mistakes (`mistakes.rs`), the response fields by name and the `FieldMap` trait a front end implements on its header map (`headers.rs`), the RateLimit fields' bytes (`fields.rs`), the 429's and the failures' bodies and fields (`problem.rs`), the cases every front end runs on its request type and its header map (`conformance/`); the one `Limiter` a service uses, generic over its front end (`limiter/front.rs`, the `Front` trait): its HTTP methods (`limiter/mod.rs`), the engine's methods it delegates (`limiter/engine.rs`), its builder (`limiter/builder.rs`, with the settings in `limiter/settings.rs`), the mistakes made with a limiter (`limiter/mistakes.rs`), the requests waiting their turn (`waiting.rs`); a handler's limits as declared, generic over the front end: each limit's spec and options (`limits.rs`), its concurrency limits (`in_flight_spec.rs`), who is counted (`key_spec.rs`), the `key = fn` and `policy = fn` resolvers, plain or `async` (`resolve.rs`), which responses count (`counts.rs`), a handler's path (`handler_path.rs`); what runs beside the decision, the same for every front end: a limit enforced on a share of its clients (`enforcement.rs`, with `fnv.rs`, the fixed hash of the clients a share takes in), each scope's most rejected clients (`rejected.rs`), a client to reset (`reset.rs`), a rejection's jitter (`jitter.rs`), the decisions as metrics (`observe.rs`, feature `metrics`) |
//! | `limiter-http/src/pipeline/` | the one decision every request runs on every front end, a file per stage: `plan.rs`, `decide.rs`, `answer.rs` (with `delay.rs`, a turn to wait), `settle.rs`; the checks inside a handler waiting in its request (`inline.rs`), and what the pipeline asks a front end to answer with (`respond.rs`, the `Respond` trait) |
//! | `limiter-macros/` | the proc-macro package |
//! | `limiter-macros/src/` | the attribute: parsing (`args.rs`, `ast.rs`, `values.rs`, `key.rs`, `period.rs`, `penalty.rs`, `share.rs`), checks across values (`valid.rs`), the function (`input.rs`), a handler's stack (`stack.rs`), the guarded handler (`expand.rs`), `#[concurrency_limit]` (`in_flight.rs`), every error reported at once (`errors.rs`) |
//! | `examples/` | runnable servers, each small and commented: `cargo run --example NAME` |
//! | `examples/expanded/` | what each example's handlers expand to, checked by `tests/expansions.rs` and compiled as the `expanded` example |
//! | `tests/` | the integration tests: `http` (every HTTP suite, a module per file), `on_redis` (the Redis store, its cluster, Sentinel, TLS, operations and `limiter-cli`), `adversary` (below), and binaries that stand alone for a reason `Cargo.toml` gives (`conflicts`, `mistakes`, `no_mistakes`, `per_request_policies`, `expansions`, `attribute_fuzz`, `ui`, `public_api` with `public_api.txt`, the public surface) |
//! | `tests/common/` | what the integration tests share: a `redis-server` and a Redis Cluster of their own, schedules replayed through both stores, a subscriber that records events |
//! | `tests/adversary/` | the attacks: bodies, faults, isolation, load, refunds, slots, over real HTTP and real Redis servers |
//! | `tests/attribute_fuzz/` | the generated handlers `tests/attribute_fuzz.rs` compiles and serves |
//! | `tests/ui/` | compile-time checks of the attribute, through `tests/ui.rs` |
//! | `tests/ui/pass/` | programs that must compile |
//! | `tests/ui/fail/` | mistakes, each with the `.stderr` its error must match (trybuild with `cargo test --test ui -- --ignored`; their words without a compiler in `limiter-macros/src/mistakes_said.rs`) |
//! | `benches/` | benchmarks beside governor, actix-governor and actix-extensible-rate-limit: `store`, `memory`, `contention`, `http`, `redis`, `overrides`, and the scripts `callgrind.sh`, `callgrind_gate.sh` (with its pins, `callgrind.pinned`), `script_callgrind.sh`, `contention.sh`, `ratios.py` (see [performance](super::performance)) |
//! | `docs/` | the README's picture (`boundary.svg`, drawn by `cargo run --example boundary`) and a screenshot of the routes page |
//! | `.ci/` | `run` (what CI runs: formatting, lints, docs, every test with and without features, the attacks in release), `shape.py` (no function over 80 lines in `src/actix/`, no file over 400 lines of code, no import circle), `install-valkey` |
