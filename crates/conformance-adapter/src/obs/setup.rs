//! Spec: conformance-adapter §5.8 — case setup helpers for the observability runner:
//! the case's graph definitions and subgraph nodes (register O1), the process-wide
//! global-provider exporter (005 `caller_global_otel_active`) and the adapter's own
//! canonical JSON (§5.5.1).

use std::sync::Mutex;

use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde_json::Value;

use crate::yaml::Y;

/// Every `(subgraph node, subgraph identity)` pair in the case's graph definitions.
pub(super) fn subgraph_nodes(graphs: &[Y<'_>]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for g in graphs {
        for (name, spec) in g
            .get("nodes")
            .and_then(|n| n.entries().ok())
            .unwrap_or_default()
        {
            if let Some(id) = spec.get("subgraph").and_then(|s| s.str().ok()) {
                out.push((name, id.to_owned()));
            }
        }
    }
    out
}

/// The case's graph definitions: the case itself and every subgraph definition.
pub(super) fn graph_defs<'a>(doc: &Y<'a>, case: &Y<'a>) -> Vec<Y<'a>> {
    let mut out = vec![case.clone()];
    for holder in [doc, case] {
        if let Some(one) = holder.get("subgraph") {
            out.push(one);
        }
        if let Some(many) = holder.get("subgraphs") {
            out.extend(
                many.entries()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(_, d)| d),
            );
        }
    }
    out
}

/// Whether a YAML value mentions `key` anywhere.
pub(super) fn mentions(v: &serde_norway::Value, key: &str) -> bool {
    match v {
        serde_norway::Value::Mapping(m) => m
            .iter()
            .any(|(k, v)| k.as_str() == Some(key) || mentions(v, key)),
        serde_norway::Value::Sequence(items) => items.iter().any(|i| mentions(i, key)),
        serde_norway::Value::Tagged(t) => mentions(&t.value, key),
        _ => false,
    }
}

/// The case's global-provider exporter (005 `caller_global_otel_active`): installed
/// for the case, under a process-wide lock, and replaced by a no-op provider after.
pub(super) struct GlobalOtel {
    pub(super) exporter: InMemorySpanExporter,
    _guard: std::sync::MutexGuard<'static, ()>,
}

static GLOBAL_OTEL: Mutex<()> = Mutex::new(());

impl GlobalOtel {
    pub(super) fn install() -> GlobalOtel {
        let guard = GLOBAL_OTEL
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        opentelemetry::global::set_tracer_provider(provider);
        GlobalOtel {
            exporter,
            _guard: guard,
        }
    }
}

impl Drop for GlobalOtel {
    fn drop(&mut self) {
        opentelemetry::global::set_tracer_provider(
            opentelemetry::trace::noop::NoopTracerProvider::new(),
        );
    }
}

/// The adapter's own canonical JSON (sorted keys, no whitespace): what §5.5.1 says
/// the implementation emits, computed independently.
pub(super) fn canonical_json(v: &Value) -> String {
    fn sort(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sort(&m[k]))).collect())
            }
            Value::Array(items) => Value::Array(items.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    sort(v).to_string()
}
