//! A `tracing` subscriber for the whole test process that keeps every event's level and
//! message, so that tests can count what the limiter reported — on any thread, actix's
//! workers included.

use std::sync::{Mutex, OnceLock};

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Metadata, Subscriber};

/// Every event so far: (level, message and fields).
static EVENTS: Mutex<Vec<(Level, String)>> = Mutex::new(Vec::new());

struct Recorder;

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
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut text = Text(String::new());
        event.record(&mut text);
        EVENTS
            .lock()
            .unwrap()
            .push((*event.metadata().level(), text.0));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

/// Installs the recorder for the whole process (once).
pub(crate) fn record() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        tracing::subscriber::set_global_default(Recorder).expect("the only global subscriber");
    });
}

/// The `warn` events whose text contains `needle`.
pub(crate) fn warnings(needle: &str) -> Vec<String> {
    EVENTS
        .lock()
        .unwrap()
        .iter()
        .filter(|(level, text)| *level == Level::WARN && text.contains(needle))
        .map(|(_, text)| text.clone())
        .collect()
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
