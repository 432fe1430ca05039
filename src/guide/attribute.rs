//! # The attribute in depth
//!
//! - **Checked at compile time.** Every mistake is an error on the offending token with the fix
//!   in words, all of them at once: `MAX` of 0, a bad `per` (`""`, `"1x"`, `"0s"`, `"m"`,
//!   `"30m1h"`, `"8d"`), an unknown or duplicated argument (the valid ones are listed), an
//!   unknown key or algorithm, `burst` without `token_bucket`, a `count` other than `"all"`
//!   or `"failures"`, a `cost` of 0 or above what the limit admits at once, a `dry_run` that
//!   is not `true` or `false`, an `exempt`, `cost` or `policy` function of the wrong type (a
//!   type error on the argument, naming the type it needs), a limit beyond what its
//!   algorithm counts exactly (see [the algorithms](super::algorithms)), a scope given twice in one
//!   stack, a non-`async`, generic or `self` handler. Each policy is built in a `const`, so a
//!   constant `MAX` is held to the same bounds when rustc evaluates it: nothing the attribute
//!   accepts can fail at run time. `tests/ui/fail/*.stderr` pins each message;
//!   `tests/attribute_fuzz.rs` compiles and serves generated attributes (20 in every test run,
//!   150 more with `--ignored`).
//! - **Decided before the extractors.** The generated handler takes the request, decides every
//!   limit, and only then runs your extractors and your function: a rejected request's body is
//!   never parsed (a small one is read and dropped, to keep the connection), and malformed
//!   JSON over the limit gets `429`, not `400`.
//! - **Stacking, as one answer.** Several `#[rate_limit]`s on one handler are all enforced, all
//!   or nothing: a request is counted only if every limit admits it, and a rejected request
//!   costs nothing from any of them (in memory under the locks of all their shards at once; in
//!   Redis in one script). Its `Retry-After` is the time until **every** limit admits it (the
//!   longest wait), and its RateLimit fields list every limit, the ones that did not reject
//!   with what they would still admit. Each limit gets its own name in the fields: the first
//!   the handler's name, the others `NAME-WINDOW` (`"comment"`, `"comment-1d"`).
//! - **Budgets are who they say.** Without `scope`, a limit's budget belongs to its handler
//!   alone, named after its module's path and its name as `module_path!()` writes them
//!   (`my_app::auth::login`, a method's too; with `#2`, `#3` for the limits of a stack): the
//!   same with every compiler, so a toolchain upgrade renames no budget. Two handlers of the
//!   same name in one module (methods of two `impl` blocks, functions in two function
//!   bodies) never share one: they are named by their full paths instead (whose form the
//!   standard library does not promise: give such handlers a `scope`). Handlers that name the same `scope` share one budget, and must give it the same
//!   limit: two limits under one scope are a conflict that `Limiter::builder().build()`
//!   reports at start-up, naming both handlers and their lines (`try_build()` returns it; the
//!   global limiter logs it as an `error` event).
//! - **Composes** with `#[get]`, `#[post]`, `#[route]` above or below it, with
//!   `#[tracing::instrument]` above or below it, under a renamed import (`use
//!   limiter::rate_limit as limit;`), and on methods of an `impl` block that use `Self`. It
//!   keeps the handler's name, visibility, docs, other attributes, return type (`impl
//!   Responder`, `HttpResponse`, `Result<_, E>`), `?` and `return`, and argument patterns. A
//!   handler named in any language (`async fn über()`) is named in the header fields with its
//!   non-ASCII characters percent-encoded (`"%C3%BCber"`).
//! - **Readable.** `examples/expanded/*.rs` shows exactly what each example's handlers become
//!   (checked by `tests/expansions.rs` and compiled as the `expanded` example; refresh with
//!   `LIMITER_BLESS=1 cargo test --test expansions`).
