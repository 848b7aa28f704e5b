//! Spec: conformance-adapter §6.7 (middleware wiring) and the pipeline-utilities
//! fixture header: canonical middleware (`retry`, `timing`, `failure_isolation`)
//! and the fixture-only test middleware.

use std::error::Error as StdError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use openarmature_graph::{
    category_of, CategorizedError, DynState, DynUpdate, Middleware, Next, NodeCtx, NodeFuture,
    State, StateView,
};
use openarmature_pipeline::retry::{
    CategoryClassifier, Classifier, Constant, DefaultClassifier, RetryConfig, Sleeper,
};
use openarmature_pipeline::{
    FailureIsolationMiddleware, MonotonicClock, RetryMiddleware, TimingMiddleware, TimingRecord,
};
use serde_json::{Map, Value};

use super::harness::{lock, Harness, TraceRecord};
use crate::yaml::Y;
use crate::AdapterError;

/// A middleware list (outermost first) from YAML.
pub(crate) fn chain(
    list: &Y<'_>,
    harness: &Arc<Harness>,
) -> Result<Vec<Arc<dyn Middleware<DynState>>>, AdapterError> {
    list.seq()?.iter().map(|m| one(m, harness)).collect()
}

fn unknown(y: &Y<'_>, what: String) -> AdapterError {
    AdapterError::DirectiveUnknown {
        file: y.file.to_path_buf(),
        directive: what,
        location: y.location().to_owned(),
    }
}

fn update_of(y: &Y<'_>) -> Result<DynUpdate, AdapterError> {
    let value = y.json()?;
    DynUpdate::from_json(value).ok_or_else(|| y.invalid("expected a partial update mapping"))
}

/// `{type: retry, max_attempts, backoff, classifier}`.
fn retry(m: &Y<'_>, harness: &Arc<Harness>) -> Result<Arc<dyn Middleware<DynState>>, AdapterError> {
    m.check_keys(&["type", "max_attempts", "backoff", "classifier"])?;
    let mut config = RetryConfig::default().sleeper(RecordingSleeper(Arc::clone(harness)));
    if let Some(n) = m.get("max_attempts") {
        config = config.max_attempts(
            u32::try_from(n.i64()?).map_err(|_| n.invalid("max_attempts must be ≥ 0"))?,
        );
    }
    if let Some(b) = m.get("backoff") {
        config.backoff = Arc::new(backoff(&b)?);
    }
    if let Some(c) = m.get("classifier") {
        config.classifier = classifier(&c)?;
    }
    Ok(Arc::new(RetryMiddleware::new(config)))
}

fn one(m: &Y<'_>, harness: &Arc<Harness>) -> Result<Arc<dyn Middleware<DynState>>, AdapterError> {
    // `- retry: {max_attempts}` (PU 053) is the shorthand of `- {type: retry, ...}`.
    if m.get("type").is_none() {
        if let Some(params) = m.get("retry") {
            m.check_keys(&["retry"])?;
            return retry(&params, harness);
        }
    }
    let kind = m.req("type")?.str()?;
    Ok(match kind {
        "retry" => return retry(m, harness),
        "timing" => {
            m.check_keys(&["type", "node_name", "on_complete"])?;
            let sink = Arc::clone(harness);
            let record = move |r: TimingRecord| {
                lock(&sink.timing_records).push(r);
                async { Ok(()) }
            };
            if let Some(on) = m.get("on_complete") {
                on.check_keys(&["capture_to"])?;
            }
            let timing = match m.get("node_name") {
                Some(n) => TimingMiddleware::new(n.str()?, record),
                None => TimingMiddleware::for_graph(record),
            };
            match harness.clock_step_ms {
                Some(step) => Arc::new(timing.with_clock(CountingClock {
                    reads: AtomicU64::new(0),
                    step_ms: step,
                })),
                None => Arc::new(timing),
            }
        }
        "failure_isolation" => Arc::new(isolation(m, harness)?),
        "trace_recorder" => {
            m.check_keys(&["type", "name", "pre_marker", "post_marker"])?;
            let marker = |k: &str| m.get(k).map(|v| v.str().map(str::to_owned)).transpose();
            Arc::new(TraceRecorder {
                name: m.req("name")?.str()?.to_owned(),
                pre: marker("pre_marker")?,
                post: marker("post_marker")?,
                harness: Arc::clone(harness),
            })
        }
        "short_circuit" => {
            m.check_keys(&["type", "partial_update"])?;
            Arc::new(Fixed(Ok(update_of(&m.req("partial_update")?)?)))
        }
        "error_recovery" => {
            m.check_keys(&["type", "partial_update"])?;
            Arc::new(ErrorRecovery(update_of(&m.req("partial_update")?)?))
        }
        "error_raiser" => {
            m.check_keys(&["type", "message"])?;
            Arc::new(Fixed(Err(m
                .get("message")
                .map(|v| v.str().map(str::to_owned))
                .transpose()?
                .unwrap_or_else(|| "error_raiser".into()))))
        }
        "state_inspector" => {
            m.check_keys(&["type", "name"])?;
            Arc::new(StateInspector(Arc::clone(harness)))
        }
        other => return Err(unknown(m, format!("middleware type: {other}"))),
    })
}

fn backoff(b: &Y<'_>) -> Result<Constant, AdapterError> {
    b.check_keys(&["type", "seconds"])?;
    match b.req("type")?.str()? {
        "deterministic" => {
            let secs = b.opt_f64("seconds")?.unwrap_or(0.0);
            let d = Duration::try_from_secs_f64(secs).map_err(|e| b.invalid(e.to_string()))?;
            Ok(Constant(d))
        }
        other => Err(unknown(b, format!("backoff type: {other}"))),
    }
}

fn classifier(c: &Y<'_>) -> Result<Arc<dyn Classifier>, AdapterError> {
    if let Ok("default") = c.str() {
        return Ok(Arc::new(DefaultClassifier));
    }
    if let Some(list) = c.get("transient_categories") {
        c.check_keys(&["transient_categories"])?;
        return Ok(Arc::new(CategoryClassifier::new(list.strings()?)));
    }
    c.check_keys(&["type"])?;
    match c.req("type")?.str()? {
        "default" => Ok(Arc::new(DefaultClassifier)),
        "state_aware_max_retries_remaining" => Ok(Arc::new(
            |_e: &(dyn StdError + 'static), state: Option<&dyn StateView>| {
                state
                    .and_then(|s| {
                        s.to_json()
                            .get("max_retries_remaining")
                            .and_then(Value::as_i64)
                    })
                    .is_some_and(|n| n > 0)
            },
        )),
        other => Err(unknown(c, format!("classifier type: {other}"))),
    }
}

/// `{{ state.<field> }}` from the pre-merge state (integers print without decimals).
fn render(template: &str, state: &Value) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return out;
        };
        let expr = after[..end].trim();
        let value = expr.strip_prefix("state.").and_then(|f| state.get(f));
        match value {
            Some(Value::String(s)) => out.push_str(s),
            Some(other) => out.push_str(&other.to_string()),
            None => out.push_str(&after[..end]),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

fn isolation(
    m: &Y<'_>,
    harness: &Arc<Harness>,
) -> Result<FailureIsolationMiddleware<DynState>, AdapterError> {
    m.check_keys(&[
        "type",
        "degraded_update",
        "event_name",
        "predicate",
        "catch",
        "on_caught",
    ])?;
    let event_name = m.req("event_name")?.str()?.to_owned();
    let degraded = m.req("degraded_update")?;
    let mut fi = if let Some(callable) = degraded.get("callable") {
        degraded.check_keys(&["callable", "template", "target_field"])?;
        match callable.str()? {
            "state_derived" => {
                let template = degraded.req("template")?.str()?.to_owned();
                let target = degraded.req("target_field")?.str()?.to_owned();
                FailureIsolationMiddleware::new(event_name, move |s: &DynState| {
                    DynUpdate::new().set(
                        target.clone(),
                        Value::String(render(&template, &State::to_json(s))),
                    )
                })
            }
            other => {
                return Err(unknown(
                    &callable,
                    format!("degraded_update callable: {other}"),
                ))
            }
        }
    } else {
        FailureIsolationMiddleware::with_update(event_name, update_of(&degraded)?)
    };
    if let Some(p) = m.get("predicate") {
        p.check_keys(&["matches_category"])?;
        let want = p.req("matches_category")?.str()?.to_owned();
        fi = fi.predicate(move |e| category_of(e).is_some_and(|c| c == want.as_str()));
    }
    if let Some(c) = m.get("catch") {
        fi = fi.catch(c.strings()?);
    }
    if let Some(on) = m.get("on_caught") {
        on.check_keys(&["kind", "increment_field", "capture_message_field"])?;
        match on.req("kind")?.str()? {
            "record_to_state_side_channel" => {
                let count_field = on.req("increment_field")?.str()?.to_owned();
                let message_field = on.req("capture_message_field")?.str()?.to_owned();
                let sink = Arc::clone(harness);
                fi = fi.on_caught(move |error: Arc<dyn StdError + Send + Sync>| {
                    let mut side = lock(&sink.side_channel);
                    let count = side.get(&count_field).and_then(Value::as_i64).unwrap_or(0);
                    side.insert(count_field.clone(), Value::from(count + 1));
                    side.insert(message_field.clone(), Value::String(error.to_string()));
                    async {}
                });
            }
            other => return Err(unknown(&on, format!("on_caught kind: {other}"))),
        }
    }
    Ok(fi)
}

/// Records every backoff sleep, then sleeps on the runtime timer.
struct RecordingSleeper(Arc<Harness>);

impl Sleeper for RecordingSleeper {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        lock(&self.0.sleeps).push(duration);
        Box::pin(tokio::time::sleep(duration))
    }
}

/// `clock_stub: {type: deterministic_monotonic, advance_ms_per_call}`.
struct CountingClock {
    reads: AtomicU64,
    step_ms: u64,
}

impl MonotonicClock for CountingClock {
    fn now(&self) -> Duration {
        let n = self.reads.fetch_add(1, Ordering::SeqCst);
        Duration::from_millis(n.saturating_mul(self.step_ms))
    }
}

/// `trace_recorder`: records each dispatch and wraps the update's `trace` with
/// its markers.
struct TraceRecorder {
    name: String,
    pre: Option<String>,
    post: Option<String>,
    harness: Arc<Harness>,
}

impl Middleware<DynState> for TraceRecorder {
    fn call<'a>(
        &'a self,
        state: Arc<DynState>,
        ctx: NodeCtx,
        next: Next<'a, DynState>,
    ) -> NodeFuture<'a, DynState> {
        Box::pin(async move {
            let index = {
                let mut records = lock(&self.harness.trace_records);
                records.push(TraceRecord {
                    recorder: self.name.clone(),
                    state_in: State::to_json(&*state),
                    pre_seen: true,
                    post_seen: false,
                    partial_update_returned: None,
                });
                records.len() - 1
            };
            let mut update = next.run(state, ctx).await?;
            if self.pre.is_some() || self.post.is_some() {
                let inner: Vec<Value> = match update.fields.iter().position(|(k, _)| k == "trace") {
                    Some(i) => match update.fields.remove(i).1 {
                        Value::Array(items) => items,
                        other => vec![other],
                    },
                    None => Vec::new(),
                };
                let mut trace: Vec<Value> =
                    self.pre.iter().map(|p| Value::String(p.clone())).collect();
                trace.extend(inner);
                trace.extend(self.post.iter().map(|p| Value::String(p.clone())));
                update.fields.push(("trace".into(), Value::Array(trace)));
            }
            let mut records = lock(&self.harness.trace_records);
            if let Some(r) = records.get_mut(index) {
                r.post_seen = true;
                r.partial_update_returned = Some(DynState::update_json(&update));
            }
            Ok(update)
        })
    }
}

/// `short_circuit` (the update) and `error_raiser` (an uncategorized error with the
/// message): never calls `next`.
struct Fixed(Result<DynUpdate, String>);

impl Middleware<DynState> for Fixed {
    fn call<'a>(
        &'a self,
        _state: Arc<DynState>,
        _ctx: NodeCtx,
        _next: Next<'a, DynState>,
    ) -> NodeFuture<'a, DynState> {
        let answer = self.0.clone();
        Box::pin(async move { answer.map_err(|m| CategorizedError::uncategorized(m).into()) })
    }
}

struct ErrorRecovery(DynUpdate);

impl Middleware<DynState> for ErrorRecovery {
    fn call<'a>(
        &'a self,
        state: Arc<DynState>,
        ctx: NodeCtx,
        next: Next<'a, DynState>,
    ) -> NodeFuture<'a, DynState> {
        Box::pin(async move {
            match next.run(state, ctx).await {
                Ok(update) => Ok(update),
                Err(_) => Ok(self.0.clone()),
            }
        })
    }
}

/// `state_inspector`: checks the state it passed down is unchanged afterwards.
struct StateInspector(Arc<Harness>);

impl Middleware<DynState> for StateInspector {
    fn call<'a>(
        &'a self,
        state: Arc<DynState>,
        ctx: NodeCtx,
        next: Next<'a, DynState>,
    ) -> NodeFuture<'a, DynState> {
        Box::pin(async move {
            let before = State::to_json(&*state);
            let result = next.run(Arc::clone(&state), ctx).await;
            if State::to_json(&*state) != before {
                lock(&self.0.violations).push("state mutated under state_inspector".into());
            }
            result
        })
    }
}

/// The side channel overlaid onto `final_state` (PU 062).
pub(crate) fn overlay(state: &mut Value, side: &Map<String, Value>) {
    if let Value::Object(map) = state {
        for (k, v) in side {
            map.insert(k.clone(), v.clone());
        }
    }
}
