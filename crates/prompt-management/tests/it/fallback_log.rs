//! A fallback (a prompt served after an unavailable backend) is logged at WARN
//! (prompt-management §9 SHOULD); a first-backend hit and a total outage are not.

use std::sync::{Arc, Mutex};

use openarmature_prompt::{InMemoryBackend, Prompt, PromptBackend, PromptError, PromptManager};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

use crate::support::Down;

/// One captured log record: level, target and its fields rendered as text.
#[derive(Debug, Clone)]
struct Record {
    level: Level,
    target: String,
    fields: Vec<(String, String)>,
}

impl Record {
    fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<Record>>>);

struct Fields<'a>(&'a mut Vec<(String, String)>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.push((field.name().to_owned(), value.to_owned()));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push((field.name().to_owned(), format!("{value:?}")));
    }
}

impl<S: Subscriber> Layer<S> for Capture {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Vec::new();
        event.record(&mut Fields(&mut fields));
        self.0.lock().unwrap().push(Record {
            level: *event.metadata().level(),
            target: event.metadata().target().to_owned(),
            fields,
        });
    }
}

fn store() -> Arc<InMemoryBackend> {
    let backend = InMemoryBackend::new();
    backend.insert(Prompt::text(
        "greeting",
        "v1",
        "production",
        "Hello, {{ user }}!",
    ));
    Arc::new(backend)
}

/// Runs `fetch` on a current-thread runtime with the capturing subscriber installed.
fn captured(manager: &PromptManager) -> (Result<Prompt, PromptError>, Vec<Record>) {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let result = tracing::subscriber::with_default(subscriber, || {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(manager.fetch("greeting", None))
    });
    let records = capture.0.lock().unwrap().clone();
    (result, records)
}

#[test]
fn fallback_after_an_unavailable_backend_logs_one_warning() {
    let memory = store();
    let manager = PromptManager::new(vec![
        Arc::new(Down("primary")),
        Arc::new(Down("replica")),
        memory.clone(),
    ])
    .unwrap();
    let (result, records) = captured(&manager);
    assert_eq!(result.unwrap().version(), "v1");
    assert_eq!(records.len(), 1, "{records:?}");
    let warning = &records[0];
    assert_eq!(warning.level, Level::WARN);
    assert_eq!(warning.target, "openarmature::prompt");
    assert_eq!(warning.field("prompt_name"), Some("greeting"));
    assert_eq!(warning.field("prompt_label"), Some("production"));
    assert_eq!(
        warning.field("degraded_backends"),
        Some("down:primary, down:replica")
    );
    assert_eq!(warning.field("served_by"), Some(memory.describe().as_str()));
    let reasons = warning.field("reasons").unwrap();
    assert!(
        reasons.contains("primary") && reasons.contains("replica"),
        "{reasons}"
    );
}

#[test]
fn first_backend_hit_and_total_outage_log_nothing() {
    let healthy = PromptManager::new(vec![store(), Arc::new(Down("replica"))]).unwrap();
    let (result, records) = captured(&healthy);
    assert!(result.is_ok());
    assert!(records.is_empty(), "{records:?}");

    let outage = PromptManager::new(vec![Arc::new(Down("a")), Arc::new(Down("b"))]).unwrap();
    let (result, records) = captured(&outage);
    assert_eq!(result.unwrap_err().category(), "prompt_store_unavailable");
    assert!(records.is_empty(), "{records:?}");
}
