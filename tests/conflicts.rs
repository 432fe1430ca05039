//! A scope is one budget: two handlers that give one scope different limits are a conflict,
//! found when the `Limiter` is built — before any request — and named in full; two that
//! give one concurrency scope different limits, an `error` event naming both. (A test
//! binary of its own: every limiter built in it sees this conflict.)

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests: a panic is a failure

use actix_web::{web, App, HttpResponse};
use limiter::{concurrency_limit, rate_limit, ConcurrencyLimit, Limiter};

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

// One concurrency scope, two limits: two pools where one was meant.
#[concurrency_limit(4, scope = "exports")]
async fn export_csv() -> &'static str {
    "csv"
}

#[concurrency_limit(8, scope = "exports")]
async fn export_pdf() -> &'static str {
    "pdf"
}

// The same concurrency limit under one scope is one pool, as meant: no conflict.
#[concurrency_limit(2, scope = "uploads")]
async fn upload_photo() -> &'static str {
    "photo"
}

#[concurrency_limit(2, scope = "uploads")]
async fn upload_video() -> &'static str {
    "video"
}

#[test]
fn try_build_names_both_handlers_and_where_they_are() {
    let _ = (sign_in, sign_up, reset, confirm);
    let _ = (export_csv, export_pdf, upload_photo, upload_video);
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

/// Keeps the text of `error` events.
struct Errors(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

/// An event's fields, as text.
struct Text(String);

impl tracing::field::Visit for Text {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={value:?} ", field.name()));
    }
}

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
            let mut text = Text(String::new());
            event.record(&mut text);
            self.0.lock().unwrap().push(text.0);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// The global limiter reports both conflicts, the rate limits' and the concurrency
/// limits', as `error` events naming both declarations.
#[test]
fn the_global_limiter_reports_the_conflicts_as_error_events() {
    let errors = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    tracing::subscriber::with_default(Errors(errors.clone()), || {
        let _ = Limiter::global();
    });
    let errors = errors.lock().unwrap();
    println!("{errors:#?}");
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].contains("scope \"shared\" is one budget"),
        "{errors:?}"
    );
    let in_flight = &errors[1];
    for part in [
        "concurrency scope \"exports\" is one pool",
        "conflicts::export_csv",
        "conflicts::export_pdf",
        "tests/conflicts.rs:",
        "4 in flight",
        "8 in flight",
    ] {
        assert!(in_flight.contains(part), "{part}: {in_flight}");
    }
}

/// Two `ConcurrencyLimit` middlewares giving one scope different limits are an `error`
/// event when the app is made (each worker makes its own: identical ones are one). They
/// were one registration, the second never seen: only their scopes were compared.
#[actix_web::test]
async fn two_concurrency_middlewares_of_one_scope_with_different_limits_are_reported() {
    let errors = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let _reported = tracing::subscriber::set_default(Errors(errors.clone()));
    let app = || {
        App::new()
            .service(
                web::scope("/a")
                    .wrap(ConcurrencyLimit::new(2).scope("middleware-pool"))
                    .route("", web::get().to(HttpResponse::Ok)),
            )
            .service(
                web::scope("/b")
                    .wrap(ConcurrencyLimit::new(3).scope("middleware-pool"))
                    .route("", web::get().to(HttpResponse::Ok)),
            )
    };
    // Two workers' apps: the same conflict, reported once.
    let _first = actix_web::test::init_service(app()).await;
    let _second = actix_web::test::init_service(app()).await;
    let errors = errors.lock().unwrap();
    println!("{errors:#?}");
    let pool: Vec<_> = errors
        .iter()
        .filter(|e| e.contains("\"middleware-pool\""))
        .collect();
    assert_eq!(pool.len(), 1, "{errors:?}");
    for part in ["2 in flight", "3 in flight", "made at run time"] {
        assert!(pool[0].contains(part), "{part}: {}", pool[0]);
    }
}
