//! Spec: observability §8.2 / §8.4 — a [`LangfuseTrace`] as Langfuse public ingestion
//! API events (`trace-create`, `span-create`, `generation-create`).

use serde_json::{json, Map, Value};

use super::model::{LangfuseTrace, Observation, ObservationType};
use super::time::rfc3339;

/// The ingestion events of one trace: the trace first, then its observations,
/// parents before children.
pub fn ingestion_events(trace: &LangfuseTrace) -> Vec<Value> {
    let mut body = Map::new();
    body.insert("id".into(), json!(trace.id));
    body.insert("name".into(), json!(trace.name));
    body.insert("timestamp".into(), json!(rfc3339(trace.start_time)));
    body.insert("metadata".into(), Value::Object(trace.metadata.clone()));
    put(
        &mut body,
        "userId",
        trace.user_id.clone().map(Value::String),
    );
    put(
        &mut body,
        "sessionId",
        trace.session_id.clone().map(Value::String),
    );
    put(&mut body, "input", trace.input.clone());
    put(&mut body, "output", trace.output.clone());
    let mut out = vec![envelope("trace-create", trace.start_time, body)];
    fn walk(trace: &str, parent: Option<&str>, list: &[Observation], out: &mut Vec<Value>) {
        for o in list {
            out.push(observation_event(trace, parent, o));
            walk(trace, Some(&o.id), &o.children, out);
        }
    }
    walk(&trace.id, None, &trace.observations, &mut out);
    out
}

fn envelope(kind: &str, at: std::time::SystemTime, body: Map<String, Value>) -> Value {
    json!({
        "id": uuid::Uuid::new_v4().to_string(),
        "type": kind,
        "timestamp": rfc3339(at),
        "body": Value::Object(body),
    })
}

fn put(body: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        body.insert(key.to_owned(), v);
    }
}

fn observation_event(trace: &str, parent: Option<&str>, o: &Observation) -> Value {
    let mut body = Map::new();
    body.insert("id".into(), json!(o.id));
    body.insert("traceId".into(), json!(trace));
    put(&mut body, "parentObservationId", parent.map(|p| json!(p)));
    body.insert("name".into(), json!(o.name));
    body.insert("startTime".into(), json!(rfc3339(o.start_time)));
    body.insert("endTime".into(), json!(rfc3339(o.end_time)));
    body.insert("level".into(), json!(o.level.as_str()));
    put(
        &mut body,
        "statusMessage",
        o.status_message.clone().map(Value::String),
    );
    body.insert("metadata".into(), Value::Object(o.metadata.clone()));
    put(&mut body, "input", o.input.clone());
    put(&mut body, "output", o.output.clone());
    let kind = match o.kind {
        ObservationType::Generation => {
            put(&mut body, "model", o.model.clone().map(Value::String));
            if !o.model_parameters.is_empty() {
                body.insert(
                    "modelParameters".into(),
                    Value::Object(o.model_parameters.clone()),
                );
            }
            if let Some(u) = &o.usage {
                body.insert("usage".into(), u.to_json());
                body.insert("usageDetails".into(), u.to_json());
            }
            if let Some(Value::Object(link)) = &o.prompt_link {
                put(&mut body, "promptName", link.get("name").cloned());
                put(&mut body, "promptVersion", link.get("version").cloned());
            }
            "generation-create"
        }
        ObservationType::Event => "event-create",
        // The ingestion API's typed observation event: `observation-create`, type TOOL.
        ObservationType::Tool => {
            body.insert("type".into(), json!("TOOL"));
            "observation-create"
        }
        // §8.4.5 / §8.4.7: the typed observation event, type EMBEDDING / RETRIEVER.
        ObservationType::Embedding | ObservationType::Retriever => {
            let kind = if o.kind == ObservationType::Embedding {
                "EMBEDDING"
            } else {
                "RETRIEVER"
            };
            body.insert("type".into(), json!(kind));
            put(&mut body, "model", o.model.clone().map(Value::String));
            if let Some(details) = &o.usage_details {
                body.insert("usageDetails".into(), Value::Object(details.clone()));
            }
            "observation-create"
        }
        ObservationType::Span => "span-create",
    };
    envelope(kind, o.start_time, body)
}
