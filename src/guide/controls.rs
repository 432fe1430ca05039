//! # Production controls
//!
//! - **A whole scope**: [`RateLimit`](crate::RateLimit) is a middleware with the same
//!   keys, responses and fields: `web::scope("/api").wrap(RateLimit::new(policy))`.
//! - **Exemptions**: `.exempt(["10.0.0.0/8"])`, `.exempt_when(|req| ...)` on the builder,
//!   `exempt = fn` on a limit. Exempt requests are not counted.
//! - **Cost**: `cost = 10` or `cost = fn`; all or nothing; a cost above what the limit ever
//!   admits is a 429 without `Retry-After`.
//! - **Failures only**: `count = "failures"` counts a request when admitted and gives it back
//!   when its response is a success, before the response leaves: exact under concurrency.
//! - **Dry runs**: `dry_run = true`, or `.dry_run(true)` for all: counted, reported, never
//!   enforced.
//! - **Gradual rollouts**: `enforce = "10%"`, `.enforcement("scope", share)` on the builder,
//!   `limiter.set_enforcement(...)` while serving: enforced on that share of the clients, a
//!   dry run for the rest.
//! - **Configuration**: `.policy("scope", policy)` replaces a limit without recompiling;
//!   `limiter.set_policy(...)` while serving; `limiter.reset("scope", Subject::...)` forgets
//!   one client.
//!
//! ```
//! use std::time::Duration;
//! use actix_web::{test, web, App, HttpResponse};
//! use limiter::{rate_limit, Limiter, Policy, Subject};
//!
//! #[rate_limit(5, per = "15m", count = "failures", scope = "login")]
//! async fn login(form: web::Form<std::collections::HashMap<String, String>>) -> HttpResponse {
//!     if form.get("password").is_some_and(|p| p == "correct horse") {
//!         HttpResponse::Ok().finish()
//!     } else {
//!         HttpResponse::Unauthorized().finish()
//!     }
//! }
//!
//! # actix_web::rt::System::new().block_on(async {
//! // From configuration: three failures, not five.
//! let limiter = Limiter::builder()
//!     .policy("login", Policy::new(3, Duration::from_secs(900)).unwrap())
//!     .build();
//! let app = test::init_service(App::new().app_data(limiter.clone()).route("/login", web::post().to(login))).await;
//! let attempt = |password: &str| {
//!     test::TestRequest::post()
//!         .uri("/login")
//!         .set_form([("password", password)])
//!         .peer_addr("203.0.113.7:1".parse().unwrap())
//!         .to_request()
//! };
//! for _ in 0..10 {
//!     assert_eq!(test::call_service(&app, attempt("correct horse")).await.status(), 200);
//! }
//! for _ in 0..3 {
//!     assert_eq!(test::call_service(&app, attempt("guess")).await.status(), 401);
//! }
//! assert_eq!(test::call_service(&app, attempt("correct horse")).await.status(), 429);
//! // Support unblocks the address.
//! limiter.reset("login", Subject::Address("203.0.113.7".parse().unwrap())).await.unwrap();
//! assert_eq!(test::call_service(&app, attempt("correct horse")).await.status(), 200);
//! # });
//! ```
//!
//! # In depth
//!
//! ## A limit over a whole `App` or `Scope`
//!
//! ```rust,ignore
//! use limiter::{KeySpec, Policy, RateLimit};
//! let api = RateLimit::new(Policy::new(100, Duration::from_secs(60))?) // sliding window
//!     .key(KeySpec::Ip)     // the default
//!     .scope("api");        // its name in the header fields and its budget (default "app")
//! App::new().app_data(limiter.clone()).service(web::scope("/api").wrap(api).service(search))
//! ```
//!
//! `RateLimit` is an actix middleware on the same engine: the `Limiter` in the app data
//! (else the global one), the same keys, algorithms, responses, header fields, store and
//! fault policy. A request is decided before any handler or extractor runs: a rejected
//! request's body is never parsed (a small one is read and dropped, to keep the connection;
//! see [common mistakes](super::mistakes)). A request under a wrapped scope and a
//! `#[rate_limit]` handler is checked by both, the middleware first, and its fields list
//! both limits (`RateLimit: "api";r=98;t=60, "search";r=4;t=60`); the middleware's budget
//! counts the request even when the handler's then rejects it, since they are two budgets
//! (`examples/middleware.rs`, `tests/middleware.rs`).
//!
//! ## Browsers: CORS preflights and the wrap order
//!
//! A CORS preflight (`OPTIONS` with `Access-Control-Request-Method`) answered by a CORS
//! layer costs nothing: a browser sends one before the request it asks about, which is
//! counted. A preflight that reaches a limited handler (a route for every method) runs it,
//! and is counted as any request: an `OPTIONS` flood never runs a handler unlimited. The
//! `RateLimit` middleware outside `Cors` counts a preflight and gives it back when the
//! answer is `Cors`'s own (it carries `Access-Control-Allow-Methods`: a handler of your own
//! that answers preflights with it is taken for a CORS layer); `.count_preflights(true)` on
//! the builder keeps those counted too. A preflight is decided as any request there: a
//! client over its budget gets the 429 (without CORS headers, as its requests would), and a
//! `ConcurrencyLimit` outside `Cors` holds a slot while `Cors` answers. With the attribute inside an `actix-cors` app,
//! `Cors` answers preflights itself and puts its headers on the 429. With the `RateLimit` middleware, wrap `Cors` last — actix's last `.wrap` is the
//! outermost — so that the middleware's 429 passes through it and carries
//! `Access-Control-Allow-Origin`; without it a page cannot read `Retry-After`:
//!
//! ```rust,ignore
//! web::scope("/api")
//!     .wrap(RateLimit::new(policy).scope("api"))
//!     .wrap(Cors::default().allowed_origin("https://app.example")
//!         .expose_headers(["retry-after", "ratelimit", "ratelimit-policy"]))
//! ```
//!
//! `tests/cors.rs` (with `actix-cors`): three preflights then three requests against a
//! limit of two admit two; the middleware outside `Cors` counts no preflight unless told;
//! `Cors` outside it puts its headers on the 429.
//!
//! ## Exemptions
//!
//! ```rust,ignore
//! Limiter::builder()
//!     .exempt(["127.0.0.1/32", "10.0.0.0/8"])            // your health checks, your own network
//!     .exempt_when(|req| req.headers().contains_key("x-internal-job"))
//! #[rate_limit(100, per = "1m", exempt = is_admin)]       // per handler: fn(&HttpRequest) -> bool
//! ```
//!
//! An exempt request is not counted and carries no RateLimit fields. `exempt` matches the
//! client address as keys resolve it — behind a trusted proxy, the client the proxy names, not
//! the proxy — and takes addresses or CIDRs (IPv4-mapped IPv6 too); a malformed entry panics at
//! start-up naming it, and `try_exempt` returns the error for lists read from configuration.
//! The builder's exemptions cover every handler and middleware of the limiter; `exempt =` one
//! limit.
//!
//! ## Cost
//!
//! ```rust,ignore
//! #[rate_limit(100, per = "1m", cost = 10)]               // an export costs ten
//! #[rate_limit(1000, per = "1h", cost = batch_size)]       // fn(&HttpRequest) -> u32: the batch it asks for
//! ```
//!
//! A request takes its cost at once, all or nothing, under every algorithm and in both stores
//! (a token bucket's tokens, a window's requests). `RateLimit`'s `r` counts units; a rejected
//! request's `r` says how many are left, so a client can send a smaller batch now, and its
//! `Retry-After` is when its whole cost fits. A computed cost of 0 counts as 1. A cost above
//! what the limit ever admits at once (`MAX`; a bucket's burst) can never be admitted: it gets a
//! `429` **without** `Retry-After` (waiting would not help), whose `detail` says so ("This
//! request costs 150 units, more than the 100 this limit ever allows at once: it can never be
//! admitted."), and nothing is counted. A literal or constant cost above it is a compile error.
//!
//! ## Counting only failures
//!
//! ```rust,ignore
//! #[post("/login")]
//! #[rate_limit(5, per = "15m", count = "failures")]       // five failed logins per quarter hour
//! async fn login(form: web::Form<Login>) -> HttpResponse { /* 200, or 401 */ }
//! ```
//!
//! Only responses with status ≥ 400 use the budget: a person who logs in is never held back,
//! someone guessing passwords gets five tries. It is exact under concurrency: a request is
//! counted when it is admitted, and given back when its response turns out a success (2xx or
//! 3xx) — before that response leaves, so the client's next request finds the budget back.
//! Fifty wrong passwords sent at once therefore get exactly five tries (not fifty, as they
//! would if failures were counted once known); `tests/controls.rs` sends them.
//!
//! A refund is a **receipt**: the check says what it counted — on which store (Redis, or this
//! instance's fallback memory while Redis was away), and the exact instant the store used:
//! the sliding log's instant, the fixed window that counted it, the counter's window, and for
//! the token bucket the instant its tokens come back anyway — and the refund gives back
//! exactly that, there, and only what is still counted. On Redis's own clock as on the
//! caller's; a success that finishes after its tokens came back by themselves gives nothing
//! back (the next request's token is not its to give); a unit counted before an outage is
//! never refunded from the fallback memory, nor the reverse. While the request runs its
//! units count, so concurrent successes may briefly see the budget lower. A scope that any
//! handler counts with `count = "failures"` is never answered from the rejection cache (see
//! [Several instances](super::instances)).
//!
//! ## Penalties: blocking a client that keeps pushing
//!
//! ```rust,ignore
//! #[post("/login")]
//! #[rate_limit(5, per = "1m", block = "15m", penalty = "3 in 1h -> 1d")]
//! async fn login(form: web::Form<Login>) -> HttpResponse { /* ... */ }
//! ```
//!
//! A client this limit rejects is refused outright for 15 minutes: every request meanwhile
//! is a `429` whose `Retry-After` counts the block down, and none is counted, so the block's
//! end finds the budget as the minute left it. A block never ends before the limit would
//! admit the client again (a block shorter than that wait is stretched to it), so a client
//! that waits out its `Retry-After` is admitted, not blocked again. The attribute refuses a
//! `block` no longer than the window (a token's return for a bucket): after a burst, the
//! window's own wait would hide it; a calendar quota takes any block. With `penalty = "3 in 1h
//! -> 1d"`, once three blocks started within an hour, the next one lasts a day. Only the
//! limit that rejects starts its block: in a stack, another limit's rejection starts none.
//!
//! The rules are [`Penalty`](crate::Penalty)'s, the same in memory and on Redis, where the
//! block is a second key beside the client's state (`…:b`, in the same hash slot), read and
//! written by the same atomic script: exact across instances — 200 concurrent requests of a
//! client over two instances admit exactly the limit (`tests/penalties.rs`). The middleware
//! takes one on its policy: `RateLimit::new(Policy::new(100, hour)?.with_penalty(
//! Penalty::block(Duration::from_secs(900))?))`, and so does a policy set by configuration,
//! whose text reads `"5 per 1m, block 15m, 3 in 1h -> 1d"`; a configured policy without a
//! penalty keeps the declared one ([`Policy::over`](crate::Policy::over)).
//!
//! [`Limiter::reset`](crate::Limiter::reset) (and `limiter-cli reset`) lifts a block and
//! forgets the past blocks. The route table shows the penalty in the policy column; the
//! metrics count each refusal by a block as outcome `blocked` of `limiter_decisions_total`
//! and each block started in `limiter_blocks_total`. A blocked client's flood on a handler
//! of one limit costs Redis one call per second per instance: the rejection cache answers a
//! block a second at a time (not until its end, so that a reset made on another instance
//! lifts it within a second); stacked limits, costs above one and handlers with a
//! concurrency limit (whose slot is taken before the rates) ask Redis each time.
//! In memory a block is a record of 32 to 160 bytes beside the client's state, dropped when
//! it no longer matters; the records have a budget of their own, a quarter of the store's
//! bytes ([`MemoryStore::side_bytes`](crate::MemoryStore::side_bytes)): about 350 blocks per
//! MiB of `max_bytes`, 22,000 with the default 64 MiB. A flood of blocked clients never
//! evicts another limit's counts: beyond that room, the record whose block ends first among
//! a few goes, freeing that client early (`limiter-core/tests/penalties.rs` blocks 50,000).
//! A restart lifts no block: [`MemoryStore::save`](crate::MemoryStore::save) writes the
//! records beside the counts (a file without block records is read as holding none).
//!
//! ## Slowing down instead of refusing
//!
//! ```rust,ignore
//! #[rate_limit(10, per = "1s", algorithm = "token_bucket", delay = "2s")]
//! async fn search(/* ... */) -> HttpResponse { /* ... */ }
//! ```
//!
//! A request the bucket would refuse, but whose tokens come back within 2 s, takes them
//! now — ahead, so that the bucket holds its place — and waits for them, then runs (nginx's
//! `burst` with `delay`); one that would wait longer gets its 429 at once. A burst of 35 at
//! 10/s with a bucket of 10: 10 run at once, 20 at 100 ms, 200 ms, … 2 s (each at the
//! instant its token is back, to the timer's millisecond), 5 are refused
//! (`tests/delay.rs`, in memory and over two instances on Redis). Only the token bucket
//! says exactly when a refused request would be admitted and can hold its place (the
//! windows would need their next window's count): `delay` with another algorithm is a
//! compile error.
//!
//! The wait is a timer, not a thread. The requests waiting at once are bounded,
//! [`LimiterBuilder::most_waiting`](crate::LimiterBuilder::most_waiting) (1,024 by default),
//! and budgeted per limit: with the line full, a limit holding fewer than its share (the
//! bound over the limits waiting) still gets a place, so one limit's flood never takes
//! another's (at most twice the bound in all). Beyond that one more is refused at once, its
//! place given back: a 429 whose `Retry-After` is the wait
//! it would have had, with the RateLimit fields of every limit of the handler as they stand
//! once its units are back, counted, traced and listed among the scope's rejected clients
//! as any rejection is. Per client the delay bounds them (`delay / interval` places ahead).
//! A request that goes away while it waits gives its place back, exactly, by its receipt —
//! the next one waits as long as it would have. A limit checked inside a handler
//! ([`check`](crate::check)) waits its turn the same way.
//!
//! ## Requests in flight: concurrency limits
//!
//! ```rust,ignore
//! #[post("/export")]
//! #[concurrency_limit(2, key = "user")]    // two exports of one user running at once
//! #[rate_limit(20, per = "1h", key = "user")]
//! async fn export(/* ... */) -> HttpResponse { /* slow */ }
//! ```
//!
//! A rate says how often; a concurrency limit says how many at once — what protects a slow
//! endpoint (an export, a report, an upload) from one client's parallel requests. A request
//! takes a slot before its rates are decided (a request refused for concurrency takes
//! nothing from them) and holds it until its response's body is sent; the slot is a guard
//! ([`SlotGuard`](crate::SlotGuard)) that gives itself back when dropped, so a rate
//! limit's 429, an extractor's error, a panic and a streaming body cut short all give it
//! back (`tests/concurrency.rs` runs each); so does a request dropped after the store
//! granted its slot and before it read the answer (on Redis the answer itself is a guard).
//! A client that hangs up does not stop its handler: actix's HTTP/1 keeps a running handler
//! to its end, and the handler holds its slot until then — the slot is taken by what runs.
//! A delayed request that has not started its handler gives its place back when dropped. Refused: `429`,
//! `Retry-After: 1`, `RateLimit-Policy: "NAME";q=2;qu="concurrent-requests"`.
//!
//! On Redis a slot is a lease (a sorted set per client and limit, scored by expiry), taken
//! by one script, renewed every 10 s while the request runs and removed when it ends; an
//! instance that dies holding slots holds them until their leases expire, 30 s by default
//! ([`RedisStore::lease`](crate::RedisStore::lease)). 200 requests of one user over two
//! instances never run more than the limit at once. A handler can take slots itself with
//! [`Limiter::acquire`](limiter_core::Limiter::acquire). The route table lists each as `2 in
//! flight`. Over a whole `App` or `Scope`, the middleware
//! [`ConcurrencyLimit`](crate::ConcurrencyLimit) does the same: `web::scope("/upload")
//! .wrap(ConcurrencyLimit::new(2).key(KeySpec::User).scope("uploads"))`.
//!
//! Handlers (and middlewares) that name one concurrency `scope` share its slots, and must
//! give it the same limit: two limits under one scope are an `error` event when the limiter
//! is built (a middleware's, when it is made), naming both and their lines, and each keeps a
//! pool of its own until they agree. (Not a `try_build` error, whose `ScopeConflict` names
//! rate policies.) A refused request gives its slots back before its body is awaited.
//!
//! ## Dry runs
//!
//! `#[rate_limit(..., dry_run = true)]` on one limit, or `Limiter::builder().dry_run(true)` for
//! all: every decision is made and counted as usual, a would-be rejection is let through with a
//! `warn` event (`rate limit (dry run): this request would have been rejected`, with the
//! `scope`, the `key` kind and `retry_after_secs`), and the response carries the RateLimit
//! fields as if enforced. A `delay` on trial makes nobody wait: a request it would have
//! delayed runs at once, with a `warn` event of its own (`rate limit (dry run): this request
//! would have waited its turn`, with `wait_ms`). For rolling a new limit out: watch the
//! events, then remove `dry_run`. In a stack, the enforced limits decide together (all or
//! nothing) and each limit on trial is counted on its own.
//!
//! ## Rolling a limit out gradually
//!
//! A dry run is all or nothing. `#[rate_limit(100, per = "1m", enforce = "10%")]` (or
//! `RateLimit::new(policy).enforce(share)` on the middleware) enforces the limit on a tenth
//! of the clients and is a dry run for the others: their would-be rejections pass, counted
//! as `dry_run` in `limiter_decisions_total` (the enforced ones as `rejected`), with the dry
//! run's `warn` event and a response field naming the limits that let them through (sent
//! beside the IETF fields, so `.ietf_headers(false)` leaves it out too):
//!
//! ```text
//! X-RateLimit-Dry-Run: "search"
//! ```
//!
//! Watch the events and metrics, raise the share, then remove `enforce`. The share is set
//! per scope by configuration, over what the attribute declares, and changed while serving:
//!
//! ```rust,ignore
//! let limiter = Limiter::builder()
//!     .enforcement("search", Share::percent(10.0)?)   // or "10%".parse()?
//!     .build();
//! limiter.set_enforcement("search", Share::percent(50.0)?);   // from the next request on
//! ```
//!
//! - **Which clients**: a fixed hash of the scope and the client's key (its address, its
//!   /56, its user id, its header value) against the share: a client is in or out on every
//!   request and on every instance of a fleet, so that nobody sees a limit flap between
//!   requests or instances, and raising the share only adds clients (the 10% stay in at
//!   50%). Each scope chooses apart. Shares go to a millionth of the clients (`"0.0001%"`).
//! - **Measured** (`tests/rollout.rs`): at `enforce = "10%"`, 996 of 10,000 clients were
//!   enforced, the same 996 on two instances with stores of their own (the test's tolerance is
//!   8.5–11.5%, five standard deviations); configured 5% → 50% → 100% over 4,000 clients
//!   enforced 199 → 1,969 → 4,000, each set inside the next; over HTTP, two instances sharing
//!   a budget refused or let through each client alike.
//! - A limit below 100% leaves the handler's lean path (like any option); `.dry_run(true)` on
//!   the builder still enforces nothing anywhere. It is a rollout tool, not a boundary: the
//!   clients outside the share are not limited, and an attacker who can choose their key (a
//!   header value) could choose one outside it.
//!
//! ## Limits from configuration, changed while running
//!
//! ```rust,ignore
//! let limiter = Limiter::builder()
//!     .policy("login", Policy::new(10, Duration::from_secs(60))?)  // from your configuration file
//!     .build();
//! limiter.set_policy("login", Policy::new(20, Duration::from_secs(60))?);   // while serving
//! limiter.reset("login", Subject::Address(ip)).await?;                      // unblock a customer
//! ```
//!
//! - `.policy(scope, policy)` replaces the limit of every handler and middleware whose scope is
//!   `scope` (give the limits you mean to configure a `scope =`): the attribute's limit is the
//!   default a deployment overrides without recompiling. `limiter.policy(scope)` reads it back.
//!   A policy made by `Policy::new` sets the numbers and keeps each declared limit's algorithm
//!   (a `fixed_window` route stays a fixed window); `Policy::for_algorithm` replaces it too.
//! - `set_policy` takes effect on the next request, on every worker; requests read a snapshot
//!   (an `arc-swap` load — no lock — and nothing at all until some policy is set). A scope under
//!   a new policy starts a new budget: clients start afresh. Measured through the in-memory
//!   store (`cargo bench --manifest-path benches/Cargo.toml --bench overrides`, fixed windows, one thread): a check takes 26 ns
//!   with no policy set, 46 ns once some other scope has one (the snapshot and a map lookup),
//!   53 ns under its own scope's, and 103 ns while another thread calls `set_policy` without
//!   pause — slower, never blocked.
//! - `reset(scope, subject)` forgets one client's state under every limit of the scope (as
//!   declared, as configured, and under every plan), in memory and in Redis. `Subject` names the
//!   client as a key of that kind counts it: `Address(ip)`, `User(id)`, `Header(value)`,
//!   `Function(value)`, `Checked(value)` (a key given to `limiter::check`), `Global`.
//!   `clear_policy(scope)` takes a configured policy back: the declared limit again.
//! - **A whole fleet, without a deploy** (the Redis store): every limiter over a
//!   `RedisStore` reads the hash `PREFIX:overrides` (scope → policy as text, the form a
//!   policy prints in: `"10 per 1m"`, `"100 per 1s, token_bucket, burst 20"`) every second
//!   and applies what changed; a scope removed from it goes back to its declared limit:
//!
//!   ```text
//!   redis-cli HSET limiter:overrides login "20 per 1m"    # every instance within a second
//!   redis-cli HDEL limiter:overrides login                # back to the attribute's limit
//!   ```
//!
//!   `RedisStore::overrides_every(Some(interval))` changes the interval, `None` turns it
//!   off; a text that is not a policy is reported once (`warn`) and left out (the last
//!   good policy stays), and while Redis is away what was applied stays; removed, a scope
//!   gets back the policy it had before (declared or configured). Whoever can write the
//!   hash sets the fleet's limits: give the service's Redis user read access to it only. Measured in `tests/redis_operations.rs`: two running
//!   instances reading every 100 ms announced the new quota within 118 ms and counted one
//!   budget of it between them; removed, the declared limit was back within 96 ms. Each
//!   reading is one `HGETALL` of a small hash per instance.
//!
//! ## Plans: per-request policies
//!
//! ```rust,ignore
//! #[rate_limit(10, per = "1h", key = "user", policy = plan)]   // free: 10 an hour
//! async fn reports() -> impl Responder { /* ... */ }
//!
//! fn plan(req: &HttpRequest) -> Option<Policy> {               // None keeps the attribute's
//!     match plan_of(req)? { Plan::Pro => Policy::new(1000, HOUR).ok(), Plan::Free => None }
//! }
//! ```
//!
//! Each policy has its own budget for the same scope and key: they never mix. A user upgraded
//! mid-window starts the new plan's budget, and finds the old one's state again if downgraded
//! within the window. As with configuration, a plan made by `Policy::new` is counted by the
//! attribute's algorithm. The header fields name the plan's policy (`RateLimit-Policy:
//! "reports";q=1000;w=3600`). `examples/tiers.rs` reads the free plan from configuration too.
//! The middleware chooses the same way:
//! `RateLimit::new(free).scope("api").resolve_policy(Resolver::new(plan))`.
//!
//! ## Keys and plans from a database: `async` resolvers
//!
//! ```rust,ignore
//! #[rate_limit(100, per = "1m", key = tenant, policy = plan)]
//! async fn api() -> impl Responder { /* ... */ }
//!
//! async fn tenant(req: &HttpRequest) -> Option<String> {       // None: the address
//!     let key = req.headers().get("x-api-key")?.to_str().ok()?;
//!     Some(CACHE.tenant_of(key).await?.id)
//! }
//! async fn plan(req: &HttpRequest) -> Option<Policy> { /* ... */ } // None: the declared 100/min
//! ```
//!
//! `key = path` and `policy = path` take an `async fn(&HttpRequest) -> Option<...>` as
//! well as a plain `fn`; the compiler tells them apart, and a function of neither kind is a
//! compile error on its path that says which two are meant. The middleware takes the same:
//! `RateLimit::new(policy).key(KeySpec::Resolved(Resolver::new(tenant)))`, and
//! `#[concurrency_limit]` keys too.
//!
//! - **Timeout**: a request's resolvers — its keys and plans, rate and concurrency limits —
//!   get `LimiterBuilder::resolver_timeout` (100 ms by default) between them. One still
//!   running then is given up, with a `warn` event (at most one a second), and counts as
//!   `None`: the client's address for a key, the declared policy for a plan. A slow or
//!   failing database never refuses a request by itself, and holds it at most the timeout.
//!   A resolver that panics fails its request as a plain function's panic does.
//! - **Once per request**: limits that name one `async fn` (a per-second and a per-day
//!   limit of a tenant, its concurrency limit) ask it once, and count by that one answer.
//!   (A fn pointer or a closure that captures values is asked for each limit: values of
//!   its type may be different functions.)
//! - **Cost**: a plain function is called in place (no future, no allocation). An `async` one costs its
//!   request one boxed future (an allocation) and the timer of its timeout, besides what it
//!   does itself; it takes the request off the lean path (one limit, as declared), so put a
//!   cache in front of the database — the limiter calls it on every request, rejected ones
//!   included. Measured in `tests/resolvers.rs`: a tenant's two API keys over two instances
//!   on one Redis, 100 concurrent requests, exactly its plan's 4 admitted; a resolver stuck
//!   for an hour given up after the 30 ms timeout it was given, its request counted by
//!   address; three stuck resolvers of one request given up together after the one 30 ms.
//! - The route table shows `async-function` for such a key and `policy=async-fn`.
//!
//! ## Limits decided inside the handler
//!
//! A key function sees only the request before its extractors run: the username of a login form
//! cannot be one. Check it inside the handler, once it is known:
//!
//! ```rust,ignore
//! static PER_USERNAME: Limit = Limit::constant("login-username", FIVE_PER_15_MIN); // a const Policy
//!
//! #[post("/login")]
//! #[rate_limit(30, per = "1m")]                                   // per address, before the body is read
//! async fn login(req: HttpRequest, form: web::Form<Login>) -> Result<HttpResponse, Rejected> {
//!     limiter::check_failures(&req, &PER_USERNAME, &form.user).await?;  // failed logins per username
//!     // ...
//! }
//! ```
//!
//! `limiter::check(&req, &LIMIT, key)` counts every request, `check_failures` only those whose
//! response fails (taken back, as `count = "failures"` does, by the `#[rate_limit]` or
//! `RateLimit` around the handler). `Err(Rejected)` is the limiter's 429 (or your
//! `rejection_response`), with `Retry-After`, or the `503` of a store that failed closed; `?`
//! returns it. The limit joins the response's RateLimit fields after the handler's own
//! (`"login";r=29;t=60, "login-username";r=4;t=900`). Its key lives in a namespace of its own
//! (the username "10.0.0.1" never shares an address's budget), and configuration overrides its
//! scope's policy as for any other, and so do `.dry_run(true)` and a scope's configured
//! `.enforcement(...)` share (a would-be rejection passes with its `warn` event, a would-be
//! wait does not wait). `examples/login_failures.rs` puts it together: failed attempts per
//! address and per username.
//!
//! `limiter.client(&req)` says which client a request is counted as when keyed by address — the
//! peer, or the client a trusted proxy named (`Client::Address`, `Client::Obfuscated`) — for
//! logs and for checking a proxy setup.
