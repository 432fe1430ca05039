//! Compile-time checking of `#[rate_limit]`: what compiles, and the message each mistake
//! gets (pinned in `tests/ui/fail/*.stderr`; refresh with `TRYBUILD=overwrite`).
//!
//! What must compile is built into this test, with the rest of the tests. The mistakes go
//! through trybuild, a second cargo that checks the dependencies again (over a minute on a
//! small machine), so it runs with `--ignored` (`.ci/run` runs it); the README's test
//! command checks the words of every mistake without a compiler instead
//! (`limiter-macros/src/mistakes_said.rs`).

#![allow(dead_code)] // each program's handlers are reached only through its `main`
#![allow(clippy::unwrap_used)] // tests: a panic is a failure

#[path = "ui/pass/axum.rs"]
mod axum;
#[path = "ui/pass/concurrency.rs"]
mod concurrency;
#[path = "ui/pass/every_argument.rs"]
mod every_argument;
#[path = "ui/pass/impl_block_paths.rs"]
mod impl_block_paths;
#[path = "ui/pass/penalties.rs"]
mod penalties;
#[path = "ui/pass/quotas.rs"]
mod quotas;

#[test]
fn what_must_compile_compiles_and_runs() {
    axum::main();
    concurrency::main();
    every_argument::main();
    impl_block_paths::main();
    penalties::main();
    quotas::main();
}

/// The pass programs are listed above by hand: one added to `tests/ui/pass/` and not there
/// would never be compiled.
#[test]
fn every_pass_program_is_built() {
    let source = include_str!("ui.rs");
    for entry in std::fs::read_dir("tests/ui/pass").unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        assert!(
            source.contains(&format!("#[path = \"ui/pass/{name}\"]")),
            "tests/ui/pass/{name} is not a module of tests/ui.rs"
        );
    }
}

#[test]
#[ignore = "trybuild checks each mistake's error and where it points with a second cargo: cargo test --test ui -- --ignored"]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
}
