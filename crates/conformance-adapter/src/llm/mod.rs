//! Spec: conformance-adapter §4, §5.11–§5.13 and the llm-provider fixture-header
//! conventions (001 / 005 / 059 / 074 headers) — the llm-provider runner.
//!
//! Each case runs the real provider of its `mapping` ([`mapping`]: §8.1 OpenAI by
//! default, §8.2 Anthropic, §8.3 Gemini) against a mock provider that is a real
//! HTTP server on 127.0.0.1 ([`crate::http_mock`]), on its own **unpaused** current-thread
//! runtime in a dedicated thread (the graph runner's paused clock does not mix with
//! real sockets). Retry backoffs go through a recording sleeper that never sleeps.
//!
//! Register of fixture-shaped conventions (the llm-provider part of the adapter
//! register):
//!
//! - L1 `bound_model`: the first `expected_wire_request.model`, else the first
//!   asserted `llm_spans` `openarmature.llm.model`, else the first 2xx body's
//!   `model`, else the mapping's default (`test-model`, `claude-test`,
//!   `gemini-test`; FIXTURE-QUIRKS Q3).
//! - L2 a fixture input that cannot be built into typed messages / tools /
//!   `tool_choice` / config is the pre-send `provider_invalid_request` the call
//!   raises (the spec lets construction-time checks stand in for the boundary).
//! - L3 `complete()` calls run inside a synthetic one-node graph (node `__llm_call__`,
//!   FIXTURE-QUIRKS Q4) with the OTel observer on a private tracer provider and an
//!   in-memory exporter: the node body makes the call (`CompletionRequest::in_node`),
//!   keeps its result without propagating it, and returns an empty update. `response`
//!   / `raises` are asserted on that result; `llm_spans` and the span invariants on the
//!   exported `openarmature.llm.complete` spans, ordered by
//!   `openarmature.llm.attempt_index`, each of which must be a child of the node's
//!   span. `error_category: <c>` means status ERROR with description `<c>` plus the
//!   attribute `openarmature.error.category: <c>`; `error_category: null` means status
//!   OK and no such attribute.
//! - L4 `stream: true` calls go through `complete(stream=true)`; a `stream_body` mock
//!   is served as a `text/event-stream` answer (see [`crate::http_mock`]); `mapping:
//!   streaming_unsupported_stub` (060) is [`Mapping::StreamingUnsupportedStub`], the
//!   OpenAI mapping behind the `Provider` trait's non-streaming defaults (the real
//!   Anthropic / Gemini mappings keep those defaults too). The token events a call
//!   dispatches are recorded by an observer on the synthetic node's invocation
//!   (`no_token_events_emitted`, the streaming invariants). `mapping`s [`mapping`]
//!   does not know are refused as not implemented.
//! - L5 `mapping: gemini` runs the real `GeminiProvider` against the same mock
//!   (base URL `/v1beta`); the bound model (L1) travels in the URL path, so an
//!   `expected_wire_request.model` is compared with the request path
//!   `/v1beta/models/{model}:generateContent` and the body is matched without it.
//! - L7 `extensions: [streaming]` (spec/extensions/0006): the case runs here, not in
//!   the resilience runner, with `ProviderBuilder::stream_extension(true)`; a streamed
//!   Gemini call's wire path is `/v1beta/models/{model}:streamGenerateContent?alt=sse`.
//!   A `stream_body` item is sent as one `data:` line, so Anthropic events are named
//!   by their `type` field alone (the mapping reads that, not the `event:` line).

mod expect;
mod invariants;
mod mapping;
mod resilience;
mod stream_checks;

pub(crate) use invariants::TABLE_NAMES as INVARIANT_NAMES;
pub(crate) use stream_checks::TABLE_NAMES as STREAM_INVARIANT_NAMES;
mod stub;

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use openarmature_graph::{
    observer_fn, DynSchema, DynState, DynUpdate, GraphBuilder, InvokeOptions, NodeCtx, NodeError,
    ObserverEvent, Registration, END,
};
use openarmature_llm::{
    AttemptRecord, CompletionRequest, LlmError, LlmRetryConfig, Message, ModelCapabilities,
    Provider, Response, RetryReason, RuntimeConfig, StructuredOutputInvalid, Tool, ToolChoice,
};
use openarmature_observability::{attributes as attr, OtelObserver};
use openarmature_pipeline::retry::{Constant, DefaultClassifier, RetryConfig, Sleeper};
use opentelemetry::trace::Status;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{Map, Value};

pub(crate) use self::mapping::Mapping;
use crate::failure::{Check, Failure};
use crate::http_mock::{Captured, MockServer, Reply, SseItem};
use crate::shared::on_own_runtime;
use crate::yaml::Y;
use crate::AdapterError;

/// Keys of a case (or of a single-case file).
const CASE_KEYS: &[&str] = &[
    "name",
    "description",
    "mock_provider",
    "mapping",
    "call",
    "calls",
    "expected",
    "expected_wire_request",
    "expected_wire_request_checks",
    "expected_wire_request_absent_keys",
    "expected_wire_bytes_identical",
    "response_schema",
    "retry_middleware",
    "conformance_version",
];

/// File-level keys of a `cases:` file.
const FILE_KEYS: &[&str] = &[
    "cases",
    "mock_provider",
    "mapping",
    "description",
    "conformance_version",
];

/// Keys of one call.
const CALL_KEYS: &[&str] = &[
    "operation",
    "messages",
    "tools",
    "config",
    "response_schema",
    "tool_choice",
    "stream",
    "retry",
    "retry_middleware",
    "expected",
    "expected_wire_request",
    "expected_wire_request_checks",
    "expected_wire_request_absent_keys",
];

/// Case-level keys a single `call:` inherits.
const INHERITED: &[&str] = &[
    "expected",
    "expected_wire_request",
    "expected_wire_request_checks",
    "expected_wire_request_absent_keys",
    "response_schema",
    "retry_middleware",
];

/// Runs one llm-provider case on a fresh unpaused runtime in its own thread.
pub(crate) async fn run_case(path: &Path, root: &Y<'_>, case: &Y<'_>) -> Check {
    let file = path.to_path_buf();
    let root_value = root.value.clone();
    let case_value = (!std::ptr::eq(root.value, case.value)).then(|| case.value.clone());
    on_own_runtime("llm-provider-case", move || async move {
        let root = Y::root(&root_value, &file);
        let case = case_value
            .as_ref()
            .map_or_else(|| root.clone(), |c| Y::root(c, &file));
        run(&root, &case).await
    })
    .await
}

/// One call of a case: the call mapping plus, for the single `call:` form, the
/// case-level siblings it inherits.
struct CallSpec<'a> {
    call: Y<'a>,
    case: Option<Y<'a>>,
}

impl<'a> CallSpec<'a> {
    fn get(&self, key: &str) -> Option<Y<'a>> {
        self.call.get(key).or_else(|| {
            if INHERITED.contains(&key) {
                self.case.as_ref().and_then(|c| c.get(key))
            } else {
                None
            }
        })
    }
}

/// The `retry` / `retry_middleware` directives, as the adapter built them.
#[derive(Clone, Default)]
pub(crate) struct RetrySpec {
    pub(crate) max_attempts: u32,
    pub(crate) schedule: Vec<RuntimeConfig>,
    pub(crate) reask: bool,
}

/// One finished wire attempt (the per-attempt signal).
#[derive(Debug, Clone)]
pub(crate) struct AttemptInfo {
    pub(crate) index: u32,
    pub(crate) reason: Option<RetryReason>,
    pub(crate) category: Option<String>,
    pub(crate) message: String,
    pub(crate) finish_reason: Option<String>,
    pub(crate) output_content: Option<String>,
}

impl AttemptInfo {
    /// The attempt signal of `record`, in the upstream runner's shape.
    pub(crate) fn of(record: &AttemptRecord<'_>) -> Self {
        let (category, message, finish_reason, output_content) = match record.outcome {
            Ok(r) => (
                None,
                String::new(),
                Some(r.finish_reason.as_str().to_owned()),
                None,
            ),
            Err(e) => (
                Some(e.category().as_str().to_owned()),
                e.to_string(),
                e.structured_output()
                    .map(|s| s.finish_reason.as_str().to_owned()),
                e.structured_output().map(|s| s.output_content.clone()),
            ),
        };
        AttemptInfo {
            index: record.attempt_index,
            reason: record.retry_reason,
            category,
            message,
            finish_reason,
            output_content,
        }
    }
}

/// One exported `openarmature.llm.complete` span (register L3).
#[derive(Debug, Clone)]
pub(crate) struct SpanView {
    /// `openarmature.llm.attempt_index`.
    pub(crate) attempt_index: Option<i64>,
    pub(crate) attributes: Map<String, Value>,
    /// `Some(description)` for an ERROR status.
    pub(crate) error: Option<String>,
    /// Status OK (explicitly).
    pub(crate) ok: bool,
    /// An exception event was recorded.
    pub(crate) exception: bool,
    /// A child of the synthetic node's span.
    pub(crate) under_node: bool,
}

/// Everything one call produced, for the assertions.
pub(crate) struct CallRun {
    pub(crate) result: Result<Option<Response>, LlmError>,
    pub(crate) attempts: Vec<AttemptInfo>,
    /// The call's LLM spans, by attempt index (register L3).
    pub(crate) spans: Vec<SpanView>,
    /// Non-health requests received during the call.
    pub(crate) requests: Vec<Captured>,
    pub(crate) sleeps: Vec<Duration>,
    pub(crate) corrections: Vec<String>,
    pub(crate) caller_messages: Option<Value>,
    pub(crate) caller_messages_after: Option<Value>,
    pub(crate) caller_config: RuntimeConfig,
    pub(crate) caller_config_after: RuntimeConfig,
    pub(crate) retry: Option<RetrySpec>,
    pub(crate) consumed: usize,
    pub(crate) scripted: usize,
    pub(crate) bound_model: String,
    pub(crate) response_schema: Option<Value>,
    /// The case's wire mapping.
    pub(crate) mapping: Mapping,
    /// The call was made with `stream` set.
    pub(crate) streamed: bool,
    /// The `LlmTokenEvent`s the call dispatched, in delivery order.
    pub(crate) tokens: Vec<TokenInfo>,
}

/// One observed `LlmTokenEvent`.
#[derive(Debug, Clone)]
pub(crate) struct TokenInfo {
    pub(crate) chunk_index: u32,
    pub(crate) kind: &'static str,
    pub(crate) delta: String,
    pub(crate) call_id: String,
}

impl CallRun {
    /// The JSON bodies of the non-health requests.
    pub(crate) fn bodies(&self) -> Vec<&Value> {
        self.requests
            .iter()
            .filter_map(|r| r.json.as_ref())
            .collect()
    }

    /// The raised error, if any.
    pub(crate) fn error(&self) -> Option<&LlmError> {
        self.result.as_ref().err()
    }

    /// The response, if any.
    pub(crate) fn response(&self) -> Option<&Response> {
        self.result.as_ref().ok().and_then(Option::as_ref)
    }
}

/// Register L7: extension 0006's fixtures (`extensions: [streaming]`) run here, with
/// the Anthropic / Gemini mapping's stream extension on; any other `extensions` list
/// belongs to the resilience runner.
fn stream_extension(root: &Y<'_>, case: &Y<'_>) -> Check<bool> {
    let Some(list) = case.get("extensions").or_else(|| root.get("extensions")) else {
        return Ok(false);
    };
    let names = list
        .seq()?
        .iter()
        .map(|y| y.str().map_err(Failure::from))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(names == ["streaming"])
}

async fn run(root: &Y<'_>, case: &Y<'_>) -> Check {
    let streaming = stream_extension(root, case)?;
    if !streaming && resilience::claims(root, case) {
        return resilience::run(root, case).await; // the project's extension fixtures
    }
    let with_extensions = |keys: &[&'static str]| {
        let mut keys = keys.to_vec();
        if streaming {
            keys.push("extensions");
        }
        keys
    };
    let single = std::ptr::eq(root.value, case.value);
    if !single {
        root.check_keys(&with_extensions(FILE_KEYS))?;
    }
    case.check_keys(&with_extensions(CASE_KEYS))?;
    let mapping = match case.get("mapping").or_else(|| root.get("mapping")) {
        Some(name) => Mapping::from_name(name.str()?)?,
        None => Mapping::OpenAi,
    };
    let mock = case_mock(root, case)?;
    let calls = call_specs(case)?;
    if calls.is_empty() {
        return Err("a case needs at least one call".into());
    }
    for spec in &calls {
        spec.call.check_keys(CALL_KEYS)?;
    }
    let model = bound_model(&calls, &mock, mapping);

    let server = MockServer::start(mock.responses.clone(), mock.health.clone())
        .await
        .map_err(|e| format!("cannot start the mock provider: {e}"))?;
    let provider = mapping.provider(&server, &model, mock.capabilities, streaming)?;

    let mut last_bodies: Vec<Option<Vec<u8>>> = Vec::new();
    for (i, spec) in calls.iter().enumerate() {
        let label = if calls.len() > 1 {
            format!("call {i}: ")
        } else {
            String::new()
        };
        let run = execute(
            spec,
            &provider,
            &server,
            &model,
            mock.responses.len(),
            mapping,
        )
        .await
        .map_err(|m| m.context(&label))?;
        let overruns = server.overruns();
        if !overruns.is_empty() {
            return Err(format!("{label}mock provider exhausted: {}", overruns.join("; ")).into());
        }
        expect::call(spec, &run).map_err(|m| m.context(&label))?;
        last_bodies.push(run.requests.last().map(|r| r.body.clone()));
    }

    if let Some(identical) = case.get("expected_wire_bytes_identical") {
        identical.check_keys(&["calls"])?;
        let indices: Vec<usize> = identical
            .req("calls")
            .and_then(|c| c.seq())?
            .iter()
            .map(|i| {
                i.i64()
                    .ok()
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| Failure::from(i.invalid("a call index")))
            })
            .collect::<Result<_, _>>()?;
        let mut reference: Option<&Vec<u8>> = None;
        for index in indices {
            let bytes = last_bodies
                .get(index)
                .and_then(Option::as_ref)
                .ok_or_else(|| {
                    format!("expected_wire_bytes_identical: call {index} sent no request")
                })?;
            match reference {
                None => reference = Some(bytes),
                Some(first) if first == bytes => {}
                Some(first) => {
                    return Err(format!(
                        "expected_wire_bytes_identical: call {index} differs:\n  {}\n  {}",
                        String::from_utf8_lossy(first),
                        String::from_utf8_lossy(bytes)
                    )
                    .into())
                }
            }
        }
    }
    Ok(())
}

/// The parsed `mock_provider` block.
struct Mock {
    responses: Vec<Reply>,
    health: Option<(String, Reply)>,
    capabilities: ModelCapabilities,
    first_ok_model: Option<String>,
}

/// A streamed answer's items: chunks, the `"[DONE]"` sentinel, and `{error:
/// {status}}` mid-stream failure markers (observability 111 header). A stream that
/// fails before its first chunk is that HTTP status instead.
pub(crate) fn sse_reply(items: &[Y<'_>]) -> Result<Reply, AdapterError> {
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let value = item.json()?;
        if value.as_str() == Some("[DONE]") {
            out.push(SseItem::Done);
            continue;
        }
        let marker = value
            .get("error")
            .filter(|_| value.as_object().is_some_and(|o| o.len() == 1))
            .and_then(|e| e.get("status"))
            .and_then(Value::as_u64)
            .and_then(|s| u16::try_from(s).ok());
        match (marker, value) {
            (Some(status), _) if out.is_empty() => {
                return Ok(Reply::Http {
                    status,
                    headers: Vec::new(),
                    body: Some(serde_json::json!({"error": {
                        "message": format!("mock failure (HTTP {status})"),
                        "type": "mock_stream_error",
                    }})),
                })
            }
            (Some(status), _) => out.push(SseItem::Error(status)),
            (None, chunk @ Value::Object(_)) => out.push(SseItem::Chunk(chunk)),
            (None, other) => {
                return Err(item.invalid(format!("a stream chunk must be a mapping, got {other}")))
            }
        }
    }
    Ok(Reply::Sse(out))
}

fn parse_reply(y: &Y<'_>, keys: &[&str]) -> Result<Reply, AdapterError> {
    y.check_keys(keys)?;
    if let Some(body) = y.get("stream_body") {
        return sse_reply(&body.seq()?);
    }
    if let Some(cf) = y.get("connection_failure") {
        if cf.bool()? {
            return Ok(Reply::Drop);
        }
    }
    let status = match y.get("status") {
        Some(s) => u16::try_from(s.i64()?).map_err(|_| s.invalid("an HTTP status"))?,
        None => 200,
    };
    let mut headers = Vec::new();
    if let Some(h) = y.get("headers") {
        for (k, v) in h.entries()? {
            let value = match v.json()? {
                Value::String(s) => s,
                other => other.to_string(),
            };
            headers.push((k, value));
        }
    }
    let body = match y.get("body") {
        Some(b) => Some(b.json()?),
        None => None,
    };
    Ok(Reply::Http {
        status,
        headers,
        body,
    })
}

/// The case's `mock_provider` (or the file's), parsed.
fn case_mock(root: &Y<'_>, case: &Y<'_>) -> Result<Mock, AdapterError> {
    let y = case
        .get("mock_provider")
        .or_else(|| root.get("mock_provider"));
    parse_mock(y.as_ref())
}

/// The case's calls: its `calls:` list, or its one `call:` (which reads the case's
/// own keys too).
fn call_specs<'a>(case: &Y<'a>) -> Result<Vec<CallSpec<'a>>, AdapterError> {
    match (case.get("calls"), case.get("call")) {
        (Some(list), None) => Ok(list
            .seq()?
            .into_iter()
            .map(|call| CallSpec { call, case: None })
            .collect()),
        (None, Some(call)) => Ok(vec![CallSpec {
            call,
            case: Some(case.clone()),
        }]),
        _ => Err(case.invalid("a case needs exactly one of `call` or `calls`")),
    }
}

fn parse_mock(y: Option<&Y<'_>>) -> Result<Mock, AdapterError> {
    let mut mock = Mock {
        responses: Vec::new(),
        health: None,
        capabilities: ModelCapabilities::default(),
        first_ok_model: None,
    };
    let Some(y) = y else { return Ok(mock) };
    y.check_keys(&["responses", "health_endpoint", "capabilities"])?;
    if let Some(list) = y.get("responses") {
        for r in list.seq()? {
            let reply = parse_reply(
                &r,
                &[
                    "status",
                    "body",
                    "headers",
                    "connection_failure",
                    "stream_body",
                ],
            )?;
            if let Reply::Http {
                status: 200..=299,
                body: Some(body),
                ..
            } = &reply
            {
                if mock.first_ok_model.is_none() {
                    mock.first_ok_model =
                        body.get("model").and_then(Value::as_str).map(str::to_owned);
                }
            }
            mock.responses.push(reply);
        }
    }
    if let Some(h) = y.get("health_endpoint") {
        let path = h.req("path")?.str()?.to_owned();
        let reply = parse_reply(
            &h,
            &["path", "status", "body", "headers", "connection_failure"],
        )?;
        mock.health = Some((path, reply));
    }
    if let Some(c) = y.get("capabilities") {
        c.check_keys(&[
            "supports_image_input",
            "supports_native_response_format",
            "supports_native_structured_output",
        ])?;
        if let Some(v) = c.get("supports_image_input") {
            mock.capabilities = mock.capabilities.image_input(v.bool()?);
        }
        for key in [
            "supports_native_response_format",
            "supports_native_structured_output",
        ] {
            if let Some(v) = c.get(key) {
                mock.capabilities = mock.capabilities.native_response_format(v.bool()?);
            }
        }
    }
    Ok(mock)
}

/// Register L1 (FIXTURE-QUIRKS Q3).
fn bound_model(calls: &[CallSpec<'_>], mock: &Mock, mapping: Mapping) -> String {
    let from_wire = calls.iter().find_map(|c| {
        c.get("expected_wire_request")?
            .get("model")?
            .str()
            .ok()
            .map(str::to_owned)
    });
    let from_spans = || {
        calls.iter().find_map(|c| {
            let spans = c.get("expected")?.get("llm_spans")?.seq().ok()?;
            spans.iter().find_map(|s| {
                s.get("attributes")?
                    .get("openarmature.llm.model")?
                    .str()
                    .ok()
                    .map(str::to_owned)
            })
        })
    };
    from_wire
        .or_else(from_spans)
        .or_else(|| mock.first_ok_model.clone())
        .unwrap_or_else(|| mapping.default_model().to_owned())
}

/// A sleeper that records the requested delays and returns at once.
struct RecordingSleeper(Arc<Mutex<Vec<Duration>>>);

impl Sleeper for RecordingSleeper {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        push(&self.0, duration);
        Box::pin(async {})
    }
}

fn push<T>(log: &Mutex<Vec<T>>, item: T) {
    log.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(item);
}

fn take<T: Clone>(log: &Mutex<Vec<T>>) -> Vec<T> {
    log.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
}

/// The `per_attempt_override` and `reask` parts of a `retry:` block, applied to
/// `retry`; a reask's corrections are logged to `corrections`. Returns the config
/// and the shape the assertions read.
pub(crate) fn retry_extras(
    r: &Y<'_>,
    mut retry: LlmRetryConfig,
    corrections: &Arc<Mutex<Vec<String>>>,
) -> Result<(LlmRetryConfig, RetrySpec), AdapterError> {
    if let Some(schedule) = r.get("per_attempt_override") {
        let mut entries = Vec::new();
        for entry in schedule.seq()? {
            let partial = RuntimeConfig::from_json(&entry.json()?)
                .map_err(|e| entry.invalid(e.to_string()))?;
            entries.push(partial);
        }
        retry = retry.per_attempt_override(entries);
    }
    let mut reask = false;
    if let Some(y) = r.get("reask") {
        y.check_keys(&["template"])?;
        let template = y.req("template")?.str()?.to_owned();
        let log = Arc::clone(corrections);
        retry = retry.reask(move |failure: &StructuredOutputInvalid| {
            let text = render_template(&template, failure);
            push(&log, text.clone());
            text
        });
        reask = true;
    }
    let shape = RetrySpec {
        max_attempts: retry.max_attempts(),
        schedule: retry.per_attempt_override.clone(),
        reask,
    };
    Ok((retry, shape))
}

/// Renders a reask template by single-pass literal replacement of
/// `{output_content}` and `{error_message}` (substituted text is not rescanned).
pub(crate) fn render_template(template: &str, failure: &StructuredOutputInvalid) -> String {
    let mut out = String::new();
    let mut rest = template;
    while !rest.is_empty() {
        if let Some(tail) = rest.strip_prefix("{output_content}") {
            out.push_str(&failure.output_content);
            rest = tail;
        } else if let Some(tail) = rest.strip_prefix("{error_message}") {
            out.push_str(&failure.error_message);
            rest = tail;
        } else {
            let mut chars = rest.chars();
            if let Some(c) = chars.next() {
                out.push(c);
            }
            rest = chars.as_str();
        }
    }
    out
}

/// The §6.1 record a `retry` / `retry_middleware` block describes.
pub(crate) fn base_retry(
    y: &Y<'_>,
    sleeps: &Arc<Mutex<Vec<Duration>>>,
) -> Result<RetryConfig, AdapterError> {
    let mut config = RetryConfig::default().sleeper(RecordingSleeper(Arc::clone(sleeps)));
    if let Some(n) = y.get("max_attempts") {
        config = config
            .max_attempts(u32::try_from(n.i64()?).map_err(|_| n.invalid("a positive integer"))?);
    }
    if let Some(c) = y.get("classifier") {
        match c.str()? {
            "default" => config = config.classifier(DefaultClassifier),
            other => {
                return Err(AdapterError::DirectiveUnknown {
                    file: c.file.to_path_buf(),
                    directive: format!("classifier: {other}"),
                    location: c.location().to_owned(),
                })
            }
        }
    }
    if let Some(b) = y.get("backoff") {
        b.check_keys(&["type", "seconds"])?;
        match b.req("type")?.str()? {
            "deterministic" => {
                let secs = b.opt_f64("seconds")?.unwrap_or(0.0);
                let delay = Duration::try_from_secs_f64(secs)
                    .map_err(|_| b.invalid("seconds must be a non-negative number"))?;
                config = config.backoff(Constant(delay));
            }
            other => {
                return Err(AdapterError::DirectiveUnknown {
                    file: b.file.to_path_buf(),
                    directive: format!("backoff type: {other}"),
                    location: b.location().to_owned(),
                })
            }
        }
    }
    Ok(config)
}

/// Builds the typed request (register L2: a build failure is the call's
/// pre-send `provider_invalid_request`).
fn build_request(spec: &CallSpec<'_>) -> Result<Result<CompletionRequest, LlmError>, AdapterError> {
    let messages_y = spec.call.req("messages")?;
    let messages = match Message::list_from_json(&messages_y.json()?) {
        Ok(m) => m,
        Err(e) => return Ok(Err(e)),
    };
    let mut request = CompletionRequest::new(messages);
    if let Some(t) = spec.get("tools") {
        match Tool::list_from_json(&t.json()?) {
            Ok(tools) => request = request.tools(tools),
            Err(e) => return Ok(Err(e)),
        }
    }
    if let Some(c) = spec.get("config") {
        match RuntimeConfig::from_json(&c.json()?) {
            Ok(config) => request = request.config(config),
            Err(e) => return Ok(Err(e)),
        }
    }
    if let Some(s) = spec.get("response_schema") {
        let schema = s.json()?;
        if !schema.is_null() {
            request = request.response_schema(schema);
        }
    }
    if let Some(tc) = spec.get("tool_choice") {
        let value = tc.json()?;
        if !value.is_null() {
            match ToolChoice::from_json(&value) {
                Ok(choice) => request = request.tool_choice(choice),
                Err(e) => return Ok(Err(e)),
            }
        }
    }
    Ok(Ok(request))
}

/// Keys a call's `retry` block may carry (the resilience runner adds `budget`).
pub(crate) const RETRY_KEYS: &[&str] = &[
    "max_attempts",
    "backoff",
    "classifier",
    "per_attempt_override",
    "reask",
];

async fn execute(
    spec: &CallSpec<'_>,
    provider: &Arc<dyn Provider>,
    server: &MockServer,
    model: &str,
    scripted: usize,
    mapping: Mapping,
) -> Check<CallRun> {
    let operation = match spec.get("operation") {
        Some(o) => o.str()?.to_owned(),
        None => "complete".to_owned(),
    };
    let streamed = match spec.get("stream") {
        Some(s) => s.bool()?,
        None => false,
    };
    let before = server.captured().len();
    let remaining_before = server.remaining();
    let sleeps = Arc::new(Mutex::new(Vec::new()));
    let attempts = Arc::new(Mutex::new(Vec::new()));
    let corrections = Arc::new(Mutex::new(Vec::new()));
    let mut run = CallRun {
        result: Ok(None),
        attempts: Vec::new(),
        spans: Vec::new(),
        requests: Vec::new(),
        sleeps: Vec::new(),
        corrections: Vec::new(),
        caller_messages: None,
        caller_messages_after: None,
        caller_config: RuntimeConfig::default(),
        caller_config_after: RuntimeConfig::default(),
        retry: None,
        consumed: 0,
        scripted,
        bound_model: model.to_owned(),
        response_schema: None,
        mapping,
        streamed,
        tokens: Vec::new(),
    };
    match operation.as_str() {
        "ready" => {
            for key in ["messages", "tools", "config", "retry", "retry_middleware"] {
                if spec.call.get(key).is_some() {
                    return Err(format!("`{key}` is not an input of ready()").into());
                }
            }
            run.result = provider.ready().await.map(|()| None);
        }
        // A request the pre-send validation rejects is the run's result.
        "complete" => 'complete: {
            let mut request = match build_request(spec)? {
                Ok(r) => r,
                Err(e) => {
                    run.result = Err(e);
                    break 'complete;
                }
            };
            request = request.stream(streamed);
            run.caller_messages = Some(Value::Array(
                request.messages.iter().map(Message::to_json).collect(),
            ));
            run.caller_config = request.config.clone();
            run.response_schema = request.response_schema.clone();
            if let Some(r) = spec.call.get("retry") {
                r.check_keys(RETRY_KEYS)?;
                let retry = LlmRetryConfig::from(base_retry(&r, &sleeps)?);
                let (retry, shape) = retry_extras(&r, retry, &corrections)?;
                run.retry = Some(shape);
                request = request.retry(retry);
            }
            let log = Arc::clone(&attempts);
            request = request.on_attempt(move |record: &AttemptRecord<'_>| {
                push(&log, AttemptInfo::of(record));
            });
            let middleware = match spec.get("retry_middleware") {
                None => None,
                Some(mw) => {
                    mw.check_keys(&["max_attempts", "classifier", "backoff"])?;
                    let config = base_retry(&mw, &sleeps)?;
                    run.retry = Some(RetrySpec {
                        max_attempts: config.max_attempts.max(1),
                        ..RetrySpec::default()
                    });
                    Some(config)
                }
            };
            let (result, spans, tokens) = in_synthetic_node(provider, &request, middleware).await?;
            run.result = result;
            run.spans = spans;
            run.tokens = tokens;
            run.caller_messages_after = Some(Value::Array(
                request.messages.iter().map(Message::to_json).collect(),
            ));
            run.caller_config_after = request.config.clone();
        }
        other => return Err(format!("unknown operation `{other}`").into()),
    }
    finish(
        run,
        server,
        before,
        remaining_before,
        &sleeps,
        &attempts,
        &corrections,
    )
}

fn finish(
    mut run: CallRun,
    server: &MockServer,
    before: usize,
    remaining_before: usize,
    sleeps: &Mutex<Vec<Duration>>,
    attempts: &Mutex<Vec<AttemptInfo>>,
    corrections: &Mutex<Vec<String>>,
) -> Check<CallRun> {
    run.requests = server
        .captured()
        .into_iter()
        .skip(before)
        .filter(|c| !c.health)
        .collect();
    run.consumed = remaining_before.saturating_sub(server.remaining());
    run.sleeps = take(sleeps);
    run.attempts = take(attempts);
    run.corrections = take(corrections);
    Ok(run)
}

/// The synthetic node's name (register L3).
const NODE: &str = "__llm_call__";

/// What the synthetic node's call produced: its result, its LLM spans (by attempt
/// index) and its token events.
type NodeRun = (
    Result<Option<Response>, LlmError>,
    Vec<SpanView>,
    Vec<TokenInfo>,
);

/// An observer keeping the token events of the invocation (register L4).
fn token_recorder() -> (Registration, Arc<Mutex<Vec<TokenInfo>>>) {
    let tokens: Arc<Mutex<Vec<TokenInfo>>> = Arc::default();
    let log = Arc::clone(&tokens);
    let registration = Registration::new(
        "__token_recorder__",
        observer_fn(move |event: Arc<ObserverEvent>| {
            if let ObserverEvent::LlmToken(t) = &*event {
                push(
                    &log,
                    TokenInfo {
                        chunk_index: t.chunk_index,
                        kind: t.delta_kind.as_str(),
                        delta: t.delta.clone(),
                        call_id: t.call_id.clone(),
                    },
                );
            }
            std::future::ready(Ok::<(), openarmature_graph::BoxError>(()))
        }),
    );
    (registration, tokens)
}

/// Register L3: runs the call inside a one-node graph observed by the OTel observer
/// (and the token recorder).
async fn in_synthetic_node(
    provider: &Arc<dyn Provider>,
    request: &CompletionRequest,
    middleware: Option<RetryConfig>,
) -> Check<NodeRun> {
    type Slot = Arc<Mutex<Option<Result<Option<Response>, LlmError>>>>;
    let exporter = InMemorySpanExporter::default();
    let tracing = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let otel = OtelObserver::builder(&tracing).build();
    let slot: Slot = Arc::default();
    let (p, r, out) = (Arc::clone(provider), request.clone(), Arc::clone(&slot));
    let schema = DynSchema::builder().build();
    let graph = GraphBuilder::new(schema.defaults())
        .add_node(NODE, move |_s: Arc<DynState>, ctx: NodeCtx| {
            let (provider, request, middleware, out) = (
                Arc::clone(&p),
                r.clone().in_node(&ctx),
                middleware.clone(),
                Arc::clone(&out),
            );
            async move {
                let result = match middleware {
                    None => provider.complete(&request).await.map(Some),
                    Some(config) => {
                        let (provider, request) = (&provider, &request);
                        config
                            .run(None, |_| async move {
                                provider.complete(request).await.map_err(NodeError::from)
                            })
                            .await
                            .map(Some)
                            .map_err(|boxed| {
                                LlmError::find_in(&*boxed).cloned().unwrap_or_else(|| {
                                    LlmError::unavailable(format!("uncategorized error: {boxed}"))
                                })
                            })
                    }
                };
                push_slot(&out, result);
                Ok(DynUpdate::default())
            }
        })
        .add_edge(NODE, END)
        .entry(NODE)
        .compile()
        .map_err(|e| Failure::setup(format!("the synthetic node does not compile: {e}")))?;
    let (recorder, tokens) = token_recorder();
    otel.invoke(
        &graph,
        schema.defaults(),
        InvokeOptions::default().observer(recorder),
    )
    .await
    .map_err(|e| format!("the synthetic node failed: {e}"))?;
    graph.drain(None).await;
    let result = slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()
        .ok_or("the synthetic node made no call")?;
    let spans = exporter
        .get_finished_spans()
        .map_err(|e| format!("in-memory exporter: {e}"))?;
    Ok((result, span_views(&spans), take(&tokens)))
}

fn push_slot(
    slot: &Mutex<Option<Result<Option<Response>, LlmError>>>,
    result: Result<Option<Response>, LlmError>,
) {
    *slot
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(result);
}

/// The LLM spans, ordered by attempt index.
fn span_views(spans: &[SpanData]) -> Vec<SpanView> {
    let node = spans
        .iter()
        .find(|s| s.name == NODE)
        .map(|s| s.span_context.span_id());
    let mut views: Vec<SpanView> = spans
        .iter()
        .filter(|s| s.name == attr::LLM_SPAN)
        .map(|s| {
            let attributes: Map<String, Value> = s
                .attributes
                .iter()
                .map(|kv| {
                    (
                        kv.key.as_str().to_owned(),
                        crate::obs::attribute_json(&kv.value),
                    )
                })
                .collect();
            SpanView {
                attempt_index: attributes
                    .get(attr::LLM_ATTEMPT_INDEX)
                    .and_then(Value::as_i64),
                attributes,
                error: match &s.status {
                    Status::Error { description } => Some(description.to_string()),
                    _ => None,
                },
                ok: matches!(s.status, Status::Ok),
                exception: s.events.events.iter().any(|e| e.name == "exception"),
                under_node: Some(s.parent_span_id) == node,
            }
        })
        .collect();
    views.sort_by_key(|v| v.attempt_index);
    views
}
