//! A `tracing` subscriber for the whole test process that keeps every event's level and
//! message, so that tests can count what the limiter reported — on any thread, actix's
//! workers included.

use std::sync::{Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata, Subscriber};

/// Every event so far: (level, message and fields).
static EVENTS: Mutex<Vec<(Level, String)>> = Mutex::new(Vec::new());

struct Recorder;

/// Spans made so far, and the ones each thread is in: enough for `Span::current()`.
static NEXT_SPAN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
static SPANS: Mutex<Vec<(u64, &'static Metadata<'static>)>> = Mutex::new(Vec::new());
thread_local! {
    static ENTERED: std::cell::RefCell<Vec<tracing::span::Id>> = const { std::cell::RefCell::new(Vec::new()) };
}

struct Text(String);

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if !self.0.is_empty() {
            self.0.push(' ');
        }
        if field.name() == "message" {
            self.0.push_str(&format!("{value:?}"));
        } else {
            self.0.push_str(&format!("{}={value:?}", field.name()));
        }
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attributes: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let id = NEXT_SPAN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        SPANS.lock().unwrap().push((id, attributes.metadata()));
        tracing::span::Id::from_u64(id)
    }
    fn current_span(&self) -> tracing_core::span::Current {
        let current = ENTERED.with(|entered| entered.borrow().last().cloned());
        let metadata = current.as_ref().and_then(|id| {
            let spans = SPANS.lock().unwrap();
            spans
                .iter()
                .find(|(i, _)| *i == id.into_u64())
                .map(|(_, m)| *m)
        });
        match (current, metadata) {
            (Some(id), Some(metadata)) => tracing_core::span::Current::new(id, metadata),
            _ => tracing_core::span::Current::none(),
        }
    }
    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        // A field recorded on a span, kept as a TRACE entry: `span record rate_limit="…"`.
        let mut text = Text(String::from("span record"));
        values.record(&mut text);
        EVENTS.lock().unwrap().push((Level::TRACE, text.0));
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut text = Text(String::new());
        event.record(&mut text);
        EVENTS
            .lock()
            .unwrap()
            .push((*event.metadata().level(), text.0));
    }
    fn enter(&self, id: &tracing::span::Id) {
        ENTERED.with(|entered| entered.borrow_mut().push(id.clone()));
    }
    fn exit(&self, _: &tracing::span::Id) {
        ENTERED.with(|entered| entered.borrow_mut().pop());
    }
}

/// Installs the recorder for the whole process (once).
pub(crate) fn record() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        tracing::subscriber::set_global_default(Recorder).expect("the only global subscriber");
    });
}

/// The events of `level` whose text contains `needle`.
fn of_level(level: Level, needle: &str) -> Vec<String> {
    EVENTS
        .lock()
        .unwrap()
        .iter()
        .filter(|(at, text)| *at == level && text.contains(needle))
        .map(|(_, text)| text.clone())
        .collect()
}

/// The `warn` events whose text contains `needle`.
pub(crate) fn warnings(needle: &str) -> Vec<String> {
    of_level(Level::WARN, needle)
}

/// Every `warn` or `error` event.
pub(crate) fn all_warnings() -> Vec<String> {
    EVENTS
        .lock()
        .unwrap()
        .iter()
        .filter(|(level, _)| *level <= Level::WARN)
        .map(|(_, text)| text.clone())
        .collect()
}

/// The `info` events whose text contains `needle`.
pub(crate) fn infos(needle: &str) -> Vec<String> {
    of_level(Level::INFO, needle)
}

/// The `debug` events whose text contains `needle`.
pub(crate) fn debug_events(needle: &str) -> Vec<String> {
    of_level(Level::DEBUG, needle)
}

/// The fields recorded on spans, as `span record NAME=VALUE`.
pub(crate) fn span_records(needle: &str) -> Vec<String> {
    of_level(Level::TRACE, needle)
}
