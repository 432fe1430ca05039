//! Compile-time checking of `#[rate_limit]`: what compiles, and the message each mistake
//! gets (pinned in `tests/ui/fail/*.stderr`; refresh with `TRYBUILD=overwrite`).

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
