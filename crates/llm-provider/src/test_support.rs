//! Helpers the crate's unit tests share (compiled only for `cargo test`).

#![allow(clippy::unwrap_used)]

use std::sync::Mutex;

use proptest::prelude::*;
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::error::LlmError;
use crate::response::Usage;
use crate::sse::{Assemble, SseEvent};
use crate::stream::DeltaKind;
use crate::validate::Prepared;

/// A wire mapping's error mapper: status, headers, body → the §7 error.
pub(crate) type ErrorMapper = fn(u16, &HeaderMap, &[u8]) -> LlmError;

/// Asserts a status table written one case a line, `<status> <category> <rest>`:
/// `map` gives the body `body(status, rest)` the category (written without the
/// `provider_` prefix). Blank lines are skipped; a failing case is named.
pub(crate) fn assert_status_table(
    map: ErrorMapper,
    body: impl Fn(u16, &str) -> String,
    table: &str,
) {
    for line in table.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let mut parts = line.splitn(3, ' ');
        let status: u16 = parts.next().and_then(|s| s.parse().ok()).unwrap_or(0);
        let category = parts.next().unwrap_or_default();
        let bytes = body(status, parts.next().unwrap_or_default());
        assert_eq!(
            map(status, &HeaderMap::new(), bytes.as_bytes())
                .category()
                .as_str(),
            format!("provider_{category}"),
            "{line}"
        );
    }
}

/// `rest` split at its first `": "` into a vendor error kind and a message.
pub(crate) fn kind_and_message(rest: &str) -> (&str, &str) {
    rest.split_once(": ").unwrap_or((rest, ""))
}

/// The `get` tool's arguments schema the tests declare: `{city: string}`, `city`
/// required; `strict` adds `additionalProperties: false`.
pub(crate) fn city_schema(strict: bool) -> Value {
    let mut schema = serde_json::json!({"type": "object",
        "properties": {"city": {"type": "string"}}, "required": ["city"]});
    if strict {
        schema["additionalProperties"] = Value::Bool(false);
    }
    schema
}

/// A validated request declaring one tool, `name` with `arguments`, and
/// `response_schema` when given.
pub(crate) fn prepared_with(
    name: &str,
    arguments: &Value,
    response_schema: Option<&Value>,
) -> Prepared {
    Prepared {
        tools: vec![(name.into(), crate::schema::compile(arguments, "t").unwrap())],
        response_schema: response_schema.map(|s| crate::schema::compile(s, "s").unwrap()),
    }
}

/// [`prepared_with`] the strict `get` tool: what the response tests declare.
pub(crate) fn prepared(response_schema: Option<&Value>) -> Prepared {
    prepared_with("get", &city_schema(true), response_schema)
}

/// The deltas a sink saw, in order.
pub(crate) type Deltas = Vec<(DeltaKind, String)>;

/// Feeds `events` to a fresh assembler, stopping at the first error: the assembler,
/// the outcome and the deltas reported.
pub(crate) fn feed<A: Assemble + Default>(
    events: impl IntoIterator<Item = SseEvent>,
) -> (A, Result<(), LlmError>, Deltas) {
    let seen = Mutex::new(Vec::new());
    let sink = |k: DeltaKind, t: &str| seen.lock().unwrap().push((k, t.to_owned()));
    let mut a = A::default();
    let mut outcome = Ok(());
    for event in events {
        outcome = outcome.and_then(|()| a.event(&event, &sink));
    }
    (a, outcome, seen.into_inner().unwrap())
}

/// An arbitrary JSON value for the never-panics properties: scalars (and the
/// `words` a mapping reacts to) nested up to four levels, object keys drawn from
/// `keys` or random (both lists space-separated).
pub(crate) fn json_value(keys: &'static str, words: &'static str) -> impl Strategy<Value = Value> {
    let keys: Vec<&'static str> = keys.split_whitespace().collect();
    let words: Vec<&'static str> = words.split_whitespace().collect();
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        ".{0,12}".prop_map(Value::from),
        prop::sample::select(words).prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        let key = prop_oneof![
            prop::sample::select(keys.clone()).prop_map(str::to_owned),
            ".{0,6}"
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key, inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A response's prompt, completion, total and cached token counts.
pub(crate) fn token_counts(usage: &Usage) -> [Option<u64>; 4] {
    [
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.total_tokens,
        usage.cached_tokens,
    ]
}

/// One tool written twice, its schema's keys in two orders (the byte-stability tests).
pub(crate) fn one_tool_two_key_orders() -> (crate::Tool, crate::Tool) {
    let schema = |v: Value| crate::Tool::new("t", "d", v);
    (
        schema(serde_json::json!({"type": "object", "properties": {"a": {}, "b": {}}})),
        schema(serde_json::json!({"properties": {"b": {}, "a": {}}, "type": "object"})),
    )
}

/// A non-streamed wire request without a tool choice.
pub(crate) fn wire_request<'a>(
    messages: &'a [crate::Message],
    tools: &'a [crate::Tool],
    config: &'a crate::RuntimeConfig,
    response_schema: Option<&'a Value>,
) -> crate::WireRequest<'a> {
    crate::WireRequest {
        messages,
        tools,
        config,
        response_schema,
        tool_choice: None,
        stream: false,
    }
}
