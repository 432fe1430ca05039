//! `docs/boundary.svg` is what `examples/boundary.rs` draws from the algorithms as they are:
//! redrawn here, it must equal the committed file (refresh it with `cargo run --example
//! boundary`), so the README's picture cannot drift from the code. And what it shows holds.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

#[path = "../examples/boundary.rs"]
#[allow(dead_code, unreachable_pub)]
mod drawing;

use limiter::Algorithm;

#[test]
fn the_committed_picture_is_what_the_code_draws() {
    let committed = std::fs::read_to_string("docs/boundary.svg").expect("docs/boundary.svg");
    assert!(
        committed == drawing::svg(),
        "docs/boundary.svg is stale: run `cargo run --example boundary` and commit it"
    );
}

#[test]
fn the_picture_tells_the_truth() {
    let worst = |algorithm| drawing::worst_minute(&drawing::replay(algorithm));
    // The exact sliding window never admits more than 5 in any 60 seconds.
    assert_eq!(worst(Algorithm::SlidingWindow), 5);
    // The fixed window admits 4 + 5 within half a second at its edge.
    assert_eq!(worst(Algorithm::FixedWindow), 9);
    let fixed = drawing::replay(Algorithm::FixedWindow);
    let at_edge = fixed
        .iter()
        .filter(|&&(at, admitted)| admitted && (59_500..=60_000).contains(&at))
        .count();
    assert_eq!(at_edge, 9);
    // The others stay within their documented bounds (2N for the counter, N + burst refill).
    assert!(worst(Algorithm::SlidingWindowCounter) <= 10);
    assert!(worst(Algorithm::TokenBucket) <= 10);
}
