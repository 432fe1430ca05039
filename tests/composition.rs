//! The composition matrix: every pair of the controls — cost, `count = "failures"`,
//! `count = fn`, `block`, `delay`, `#[concurrency_limit]`, `enforce`, `dry_run`, `exempt`,
//! `policy = fn`, a configured override, a stacked limit, a restart (save and restore in
//! memory, a new instance on Redis) — on one handler each, run over actix against a model of
//! what each control promises alone, composed: on the memory store and on Redis, on the
//! caller's clock and on Redis's. It prints the matrix (pairs tried, pairs holding).
//!
//! The base limit is a token bucket of 4 per 4 s (a token a second, which `delay` needs);
//! a client sends 8 requests at one instant, then (on a clock the test moves) 8 more 4 s
//! later. Every third is exempt where `exempt` is on; every odd one's handler fails (500).
//! The model decides each request as the controls promise: a rejected request consumes
//! nothing from any limit and waits for the longest; a block starts when the limit with it
//! rejects, for 20 s or its own wait; a dry run (`dry_run`, `enforce = "0%"`) decides and
//! counts but lets everything through; a count rule gives back the requests it does not
//! count; a per-request policy (6 per 6 s) wins over the override (5 per 5 s, naming its
//! algorithm), and both keep the declared delay and block. Concurrency never binds here (one request at a time):
//! a slot it leaked would show as a refusal.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use crate::common;

use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{test, web, App, HttpRequest, HttpResponse};
use common::header;
use limiter::{concurrency_limit, rate_limit, Clock, Limiter, ManualClock, MemoryStore, Policy};

/// A control of the matrix.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Control {
    Cost,
    Failures,
    CountFn,
    Block,
    Delay,
    Concurrency,
    Enforce,
    DryRun,
    Exempt,
    PolicyFn,
    Override,
    Stacked,
    Restart,
}

/// Two controls on one handler (`/NAME`, main scope `m-NAME`), or why they cannot be.
struct Pair {
    controls: [Control; 2],
    name: &'static str,
    refused: Option<&'static str>,
}

/// Whether the `i`th request of a burst is exempt (with `exempt`), and whether its handler
/// fails.
fn exempt_at(i: usize) -> bool {
    i % 3 == 2
}

fn fails_at(i: usize) -> bool {
    i % 2 == 1
}

fn is_exempt(req: &HttpRequest) -> bool {
    req.headers().contains_key("x-exempt")
}

/// Counts successes only (the opposite of `"failures"`).
fn counts_successes(status: StatusCode) -> bool {
    status.is_success()
}

fn six_per_six_seconds(_: &HttpRequest) -> Option<Policy> {
    "6 per 6s, token_bucket".parse().ok()
}

fn respond(req: &HttpRequest) -> HttpResponse {
    let status = match req.headers().contains_key("x-fail") {
        true => StatusCode::INTERNAL_SERVER_ERROR,
        false => StatusCode::OK,
    };
    HttpResponse::build(status)
        .insert_header(("x-ran", "1"))
        .finish()
}

/// What a request should come to: admitted (its handler ran), or refused with this
/// `Retry-After`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Outcome {
    Ran,
    Refused(u64),
}

/// The controls' promises, composed: one client's state under one pair.
struct Model {
    has: Vec<Control>,
    /// The bucket's theoretical arrival time, ms (GCRA).
    tat: u64,
    blocked_until: u64,
    /// The stacked sliding window's admitted instants.
    log: Vec<u64>,
}

const SECOND: u64 = 1_000;

impl Model {
    fn new(controls: [Control; 2]) -> Model {
        Model {
            has: controls.to_vec(),
            tat: 0,
            blocked_until: 0,
            log: Vec::new(),
        }
    }

    fn on(&self, control: Control) -> bool {
        self.has.contains(&control)
    }

    /// The bucket's capacity (tokens a second stay 1).
    fn capacity(&self) -> u64 {
        match (self.on(Control::PolicyFn), self.on(Control::Override)) {
            (true, _) => 6,
            (false, true) => 5,
            _ => 4,
        }
    }

    /// Request `i` at `t` (ms): what it comes to, and the wait it was delayed by.
    fn step(&mut self, i: usize, t: u64) -> (Outcome, u64) {
        // `exempt`, `dry_run` and `enforce` are options of the limit they are written on
        // (the main one): the stacked limit counts and enforces every request.
        let exempt = self.on(Control::Exempt) && exempt_at(i);
        let enforced = !(self.on(Control::DryRun) || self.on(Control::Enforce));
        let (stack_admits, stack_wait) = self.stacked(t);
        if exempt || !enforced {
            // The enforced limits first, all or nothing; then the main one on trial, on
            // its own (decided and counted, never enforced), unless exempt.
            if !stack_admits {
                return (Outcome::Refused(stack_wait.div_ceil(SECOND)), 0);
            }
            self.count_stacked(t);
            if !exempt {
                match self.main(t) {
                    (true, _, _) => self.count_main(i, t),
                    (false, wait, _) => {
                        self.start_block(t, wait);
                    }
                }
            }
            return (Outcome::Ran, 0);
        }
        let (main_admits, main_wait, delayed) = self.main(t);
        if main_admits && stack_admits {
            self.count_stacked(t);
            self.count_main(i, t);
            return (Outcome::Ran, delayed);
        }
        // A rejection counts nothing; the limit with the block that rejected it itself
        // starts the block, and answers with it.
        let main_wait = match main_admits {
            true => 0,
            false => self.start_block(t, main_wait),
        };
        let wait = main_wait.max(if stack_admits { 0 } else { stack_wait });
        (Outcome::Refused(wait.div_ceil(SECOND)), 0)
    }

    /// The units a request takes, in ms of the bucket.
    fn need(&self) -> u64 {
        let units = if self.on(Control::Cost) { 2 } else { 1 };
        units * SECOND
    }

    /// The main limit at `t`: whether it admits, its wait if not, and a delay if it admits
    /// ahead of its tokens.
    fn main(&self, t: u64) -> (bool, u64, u64) {
        if t < self.blocked_until {
            return (false, self.blocked_until - t, 0);
        }
        let delay = if self.on(Control::Delay) {
            2 * SECOND
        } else {
            0
        };
        let tat = self.tat.max(t) + self.need();
        match tat.saturating_sub(t + self.capacity() * SECOND) {
            0 => (true, 0, 0),
            over if over <= delay => (true, 0, over),
            over => (false, over - delay, 0),
        }
    }

    /// Counts request `i` by the main limit, and gives it back if its count rule does not
    /// count its response.
    fn count_main(&mut self, i: usize, t: u64) {
        self.tat = self.tat.max(t) + self.need();
        let given_back = (self.on(Control::Failures) && !fails_at(i))
            || (self.on(Control::CountFn) && fails_at(i));
        if given_back {
            self.tat -= self.need();
        }
    }

    /// Starts the main limit's block, where it has one and none is in force, after a
    /// rejection with `wait`: the wait the rejection answers.
    fn start_block(&mut self, t: u64, wait: u64) -> u64 {
        if self.on(Control::Block) && t >= self.blocked_until {
            self.blocked_until = t + (20 * SECOND).max(wait);
            return self.blocked_until - t;
        }
        wait
    }

    /// The stacked sliding window (3 per 4 s) at `t`: whether it admits, and its wait.
    fn stacked(&self, t: u64) -> (bool, u64) {
        let window = 4 * SECOND;
        let in_window: Vec<u64> = self
            .log
            .iter()
            .copied()
            .filter(|&at| t < at + window)
            .collect();
        match self.on(Control::Stacked) {
            true if in_window.len() >= 3 => (false, in_window[0] + window - t),
            _ => (true, 0),
        }
    }

    fn count_stacked(&mut self, t: u64) {
        if self.on(Control::Stacked) {
            self.log.push(t);
        }
    }
}

/// Where the budgets live, and whose clock counts them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
enum Setup {
    Memory,
    RedisCallersClock,
    RedisServersClock,
}

impl Setup {
    /// Whether the test moves the clock the limits are counted on.
    fn moves_the_clock(self) -> bool {
        self != Setup::RedisServersClock
    }
}

/// Where the limiter of a pair keeps its budgets: a memory store (saved and restored for a
/// restart) or a Redis server.
enum Budgets {
    Memory(MemoryStore),
    #[cfg(feature = "redis")]
    Redis(String, Setup),
}

impl Budgets {
    async fn limiter<F: limiter_http::Front>(
        &self,
        clock: &ManualClock,
        pair: &Pair,
    ) -> limiter_http::Limiter<F> {
        let builder = limiter_http::Limiter::<F>::builder()
            .clock(clock.clone())
            .store_timeout(Duration::from_secs(2));
        let builder = match self {
            Budgets::Memory(store) => builder.store(store.clone()),
            #[cfg(feature = "redis")]
            Budgets::Redis(url, setup) => {
                let store = limiter::RedisStore::connect(url).await.unwrap();
                let store = match setup {
                    Setup::RedisCallersClock => store.use_caller_clock(),
                    _ => store,
                };
                builder.store(store)
            }
        };
        let limiter = builder.build();
        // Set while serving, as configuration and `limiter-cli set` do.
        if pair.controls.contains(&Control::Override) {
            let policy = "5 per 5s, token_bucket".parse().unwrap();
            limiter.set_policy(&format!("m-{}", pair.name), policy);
        }
        limiter
    }

    /// The budgets after a restart: in memory, what a save and a restore keep.
    fn restarted(self, clock: &ManualClock) -> Budgets {
        match self {
            Budgets::Memory(store) => {
                let file = std::env::temp_dir().join(format!(
                    "limiter-composition-{}-{}.state",
                    std::process::id(),
                    store.identity()
                ));
                let wall = std::time::SystemTime::now();
                store.save_at(&file, clock.now(), wall).unwrap();
                let restored = MemoryStore::new()
                    .restore_at(&file, clock.now(), wall)
                    .unwrap();
                let _ = std::fs::remove_file(&file);
                Budgets::Memory(restored)
            }
            #[cfg(feature = "redis")]
            redis => redis,
        }
    }
}

/// The front end a pair runs on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum FrontEnd {
    Actix,
    Axum,
}

/// One request of a run: to which pair, from whom, exempt or failing.
struct Ask {
    path: String,
    peer: std::net::SocketAddr,
    exempt: bool,
    fails: bool,
}

/// What a request came to, and with which status when it is neither.
type Got = Result<Outcome, u16>;

/// A pair's routes served under a limiter: sends one request and reads its outcome.
type Send = Box<dyn Fn(Ask) -> futures_util::future::LocalBoxFuture<'static, Got>>;

/// The outcome of a response: its handler ran (it says so in `x-ran`), or refused.
fn outcome(status: u16, ran: bool, retry_after: Option<&str>) -> Got {
    match (status, ran) {
        (_, true) => Ok(Outcome::Ran),
        (429, false) => Ok(Outcome::Refused(
            retry_after.and_then(|v| v.parse().ok()).unwrap_or(0),
        )),
        (status, false) => Err(status),
    }
}

impl FrontEnd {
    /// Every pair's route on this front end, under a limiter of `budgets`.
    async fn serve(self, budgets: &Budgets, clock: &ManualClock, pair: &Pair) -> Send {
        match self {
            FrontEnd::Actix => {
                let limiter: Limiter = budgets.limiter(clock, pair).await;
                let app = App::new().app_data(limiter).configure(routes);
                let app = std::rc::Rc::new(test::init_service(app).await);
                Box::new(move |ask: Ask| {
                    let app = app.clone();
                    Box::pin(async move {
                        let mut req = test::TestRequest::get().uri(&ask.path).peer_addr(ask.peer);
                        if ask.exempt {
                            req = req.insert_header(("x-exempt", "1"));
                        }
                        if ask.fails {
                            req = req.insert_header(("x-fail", "1"));
                        }
                        let res = test::call_service(&*app, req.to_request()).await;
                        let ran = header(res.headers(), "x-ran").is_some();
                        outcome(
                            res.status().as_u16(),
                            ran,
                            header(res.headers(), "retry-after"),
                        )
                    })
                })
            }
            FrontEnd::Axum => {
                use tower::ServiceExt;
                let limiter: limiter_axum::Limiter = budgets.limiter(clock, pair).await;
                let router = on_axum_pairs::router().layer(axum::Extension(limiter));
                Box::new(move |ask: Ask| {
                    let router = router.clone();
                    Box::pin(async move {
                        let mut req = axum::http::Request::get(&ask.path);
                        if ask.exempt {
                            req = req.header("x-exempt", "1");
                        }
                        if ask.fails {
                            req = req.header("x-fail", "1");
                        }
                        let mut req = req.body(axum::body::Body::empty()).unwrap();
                        req.extensions_mut()
                            .insert(axum::extract::ConnectInfo(ask.peer));
                        let res = router.oneshot(req).await.unwrap();
                        let text = |name: &str| {
                            res.headers()
                                .get(name)
                                .and_then(|v| v.to_str().ok())
                                .map(str::to_string)
                        };
                        outcome(
                            res.status().as_u16(),
                            text("x-ran").is_some(),
                            text("retry-after").as_deref(),
                        )
                    })
                })
            }
        }
    }
}

/// Runs one pair on `setup` and `front`: each request's outcome against the model's, or
/// the first that differs.
async fn run(
    pair: &Pair,
    setup: Setup,
    front: FrontEnd,
    mut budgets: Budgets,
    client: &str,
) -> Result<(), String> {
    let clock = ManualClock::starting_at(Duration::from_secs(1_000));
    let mut model = Model::new(pair.controls);
    let mut send = front.serve(&budgets, &clock, pair).await;
    let phases = if setup.moves_the_clock() { 2 } else { 1 };
    // The model's clock: the manual one, or (on Redis's) the time the delays took.
    let mut t = 0;
    for phase in 0..phases {
        for i in 0..8 {
            if pair.controls.contains(&Control::Restart) && phase == 0 && i == 4 {
                budgets = budgets.restarted(&clock);
                send = front.serve(&budgets, &clock, pair).await;
            }
            let ask = Ask {
                path: format!("/{}", pair.name),
                peer: client.parse().unwrap(),
                exempt: exempt_at(i),
                fails: fails_at(i),
            };
            let got = send(ask)
                .await
                .map_err(|status| format!("request {i}: status {status}"))?;
            let (want, delayed) = model.step(i, t);
            if !setup.moves_the_clock() {
                t += delayed;
            }
            if got != want {
                return Err(format!(
                    "phase {phase}, request {i}: {got:?}, the model says {want:?}"
                ));
            }
        }
        clock.advance(Duration::from_secs(4));
        t += 4 * SECOND;
    }
    Ok(())
}

/// Runs every pair on `setup` at once (each its own scope and client), and prints its
/// column of the matrix: the pairs that hold, those the grammar refuses, those that fail.
async fn matrix(setup: Setup, front: FrontEnd, budgets: impl Fn() -> Budgets) -> Vec<String> {
    let runs = PAIRS.iter().enumerate().map(|(n, pair)| {
        let budgets = budgets();
        async move {
            if pair.refused.is_some() {
                return None;
            }
            let client = format!(
                "198.51.{}.{}:1",
                100 + setup as usize + 10 * front as usize,
                n
            );
            Some(run(pair, setup, front, budgets, &client).await)
        }
    });
    let outcomes = futures_util::future::join_all(runs).await;
    let mut failed = Vec::new();
    let (mut held, mut refused) = (0, 0);
    for (pair, outcome) in PAIRS.iter().zip(outcomes) {
        match outcome {
            None => refused += 1,
            Some(Ok(())) => held += 1,
            Some(Err(why)) => failed.push(format!("{front:?} {setup:?} {}: {why}", pair.name)),
        }
    }
    println!(
        "{front:?}, {setup:?}: {} pairs, {held} hold, {refused} refused by the grammar, {} fail",
        PAIRS.len(),
        failed.len()
    );
    failed
}

/// Prints the matrix: each pair, and what it came to on each setup.
fn print_matrix(rows: &[(&str, Vec<String>)]) {
    let names = [
        "cost",
        "failures",
        "count_fn",
        "block",
        "delay",
        "concurrency",
        "enforce",
        "dry_run",
        "exempt",
        "policy_fn",
        "override",
        "stacked",
        "restart",
    ];
    let mut lines = vec![format!(
        "{:>12} {}",
        "",
        names.map(|n| format!("{:>4.4}", n)).join("")
    )];
    for a in names {
        let mut line = format!("{a:>12} ");
        for b in names {
            let pair = PAIRS
                .iter()
                .find(|p| p.name == format!("{a}_with_{b}") || p.name == format!("{b}_with_{a}"));
            let mark = match pair {
                None => "   .".to_string(),
                Some(pair) if pair.refused.is_some() => "   -".to_string(),
                Some(pair) => {
                    let fails = rows
                        .iter()
                        .filter(|(_, failed)| {
                            failed
                                .iter()
                                .any(|f| f.contains(&format!(" {}:", pair.name)))
                        })
                        .count();
                    match fails {
                        0 => "  ok".to_string(),
                        n => format!("  x{n}"),
                    }
                }
            };
            line.push_str(&mark);
        }
        lines.push(line);
    }
    println!("the composition matrix (ok: holds on every setup; -: refused at compile time; xN: fails on N setups)");
    for line in lines {
        println!("{line}");
    }
}

#[actix_web::test]
async fn every_pair_of_controls_composes() {
    let mut rows = Vec::new();
    for front in [FrontEnd::Actix, FrontEnd::Axum] {
        rows.push((
            "memory",
            matrix(Setup::Memory, front, || Budgets::Memory(MemoryStore::new())).await,
        ));
    }
    #[cfg(feature = "redis")]
    {
        let server = common::redis_server::RedisServer::start();
        for front in [FrontEnd::Actix, FrontEnd::Axum] {
            for setup in [Setup::RedisCallersClock, Setup::RedisServersClock] {
                let url = server.url();
                rows.push((
                    "redis",
                    matrix(setup, front, || Budgets::Redis(url.clone(), setup)).await,
                ));
            }
        }
    }
    #[cfg(not(feature = "redis"))]
    println!("the Redis columns of the matrix run with --features redis");
    print_matrix(&rows);
    let failed: Vec<&String> = rows.iter().flat_map(|(_, f)| f).collect();
    assert!(
        failed.is_empty(),
        "{} runs failed:\n{}",
        failed.len(),
        failed
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// Writes each pair's handler once for both front ends, under the same attributes: on
/// actix here, and on axum in `on_axum_pairs` (over limiter-axum's `rate_limit` and the
/// axum side's `is_exempt`, `counts_successes` and `six_per_six_seconds`), with the router
/// of them all.
macro_rules! pairs {
    ($($(#[$attr:meta])* $name:ident;)*) => {
        $(
            $(#[$attr])*
            async fn $name(req: HttpRequest) -> HttpResponse {
                respond(&req)
            }
        )*

        mod on_axum_pairs {
            #[allow(unused_imports)]
            use super::on_axum::*;
            use limiter_axum::{concurrency_limit, rate_limit};

            $(
                $(#[$attr])*
                async fn $name(headers: axum::http::HeaderMap) -> axum::response::Response {
                    respond(&headers)
                }
            )*

            pub(super) fn router() -> axum::Router {
                axum::Router::new()
                    $(.route(concat!("/", stringify!($name)), axum::routing::get($name)))*
            }
        }
    };
}

/// The controls' functions over axum's types, for the pairs on axum.
mod on_axum {
    use axum::http::request::Parts;
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::{IntoResponse, Response};
    use limiter::Policy;

    pub(super) fn is_exempt(req: &Parts) -> bool {
        req.headers.contains_key("x-exempt")
    }

    pub(super) fn counts_successes(status: StatusCode) -> bool {
        status.is_success()
    }

    pub(super) fn six_per_six_seconds(_: &Parts) -> Option<Policy> {
        "6 per 6s, token_bucket".parse().ok()
    }

    pub(super) fn respond(headers: &HeaderMap) -> Response {
        let status = match headers.contains_key("x-fail") {
            true => StatusCode::INTERNAL_SERVER_ERROR,
            false => StatusCode::OK,
        };
        (status, [("x-ran", "1")]).into_response()
    }
}

// The pairs: each a handler with both controls (see the module's doc).

pairs! {
    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-cost_with_failures",
        cost = 2,
        count = "failures"
    )]
    cost_with_failures;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-cost_with_count_fn", cost = 2, count = counts_successes)]
    cost_with_count_fn;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-cost_with_block",
        cost = 2,
        block = "20s"
    )]
    cost_with_block;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-cost_with_delay",
        cost = 2,
        delay = "2s"
    )]
    cost_with_delay;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-cost_with_enforce",
        cost = 2,
        enforce = "0%"
    )]
    cost_with_enforce;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-cost_with_dry_run",
        cost = 2,
        dry_run = true
    )]
    cost_with_dry_run;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-cost_with_exempt", cost = 2, exempt = is_exempt)]
    cost_with_exempt;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-cost_with_policy_fn", cost = 2, policy = six_per_six_seconds)]
    cost_with_policy_fn;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-cost_with_override",
        cost = 2
    )]
    cost_with_override;

    #[rate_limit(3, per = "4s", scope = "s-cost_with_stacked")]
    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-cost_with_stacked",
        cost = 2
    )]
    cost_with_stacked;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-cost_with_restart",
        cost = 2
    )]
    cost_with_restart;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-failures_with_block",
        count = "failures",
        block = "20s"
    )]
    failures_with_block;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-failures_with_delay",
        count = "failures",
        delay = "2s"
    )]
    failures_with_delay;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-failures_with_enforce",
        count = "failures",
        enforce = "0%"
    )]
    failures_with_enforce;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-failures_with_dry_run",
        count = "failures",
        dry_run = true
    )]
    failures_with_dry_run;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-failures_with_exempt", count = "failures", exempt = is_exempt)]
    failures_with_exempt;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-failures_with_policy_fn", count = "failures", policy = six_per_six_seconds)]
    failures_with_policy_fn;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-failures_with_override",
        count = "failures"
    )]
    failures_with_override;

    #[rate_limit(3, per = "4s", scope = "s-failures_with_stacked")]
    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-failures_with_stacked",
        count = "failures"
    )]
    failures_with_stacked;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-failures_with_restart",
        count = "failures"
    )]
    failures_with_restart;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-count_fn_with_block", count = counts_successes, block = "20s")]
    count_fn_with_block;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-count_fn_with_delay", count = counts_successes, delay = "2s")]
    count_fn_with_delay;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-count_fn_with_enforce", count = counts_successes, enforce = "0%")]
    count_fn_with_enforce;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-count_fn_with_dry_run", count = counts_successes, dry_run = true)]
    count_fn_with_dry_run;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-count_fn_with_exempt", count = counts_successes, exempt = is_exempt)]
    count_fn_with_exempt;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-count_fn_with_policy_fn", count = counts_successes, policy = six_per_six_seconds)]
    count_fn_with_policy_fn;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-count_fn_with_override", count = counts_successes)]
    count_fn_with_override;

    #[rate_limit(3, per = "4s", scope = "s-count_fn_with_stacked")]
    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-count_fn_with_stacked", count = counts_successes)]
    count_fn_with_stacked;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-count_fn_with_restart", count = counts_successes)]
    count_fn_with_restart;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-block_with_delay",
        block = "20s",
        delay = "2s"
    )]
    block_with_delay;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-block_with_enforce",
        block = "20s",
        enforce = "0%"
    )]
    block_with_enforce;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-block_with_dry_run",
        block = "20s",
        dry_run = true
    )]
    block_with_dry_run;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-block_with_exempt", block = "20s", exempt = is_exempt)]
    block_with_exempt;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-block_with_policy_fn", block = "20s", policy = six_per_six_seconds)]
    block_with_policy_fn;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-block_with_override",
        block = "20s"
    )]
    block_with_override;

    #[rate_limit(3, per = "4s", scope = "s-block_with_stacked")]
    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-block_with_stacked",
        block = "20s"
    )]
    block_with_stacked;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-block_with_restart",
        block = "20s"
    )]
    block_with_restart;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-delay_with_enforce",
        delay = "2s",
        enforce = "0%"
    )]
    delay_with_enforce;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-delay_with_dry_run",
        delay = "2s",
        dry_run = true
    )]
    delay_with_dry_run;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-delay_with_exempt", delay = "2s", exempt = is_exempt)]
    delay_with_exempt;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-delay_with_policy_fn", delay = "2s", policy = six_per_six_seconds)]
    delay_with_policy_fn;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-delay_with_override",
        delay = "2s"
    )]
    delay_with_override;

    #[rate_limit(3, per = "4s", scope = "s-delay_with_stacked")]
    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-delay_with_stacked",
        delay = "2s"
    )]
    delay_with_stacked;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-delay_with_restart",
        delay = "2s"
    )]
    delay_with_restart;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-enforce_with_exempt", enforce = "0%", exempt = is_exempt)]
    enforce_with_exempt;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-enforce_with_policy_fn", enforce = "0%", policy = six_per_six_seconds)]
    enforce_with_policy_fn;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-enforce_with_override",
        enforce = "0%"
    )]
    enforce_with_override;

    #[rate_limit(3, per = "4s", scope = "s-enforce_with_stacked")]
    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-enforce_with_stacked",
        enforce = "0%"
    )]
    enforce_with_stacked;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-enforce_with_restart",
        enforce = "0%"
    )]
    enforce_with_restart;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-dry_run_with_exempt", dry_run = true, exempt = is_exempt)]
    dry_run_with_exempt;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-dry_run_with_policy_fn", dry_run = true, policy = six_per_six_seconds)]
    dry_run_with_policy_fn;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-dry_run_with_override",
        dry_run = true
    )]
    dry_run_with_override;

    #[rate_limit(3, per = "4s", scope = "s-dry_run_with_stacked")]
    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-dry_run_with_stacked",
        dry_run = true
    )]
    dry_run_with_stacked;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-dry_run_with_restart",
        dry_run = true
    )]
    dry_run_with_restart;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-exempt_with_policy_fn", exempt = is_exempt, policy = six_per_six_seconds)]
    exempt_with_policy_fn;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-exempt_with_override", exempt = is_exempt)]
    exempt_with_override;

    #[rate_limit(3, per = "4s", scope = "s-exempt_with_stacked")]
    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-exempt_with_stacked", exempt = is_exempt)]
    exempt_with_stacked;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-exempt_with_restart", exempt = is_exempt)]
    exempt_with_restart;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-policy_fn_with_override", policy = six_per_six_seconds)]
    policy_fn_with_override;

    #[rate_limit(3, per = "4s", scope = "s-policy_fn_with_stacked")]
    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-policy_fn_with_stacked", policy = six_per_six_seconds)]
    policy_fn_with_stacked;

    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-policy_fn_with_restart", policy = six_per_six_seconds)]
    policy_fn_with_restart;

    #[rate_limit(3, per = "4s", scope = "s-override_with_stacked")]
    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-override_with_stacked"
    )]
    override_with_stacked;

    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-override_with_restart"
    )]
    override_with_restart;

    #[rate_limit(3, per = "4s", scope = "s-stacked_with_restart")]
    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-stacked_with_restart"
    )]
    stacked_with_restart;

    #[concurrency_limit(1, scope = "c-cost_with_concurrency")]
    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-cost_with_concurrency",
        cost = 2
    )]
    cost_with_concurrency;

    #[concurrency_limit(1, scope = "c-failures_with_concurrency")]
    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-failures_with_concurrency",
        count = "failures"
    )]
    failures_with_concurrency;

    #[concurrency_limit(1, scope = "c-count_fn_with_concurrency")]
    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-count_fn_with_concurrency", count = counts_successes)]
    count_fn_with_concurrency;

    #[concurrency_limit(1, scope = "c-block_with_concurrency")]
    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-block_with_concurrency",
        block = "20s"
    )]
    block_with_concurrency;

    #[concurrency_limit(1, scope = "c-delay_with_concurrency")]
    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-delay_with_concurrency",
        delay = "2s"
    )]
    delay_with_concurrency;

    #[concurrency_limit(1, scope = "c-concurrency_with_enforce")]
    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-concurrency_with_enforce",
        enforce = "0%"
    )]
    concurrency_with_enforce;

    #[concurrency_limit(1, scope = "c-concurrency_with_dry_run")]
    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-concurrency_with_dry_run",
        dry_run = true
    )]
    concurrency_with_dry_run;

    #[concurrency_limit(1, scope = "c-concurrency_with_exempt")]
    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-concurrency_with_exempt", exempt = is_exempt)]
    concurrency_with_exempt;

    #[concurrency_limit(1, scope = "c-concurrency_with_policy_fn")]
    #[rate_limit(4, per = "4s", algorithm = "token_bucket", scope = "m-concurrency_with_policy_fn", policy = six_per_six_seconds)]
    concurrency_with_policy_fn;

    #[concurrency_limit(1, scope = "c-concurrency_with_override")]
    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-concurrency_with_override"
    )]
    concurrency_with_override;

    #[concurrency_limit(1, scope = "c-concurrency_with_stacked")]
    #[rate_limit(3, per = "4s", scope = "s-concurrency_with_stacked")]
    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-concurrency_with_stacked"
    )]
    concurrency_with_stacked;

    #[concurrency_limit(1, scope = "c-concurrency_with_restart")]
    #[rate_limit(
        4,
        per = "4s",
        algorithm = "token_bucket",
        scope = "m-concurrency_with_restart"
    )]
    concurrency_with_restart;
}

fn routes(config: &mut web::ServiceConfig) {
    config
        .route("/cost_with_failures", web::get().to(cost_with_failures))
        .route("/cost_with_count_fn", web::get().to(cost_with_count_fn))
        .route("/cost_with_block", web::get().to(cost_with_block))
        .route("/cost_with_delay", web::get().to(cost_with_delay))
        .route(
            "/cost_with_concurrency",
            web::get().to(cost_with_concurrency),
        )
        .route("/cost_with_enforce", web::get().to(cost_with_enforce))
        .route("/cost_with_dry_run", web::get().to(cost_with_dry_run))
        .route("/cost_with_exempt", web::get().to(cost_with_exempt))
        .route("/cost_with_policy_fn", web::get().to(cost_with_policy_fn))
        .route("/cost_with_override", web::get().to(cost_with_override))
        .route("/cost_with_stacked", web::get().to(cost_with_stacked))
        .route("/cost_with_restart", web::get().to(cost_with_restart))
        .route("/failures_with_block", web::get().to(failures_with_block))
        .route("/failures_with_delay", web::get().to(failures_with_delay))
        .route(
            "/failures_with_concurrency",
            web::get().to(failures_with_concurrency),
        )
        .route(
            "/failures_with_enforce",
            web::get().to(failures_with_enforce),
        )
        .route(
            "/failures_with_dry_run",
            web::get().to(failures_with_dry_run),
        )
        .route("/failures_with_exempt", web::get().to(failures_with_exempt))
        .route(
            "/failures_with_policy_fn",
            web::get().to(failures_with_policy_fn),
        )
        .route(
            "/failures_with_override",
            web::get().to(failures_with_override),
        )
        .route(
            "/failures_with_stacked",
            web::get().to(failures_with_stacked),
        )
        .route(
            "/failures_with_restart",
            web::get().to(failures_with_restart),
        )
        .route("/count_fn_with_block", web::get().to(count_fn_with_block))
        .route("/count_fn_with_delay", web::get().to(count_fn_with_delay))
        .route(
            "/count_fn_with_concurrency",
            web::get().to(count_fn_with_concurrency),
        )
        .route(
            "/count_fn_with_enforce",
            web::get().to(count_fn_with_enforce),
        )
        .route(
            "/count_fn_with_dry_run",
            web::get().to(count_fn_with_dry_run),
        )
        .route("/count_fn_with_exempt", web::get().to(count_fn_with_exempt))
        .route(
            "/count_fn_with_policy_fn",
            web::get().to(count_fn_with_policy_fn),
        )
        .route(
            "/count_fn_with_override",
            web::get().to(count_fn_with_override),
        )
        .route(
            "/count_fn_with_stacked",
            web::get().to(count_fn_with_stacked),
        )
        .route(
            "/count_fn_with_restart",
            web::get().to(count_fn_with_restart),
        )
        .route("/block_with_delay", web::get().to(block_with_delay))
        .route(
            "/block_with_concurrency",
            web::get().to(block_with_concurrency),
        )
        .route("/block_with_enforce", web::get().to(block_with_enforce))
        .route("/block_with_dry_run", web::get().to(block_with_dry_run))
        .route("/block_with_exempt", web::get().to(block_with_exempt))
        .route("/block_with_policy_fn", web::get().to(block_with_policy_fn))
        .route("/block_with_override", web::get().to(block_with_override))
        .route("/block_with_stacked", web::get().to(block_with_stacked))
        .route("/block_with_restart", web::get().to(block_with_restart))
        .route(
            "/delay_with_concurrency",
            web::get().to(delay_with_concurrency),
        )
        .route("/delay_with_enforce", web::get().to(delay_with_enforce))
        .route("/delay_with_dry_run", web::get().to(delay_with_dry_run))
        .route("/delay_with_exempt", web::get().to(delay_with_exempt))
        .route("/delay_with_policy_fn", web::get().to(delay_with_policy_fn))
        .route("/delay_with_override", web::get().to(delay_with_override))
        .route("/delay_with_stacked", web::get().to(delay_with_stacked))
        .route("/delay_with_restart", web::get().to(delay_with_restart))
        .route(
            "/concurrency_with_enforce",
            web::get().to(concurrency_with_enforce),
        )
        .route(
            "/concurrency_with_dry_run",
            web::get().to(concurrency_with_dry_run),
        )
        .route(
            "/concurrency_with_exempt",
            web::get().to(concurrency_with_exempt),
        )
        .route(
            "/concurrency_with_policy_fn",
            web::get().to(concurrency_with_policy_fn),
        )
        .route(
            "/concurrency_with_override",
            web::get().to(concurrency_with_override),
        )
        .route(
            "/concurrency_with_stacked",
            web::get().to(concurrency_with_stacked),
        )
        .route(
            "/concurrency_with_restart",
            web::get().to(concurrency_with_restart),
        )
        .route("/enforce_with_exempt", web::get().to(enforce_with_exempt))
        .route(
            "/enforce_with_policy_fn",
            web::get().to(enforce_with_policy_fn),
        )
        .route(
            "/enforce_with_override",
            web::get().to(enforce_with_override),
        )
        .route("/enforce_with_stacked", web::get().to(enforce_with_stacked))
        .route("/enforce_with_restart", web::get().to(enforce_with_restart))
        .route("/dry_run_with_exempt", web::get().to(dry_run_with_exempt))
        .route(
            "/dry_run_with_policy_fn",
            web::get().to(dry_run_with_policy_fn),
        )
        .route(
            "/dry_run_with_override",
            web::get().to(dry_run_with_override),
        )
        .route("/dry_run_with_stacked", web::get().to(dry_run_with_stacked))
        .route("/dry_run_with_restart", web::get().to(dry_run_with_restart))
        .route(
            "/exempt_with_policy_fn",
            web::get().to(exempt_with_policy_fn),
        )
        .route("/exempt_with_override", web::get().to(exempt_with_override))
        .route("/exempt_with_stacked", web::get().to(exempt_with_stacked))
        .route("/exempt_with_restart", web::get().to(exempt_with_restart))
        .route(
            "/policy_fn_with_override",
            web::get().to(policy_fn_with_override),
        )
        .route(
            "/policy_fn_with_stacked",
            web::get().to(policy_fn_with_stacked),
        )
        .route(
            "/policy_fn_with_restart",
            web::get().to(policy_fn_with_restart),
        )
        .route(
            "/override_with_stacked",
            web::get().to(override_with_stacked),
        )
        .route(
            "/override_with_restart",
            web::get().to(override_with_restart),
        )
        .route("/stacked_with_restart", web::get().to(stacked_with_restart));
}

/// Every pair of controls, 78 of them.
const PAIRS: &[Pair] = &[
    Pair {
        controls: [Control::Cost, Control::Failures],
        name: "cost_with_failures",
        refused: None,
    },
    Pair {
        controls: [Control::Cost, Control::CountFn],
        name: "cost_with_count_fn",
        refused: None,
    },
    Pair {
        controls: [Control::Cost, Control::Block],
        name: "cost_with_block",
        refused: None,
    },
    Pair {
        controls: [Control::Cost, Control::Delay],
        name: "cost_with_delay",
        refused: None,
    },
    Pair {
        controls: [Control::Cost, Control::Concurrency],
        name: "cost_with_concurrency",
        refused: None,
    },
    Pair {
        controls: [Control::Cost, Control::Enforce],
        name: "cost_with_enforce",
        refused: None,
    },
    Pair {
        controls: [Control::Cost, Control::DryRun],
        name: "cost_with_dry_run",
        refused: None,
    },
    Pair {
        controls: [Control::Cost, Control::Exempt],
        name: "cost_with_exempt",
        refused: None,
    },
    Pair {
        controls: [Control::Cost, Control::PolicyFn],
        name: "cost_with_policy_fn",
        refused: None,
    },
    Pair {
        controls: [Control::Cost, Control::Override],
        name: "cost_with_override",
        refused: None,
    },
    Pair {
        controls: [Control::Cost, Control::Stacked],
        name: "cost_with_stacked",
        refused: None,
    },
    Pair {
        controls: [Control::Cost, Control::Restart],
        name: "cost_with_restart",
        refused: None,
    },
    Pair {
        controls: [Control::Failures, Control::CountFn],
        name: "failures_with_count_fn",
        refused: Some("one `count` rule per limit: a compile error"),
    },
    Pair {
        controls: [Control::Failures, Control::Block],
        name: "failures_with_block",
        refused: None,
    },
    Pair {
        controls: [Control::Failures, Control::Delay],
        name: "failures_with_delay",
        refused: None,
    },
    Pair {
        controls: [Control::Failures, Control::Concurrency],
        name: "failures_with_concurrency",
        refused: None,
    },
    Pair {
        controls: [Control::Failures, Control::Enforce],
        name: "failures_with_enforce",
        refused: None,
    },
    Pair {
        controls: [Control::Failures, Control::DryRun],
        name: "failures_with_dry_run",
        refused: None,
    },
    Pair {
        controls: [Control::Failures, Control::Exempt],
        name: "failures_with_exempt",
        refused: None,
    },
    Pair {
        controls: [Control::Failures, Control::PolicyFn],
        name: "failures_with_policy_fn",
        refused: None,
    },
    Pair {
        controls: [Control::Failures, Control::Override],
        name: "failures_with_override",
        refused: None,
    },
    Pair {
        controls: [Control::Failures, Control::Stacked],
        name: "failures_with_stacked",
        refused: None,
    },
    Pair {
        controls: [Control::Failures, Control::Restart],
        name: "failures_with_restart",
        refused: None,
    },
    Pair {
        controls: [Control::CountFn, Control::Block],
        name: "count_fn_with_block",
        refused: None,
    },
    Pair {
        controls: [Control::CountFn, Control::Delay],
        name: "count_fn_with_delay",
        refused: None,
    },
    Pair {
        controls: [Control::CountFn, Control::Concurrency],
        name: "count_fn_with_concurrency",
        refused: None,
    },
    Pair {
        controls: [Control::CountFn, Control::Enforce],
        name: "count_fn_with_enforce",
        refused: None,
    },
    Pair {
        controls: [Control::CountFn, Control::DryRun],
        name: "count_fn_with_dry_run",
        refused: None,
    },
    Pair {
        controls: [Control::CountFn, Control::Exempt],
        name: "count_fn_with_exempt",
        refused: None,
    },
    Pair {
        controls: [Control::CountFn, Control::PolicyFn],
        name: "count_fn_with_policy_fn",
        refused: None,
    },
    Pair {
        controls: [Control::CountFn, Control::Override],
        name: "count_fn_with_override",
        refused: None,
    },
    Pair {
        controls: [Control::CountFn, Control::Stacked],
        name: "count_fn_with_stacked",
        refused: None,
    },
    Pair {
        controls: [Control::CountFn, Control::Restart],
        name: "count_fn_with_restart",
        refused: None,
    },
    Pair {
        controls: [Control::Block, Control::Delay],
        name: "block_with_delay",
        refused: None,
    },
    Pair {
        controls: [Control::Block, Control::Concurrency],
        name: "block_with_concurrency",
        refused: None,
    },
    Pair {
        controls: [Control::Block, Control::Enforce],
        name: "block_with_enforce",
        refused: None,
    },
    Pair {
        controls: [Control::Block, Control::DryRun],
        name: "block_with_dry_run",
        refused: None,
    },
    Pair {
        controls: [Control::Block, Control::Exempt],
        name: "block_with_exempt",
        refused: None,
    },
    Pair {
        controls: [Control::Block, Control::PolicyFn],
        name: "block_with_policy_fn",
        refused: None,
    },
    Pair {
        controls: [Control::Block, Control::Override],
        name: "block_with_override",
        refused: None,
    },
    Pair {
        controls: [Control::Block, Control::Stacked],
        name: "block_with_stacked",
        refused: None,
    },
    Pair {
        controls: [Control::Block, Control::Restart],
        name: "block_with_restart",
        refused: None,
    },
    Pair {
        controls: [Control::Delay, Control::Concurrency],
        name: "delay_with_concurrency",
        refused: None,
    },
    Pair {
        controls: [Control::Delay, Control::Enforce],
        name: "delay_with_enforce",
        refused: None,
    },
    Pair {
        controls: [Control::Delay, Control::DryRun],
        name: "delay_with_dry_run",
        refused: None,
    },
    Pair {
        controls: [Control::Delay, Control::Exempt],
        name: "delay_with_exempt",
        refused: None,
    },
    Pair {
        controls: [Control::Delay, Control::PolicyFn],
        name: "delay_with_policy_fn",
        refused: None,
    },
    Pair {
        controls: [Control::Delay, Control::Override],
        name: "delay_with_override",
        refused: None,
    },
    Pair {
        controls: [Control::Delay, Control::Stacked],
        name: "delay_with_stacked",
        refused: None,
    },
    Pair {
        controls: [Control::Delay, Control::Restart],
        name: "delay_with_restart",
        refused: None,
    },
    Pair {
        controls: [Control::Concurrency, Control::Enforce],
        name: "concurrency_with_enforce",
        refused: None,
    },
    Pair {
        controls: [Control::Concurrency, Control::DryRun],
        name: "concurrency_with_dry_run",
        refused: None,
    },
    Pair {
        controls: [Control::Concurrency, Control::Exempt],
        name: "concurrency_with_exempt",
        refused: None,
    },
    Pair {
        controls: [Control::Concurrency, Control::PolicyFn],
        name: "concurrency_with_policy_fn",
        refused: None,
    },
    Pair {
        controls: [Control::Concurrency, Control::Override],
        name: "concurrency_with_override",
        refused: None,
    },
    Pair {
        controls: [Control::Concurrency, Control::Stacked],
        name: "concurrency_with_stacked",
        refused: None,
    },
    Pair {
        controls: [Control::Concurrency, Control::Restart],
        name: "concurrency_with_restart",
        refused: None,
    },
    Pair {
        controls: [Control::Enforce, Control::DryRun],
        name: "enforce_with_dry_run",
        refused: Some("`dry_run` and `enforce` are one choice: a compile error"),
    },
    Pair {
        controls: [Control::Enforce, Control::Exempt],
        name: "enforce_with_exempt",
        refused: None,
    },
    Pair {
        controls: [Control::Enforce, Control::PolicyFn],
        name: "enforce_with_policy_fn",
        refused: None,
    },
    Pair {
        controls: [Control::Enforce, Control::Override],
        name: "enforce_with_override",
        refused: None,
    },
    Pair {
        controls: [Control::Enforce, Control::Stacked],
        name: "enforce_with_stacked",
        refused: None,
    },
    Pair {
        controls: [Control::Enforce, Control::Restart],
        name: "enforce_with_restart",
        refused: None,
    },
    Pair {
        controls: [Control::DryRun, Control::Exempt],
        name: "dry_run_with_exempt",
        refused: None,
    },
    Pair {
        controls: [Control::DryRun, Control::PolicyFn],
        name: "dry_run_with_policy_fn",
        refused: None,
    },
    Pair {
        controls: [Control::DryRun, Control::Override],
        name: "dry_run_with_override",
        refused: None,
    },
    Pair {
        controls: [Control::DryRun, Control::Stacked],
        name: "dry_run_with_stacked",
        refused: None,
    },
    Pair {
        controls: [Control::DryRun, Control::Restart],
        name: "dry_run_with_restart",
        refused: None,
    },
    Pair {
        controls: [Control::Exempt, Control::PolicyFn],
        name: "exempt_with_policy_fn",
        refused: None,
    },
    Pair {
        controls: [Control::Exempt, Control::Override],
        name: "exempt_with_override",
        refused: None,
    },
    Pair {
        controls: [Control::Exempt, Control::Stacked],
        name: "exempt_with_stacked",
        refused: None,
    },
    Pair {
        controls: [Control::Exempt, Control::Restart],
        name: "exempt_with_restart",
        refused: None,
    },
    Pair {
        controls: [Control::PolicyFn, Control::Override],
        name: "policy_fn_with_override",
        refused: None,
    },
    Pair {
        controls: [Control::PolicyFn, Control::Stacked],
        name: "policy_fn_with_stacked",
        refused: None,
    },
    Pair {
        controls: [Control::PolicyFn, Control::Restart],
        name: "policy_fn_with_restart",
        refused: None,
    },
    Pair {
        controls: [Control::Override, Control::Stacked],
        name: "override_with_stacked",
        refused: None,
    },
    Pair {
        controls: [Control::Override, Control::Restart],
        name: "override_with_restart",
        refused: None,
    },
    Pair {
        controls: [Control::Stacked, Control::Restart],
        name: "stacked_with_restart",
        refused: None,
    },
];
