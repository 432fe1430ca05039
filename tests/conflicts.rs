//! A scope is one budget: two handlers that give one scope different limits are a conflict,
//! found when the `Limiter` is built — before any request — and named in full. (A test
//! binary of its own: every limiter built in it sees this conflict.)

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use limiter::{rate_limit, Limiter};

#[rate_limit(5, per = "1m", scope = "shared")]
async fn sign_in() -> &'static str {
    "in"
}

#[rate_limit(10, per = "1m", scope = "shared")]
async fn sign_up() -> &'static str {
    "up"
}

// The same scope with the same limit is one budget, as meant: no conflict.
#[rate_limit(3, per = "1h", scope = "agreed")]
async fn reset() -> &'static str {
    "reset"
}

#[rate_limit(3, per = "1h", scope = "agreed")]
async fn confirm() -> &'static str {
    "confirm"
}

#[test]
fn try_build_names_both_handlers_and_where_they_are() {
    let _ = (sign_in, sign_up, reset, confirm);
    let conflict = Limiter::builder().try_build().unwrap_err();
    assert_eq!(conflict.scope, "shared");
    let mut handlers = [
        conflict.first.handler.as_str(),
        conflict.second.handler.as_str(),
    ];
    handlers.sort_unstable();
    assert_eq!(handlers, ["conflicts::sign_in", "conflicts::sign_up"]);
    let message = conflict.to_string();
    assert!(message.contains("tests/conflicts.rs:"), "{message}");
    assert!(
        message.contains("5 per 60000ms") && message.contains("10 per 60000ms"),
        "{message}"
    );
}

#[test]
#[should_panic(expected = "scope \"shared\" is one budget")]
fn build_panics_at_start_up() {
    let _ = Limiter::builder().build();
}

/// Counts `error` events.
struct Errors(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl tracing::Subscriber for Errors {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        if *event.metadata().level() == tracing::Level::ERROR {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn the_global_limiter_reports_the_conflict_as_an_error_event() {
    let errors = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    tracing::subscriber::with_default(Errors(errors.clone()), || {
        let _ = Limiter::global();
    });
    assert_eq!(errors.load(std::sync::atomic::Ordering::Relaxed), 1);
}
