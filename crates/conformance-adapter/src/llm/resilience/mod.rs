//! The runner of the project's own llm-provider fixtures for the opt-in resilience
//! extensions (spec/extensions/ 0001–0005). A case (or its file) that declares
//! `extensions: [...]` comes here; everything else stays with the upstream runner.
//!
//! Vocabulary: the upstream llm-provider directives (`mock_provider`, `call` /
//! `calls`, `retry`, `retry_middleware`, `expected.{raises, response, success,
//! provider_call_count, llm_spans, invariants, ...}`, asserted by the upstream
//! assertions), plus:
//!
//! - `extensions: [attempt_accounting | retry_after | retry_budget |
//!   circuit_breaker | provider_classification]` — required; a directive of an
//!   undeclared extension is a fixture error;
//! - `endpoint: {key, circuit_breaker: {...}, retry_budget: {...}}` — one shared
//!   endpoint per case (the provider is wrapped in `ResilientProvider`; both lanes'
//!   sleepers skip waits the open breaker would refuse), on a manual clock that
//!   backoff sleeps advance;
//! - per call: `advance_clock_seconds` (before the call), `in_graph: true` (the call
//!   runs in register L3's synthetic one-node graph under the OTel observer, so
//!   `llm_spans` asserts the exported spans; `retry_middleware` is a real
//!   `RetryMiddleware`; typed events reach the usage aggregator; without it no spans
//!   are recorded), `failure_isolation: true` (outermost `FailureIsolationMiddleware`,
//!   degraded update `{degraded: true}`);
//! - `retry` / `retry_middleware` values: `classifier: openai | anthropic |
//!   generic`, `backoff: {type: retry_after, cap_seconds, seconds}`, `budget: true`;
//! - `expected`: `usage`, `sleeps_seconds`, `breaker_state`, `breaker_transitions`,
//!   `budget`, `degraded`, `extension_events` (see [`checks`]).
//!
//! Unknown keys anywhere fail with `fixture_directive_unknown`.

mod checks;
mod exec;
mod setup;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use openarmature_llm::resilience::ResilientProvider;
use openarmature_llm::{OpenAiProvider, Provider};
use openarmature_pipeline::retry::Sleeper;
use openarmature_testkit::ManualClock;
use serde_norway::Value;

use super::{bound_model, call_specs, case_mock, CallSpec, Mapping};
use crate::failure::{Check, Failure};
use crate::http_mock::MockServer;
use crate::yaml::Y;

use self::setup::Extensions;

/// Extension keys of a case (or a `cases:` file).
const CASE_EXTRA: &[&str] = &["extensions", "endpoint"];
/// Extension keys of a call.
const CALL_EXTRA: &[&str] = &["in_graph", "failure_isolation", "advance_clock_seconds"];
/// Extension keys of `expected`.
pub(super) const EXPECTED_EXTRA: &[&str] = &[
    "usage",
    "sleeps_seconds",
    "breaker_state",
    "breaker_transitions",
    "budget",
    "degraded",
    "extension_events",
];

type Sleeps = Arc<Mutex<Vec<Duration>>>;

/// Records requested backoff delays and returns at once (virtual time); with an
/// endpoint, the sleep advances its manual clock.
struct Recording(Sleeps, Option<ManualClock>);

impl Sleeper for Recording {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        push(&self.0, duration);
        if let Some(clock) = &self.1 {
            clock.advance(duration);
        }
        Box::pin(async {})
    }
}

fn push<T>(log: &Mutex<Vec<T>>, item: T) {
    log.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(item);
}

fn take<T>(log: &Mutex<Vec<T>>) -> Vec<T> {
    std::mem::take(
        &mut *log
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner),
    )
}

fn keys(base: &[&'static str], extra: &[&'static str]) -> Vec<&'static str> {
    base.iter().chain(extra).copied().collect()
}

/// Whether this case belongs to the extension runner.
pub(super) fn claims(root: &Y<'_>, case: &Y<'_>) -> bool {
    case.get("extensions").is_some() || root.get("extensions").is_some()
}

/// `y` with the extension keys of `expected` removed, for the upstream assertions.
fn upstream_view(value: &Value) -> Value {
    let mut v = value.clone();
    if let Some(expected) = v.get_mut("expected").and_then(Value::as_mapping_mut) {
        for k in EXPECTED_EXTRA {
            expected.remove(*k);
        }
    }
    v
}

/// Runs one extension case (on the llm runner's unpaused runtime).
pub(super) async fn run(root: &Y<'_>, case: &Y<'_>) -> Check {
    let single = std::ptr::eq(root.value, case.value);
    if !single {
        root.check_keys(&keys(super::FILE_KEYS, CASE_EXTRA))?;
    }
    case.check_keys(&keys(super::CASE_KEYS, CASE_EXTRA))?;
    let ext_y = case
        .get("extensions")
        .or_else(|| root.get("extensions"))
        .ok_or("no `extensions`")?;
    let ext = Extensions::parse(&ext_y)?;
    if let Some(mapping) = case.get("mapping").or_else(|| root.get("mapping")) {
        let name = mapping.str()?;
        if name != "openai" {
            return Err(Failure::unsupported(format!(
                "harness_primitive_missing: mapping `{name}` is not implemented"
            )));
        }
    }
    let endpoint = match case.get("endpoint").or_else(|| root.get("endpoint")) {
        Some(e) => Some(setup::endpoint(&e, &ext)?),
        None => None,
    };
    let mock = case_mock(root, case)?;
    let calls = call_specs(case)?;
    for spec in &calls {
        spec.call.check_keys(&keys(super::CALL_KEYS, CALL_EXTRA))?;
    }
    let model = bound_model(&calls, &mock, Mapping::OpenAi);
    let server = MockServer::start(mock.responses.clone(), mock.health.clone())
        .await
        .map_err(|e| format!("cannot start the mock provider: {e}"))?;
    let inner = OpenAiProvider::builder(server.base_url(), &model)
        .api_key("test-key")
        .transport(crate::http_mock::transport())
        .capabilities(mock.capabilities)
        .build()
        .map_err(|e| Failure::setup(format!("cannot build the provider: {e}")))?;
    let provider: Arc<dyn Provider> = match &endpoint {
        Some(e) => Arc::new(ResilientProvider::new(inner, Arc::clone(&e.endpoint))),
        None => Arc::new(inner),
    };

    for (i, spec) in calls.iter().enumerate() {
        let label = if calls.len() > 1 {
            format!("call {i}: ")
        } else {
            String::new()
        };
        if let Some(a) = spec.call.get("advance_clock_seconds") {
            let e = endpoint
                .as_ref()
                .ok_or_else(|| format!("{label}`advance_clock_seconds` needs an `endpoint`"))?;
            let by = Duration::try_from_secs_f64(a.f64()?)
                .map_err(|_| format!("{label}advance_clock_seconds must be non-negative"))?;
            e.clock.advance(by);
        }
        let ctx = exec::Ctx {
            provider: &provider,
            server: &server,
            model: &model,
            scripted: mock.responses.len(),
            ext: &ext,
            endpoint: endpoint.as_ref(),
        };
        let outcome = exec::call(&ctx, spec)
            .await
            .map_err(|m| m.context(&label))?;
        let overruns = server.overruns();
        if !overruns.is_empty() {
            return Err(format!("{label}mock provider exhausted: {}", overruns.join("; ")).into());
        }
        let call_view = upstream_view(spec.call.value);
        let case_view = spec.case.as_ref().map(|c| upstream_view(c.value));
        let upstream = CallSpec {
            call: Y::root(&call_view, spec.call.file),
            case: case_view.as_ref().map(|c| Y::root(c, spec.call.file)),
        };
        super::expect::call(&upstream, &outcome.run).map_err(|m| m.context(&label))?;
        checks::call(spec, &ext, &outcome, endpoint.as_ref()).map_err(|m| m.context(&label))?;
    }
    Ok(())
}
