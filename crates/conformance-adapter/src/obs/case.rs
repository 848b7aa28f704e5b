//! Spec: observability conformance (fixture-001 header) and conformance-adapter §5.8 —
//! running one observability case: the private providers, the observer, the graph
//! build, every invocation, and the assertions over what they exported.

use std::sync::{Arc, Mutex};

use openarmature_graph::{
    observer_fn, DynState, InvokeOptions, ObserverEvent, Registration, State,
};
use openarmature_llm::LlmError;
use openarmature_observability::{InvokeError, OtelObserver};
use opentelemetry_sdk::logs::{InMemoryLogExporter, SdkLoggerProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde_json::Value;

use super::desugar::llm_desugar;
use super::expected::{assert_expected, expected_error};
use super::ext::ObsExtension;
use super::llm::LlmHarness;
use super::logs::log_views;
use super::prompts::PromptHarness;
use super::setup::{canonical_json, graph_defs, mentions, subgraph_nodes, GlobalOtel};
use super::spans::{Forest, MatchOpts};
use super::typed::Collector;
use super::{attempts, langfuse, meta, metrics, resume, Outcome, Run, CASE_KEYS, FILE_KEYS};
use crate::failure::{Check, Failure};
use crate::ge::build::{Builder, INLINE_GRAPH_CASE_KEYS};
use crate::ge::harness::Harness;
use crate::shared::{lock, on_own_runtime};
use crate::yaml::Y;

/// Runs one observability case; cases that call an LLM get their own unpaused
/// runtime with I/O, in a dedicated thread.
pub(crate) async fn run_case<'a>(doc: &Y<'a>, case: &Y<'a>) -> Check {
    if case.get("direct_call").is_some() {
        return meta::expect::direct_call(case);
    }
    let needs_llm = case.get("mock_llm").is_some()
        || case.get("mock_llm_stream").is_some()
        || mentions(case.value, "calls_llm")
        || case.get("mock_embedding").is_some()
        || case.get("mock_rerank").is_some();
    let desugared = llm_desugar(case)?;
    if !needs_llm {
        let case = desugared
            .as_ref()
            .map_or_else(|| case.clone(), |v| Y::root(v, case.file));
        return run_inner(doc, &case, false).await;
    }
    let file = case.file.to_path_buf();
    let single = std::ptr::eq(doc.value, case.value);
    let doc_value = doc.value.clone();
    let case_value = desugared.unwrap_or_else(|| case.value.clone());
    on_own_runtime("observability-llm-case", move || async move {
        let doc = Y::root(&doc_value, &file);
        let case = if single {
            doc.clone()
        } else {
            Y::root(&case_value, &file)
        };
        run_inner(&doc, &case, true).await
    })
    .await
}

fn flag(case: &Y<'_>, key: &str) -> Check<Option<bool>> {
    case.get(key)
        .map(|f| f.bool())
        .transpose()
        .map_err(Failure::from)
}

/// Runs one case (on the current runtime).
async fn run_inner<'a>(doc: &Y<'a>, case: &Y<'a>, needs_llm: bool) -> Check {
    let mut keys = INLINE_GRAPH_CASE_KEYS.to_vec();
    keys.extend_from_slice(CASE_KEYS);
    keys.extend_from_slice(resume::CASE_KEYS);
    if case.value == doc.value {
        keys.push("conformance_version");
    } else {
        doc.check_keys(FILE_KEYS)?;
    }
    case.check_keys(&keys)?;

    attempts::check_observers(case)?;
    let global = match flag(case, "caller_global_otel_active")? {
        Some(true) => Some(GlobalOtel::install()),
        _ => None,
    };
    let span_exporter = InMemorySpanExporter::default();
    let tracer_provider = SdkTracerProvider::builder()
        .with_simple_exporter(span_exporter.clone())
        .build();
    let log_exporter = InMemoryLogExporter::default();
    let logger_provider = SdkLoggerProvider::builder()
        .with_simple_exporter(log_exporter.clone())
        .build();

    let defs = graph_defs(doc, case);
    let sub_nodes = subgraph_nodes(&defs);
    let mut ob = OtelObserver::builder(&tracer_provider).logger_provider(&logger_provider);
    let mut detached_nodes = Vec::new();
    let mut detached_fan_outs = Vec::new();
    for (node, identity) in &sub_nodes {
        ob = ob.subgraph_name(node, identity);
    }
    if let Some(list) = case.get("detached_subgraphs") {
        for identity in list.strings()? {
            let nodes: Vec<&String> = sub_nodes
                .iter()
                .filter(|(_, id)| *id == identity)
                .map(|(n, _)| n)
                .collect();
            if nodes.is_empty() {
                return Err(Failure::from(
                    list.invalid(format!("no node runs subgraph `{identity}`")),
                ));
            }
            for n in nodes {
                detached_nodes.push(n.clone());
                ob = ob.detach_subgraph(n);
            }
        }
    }
    if let Some(list) = case.get("detached_fan_outs") {
        for node in list.strings()? {
            detached_fan_outs.push(node.clone());
            ob = ob.detach_fan_out(node);
        }
    }
    if let Some(b) = flag(case, "disable_llm_spans")? {
        ob = ob.disable_llm_spans(b);
    }
    if let Some(b) = flag(case, "disable_provider_payload")? {
        ob = ob.disable_provider_payload(b);
    }
    if let Some(b) = flag(case, "disable_genai_semconv")? {
        ob = ob.disable_genai_semconv(b);
    }
    // §6.9: the observer's meter comes from a private provider read in memory.
    let meters = metrics::Capture::new();
    ob = ob
        .meter_provider(&meters.provider)
        .enable_metrics(flag(case, "enable_metrics")?.unwrap_or(false));
    let observer = ob.build();
    let (langfuse_observer, langfuse_mode) = if langfuse::wanted(case) {
        let mode = langfuse::client::client_mode(case).await?;
        let lf = langfuse::observer(
            case,
            &sub_nodes,
            &detached_nodes,
            &detached_fan_outs,
            mode.as_ref(),
            &defs,
        )?;
        (Some(lf), mode)
    } else {
        (None, None)
    };

    let llm = if needs_llm {
        Some(Arc::new(LlmHarness::start(case).await?))
    } else {
        None
    };
    let collectors: Vec<Arc<Collector>> = match case.get("typed_observers") {
        Some(list) => list
            .seq()?
            .iter()
            .map(|o| Collector::parse(o).map(Arc::new))
            .collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    let recorded: Arc<Mutex<Vec<Arc<ObserverEvent>>>> = Arc::default();
    let sink = Arc::clone(&recorded);
    let recorder = Registration::new(
        "__implicit_recorder",
        observer_fn(move |e: Arc<ObserverEvent>| {
            let sink = Arc::clone(&sink);
            async move {
                lock(&sink).push(e);
                Ok(())
            }
        }),
    );

    let meta = Arc::new(meta::MetaHarness::from_case(doc, case)?);
    let harness = Arc::new(Harness::default());
    let emitted = Arc::new(Mutex::new(Vec::new()));
    let mut builder = Builder::new(Arc::clone(&harness));
    builder.extension = Some(Arc::new(ObsExtension {
        observer: observer.clone(),
        logs: Arc::clone(&emitted),
        llm: llm.clone(),
        prompts: PromptHarness::from_case(case)?.map(Arc::new),
        meta: Arc::clone(&meta),
        retrieval: super::retrieval::RetrievalHarness::start(case)
            .await?
            .map(Arc::new),
    }));
    builder.collect_defs(doc)?;
    if case.value != doc.value {
        builder.collect_defs(case)?;
    }
    if let Some(cp) = resume::checkpointer(case)? {
        builder.configure_outer = Some(Box::new(move |b| b.checkpointer(Arc::clone(&cp))));
    }
    let initial = match case.get("initial_state") {
        None => Value::Null,
        Some(y) if y.is_null() || y.value.is_mapping() => y.json()?,
        Some(y) => return Err(Failure::from(y.invalid("initial_state must be a mapping"))),
    };
    let extra: Vec<String> = initial
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let graph = builder
        .graph(case, true, &extra)?
        .map_err(|e| Failure::setup(format!("unexpected compile error: {e}")))?;

    // `invocations: N`, or a list of per-invocation `{session_id?, initial_state?}`
    // (084).
    let mut per_invocation: Vec<(Option<String>, Option<Value>)> = Vec::new();
    let count = match case.get("invocations") {
        Some(list) if list.value.is_sequence() => {
            for entry in list.seq()? {
                entry.check_keys(&["session_id", "initial_state"])?;
                let session = entry
                    .get("session_id")
                    .map(|s| s.str().map(str::to_owned))
                    .transpose()?;
                let state = entry.get("initial_state").map(|s| s.json()).transpose()?;
                per_invocation.push((session, state));
            }
            if per_invocation.is_empty() {
                return Err(Failure::from(list.invalid("invocations must not be empty")));
            }
            per_invocation.len()
        }
        Some(n) => usize::try_from(n.i64()?)
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| Failure::from(n.invalid("invocations must be a positive integer")))?,
        None => 1,
    };
    let session_id = case
        .get("session_id")
        .map(|c| c.str().map(str::to_owned))
        .transpose()?;
    // 049 `sequential_invocations`: one invocation per entry, with its id.
    let count = if meta.sequence.is_empty() {
        count
    } else {
        meta.sequence.len()
    };
    let caller_invocation_id = case
        .get("caller_invocation_id")
        .map(|c| c.str().map(str::to_owned))
        .transpose()?;
    let correlation_id = case
        .get("caller_correlation_id")
        .map(|c| c.str().map(str::to_owned))
        .transpose()?;
    let metadata = match case.get("caller_metadata") {
        Some(m) => match m.json()? {
            Value::Object(map) => map,
            _ => {
                return Err(Failure::from(
                    m.invalid("caller_metadata must be a mapping"),
                ))
            }
        },
        None => serde_json::Map::new(),
    };

    let attach = |mut options: InvokeOptions| {
        options = options.observer(recorder.clone());
        for q in &meta.observers {
            options = options.observer(q.registration());
        }
        for c in &collectors {
            options = options.observer(c.registration());
        }
        if let Some(lf) = &langfuse_observer {
            options = options.observer(lf.registration());
        }
        options
    };
    let mut outcomes = Vec::new();
    let mut invocation_ids = Vec::new();
    for i in 0..count {
        let (own_session, own_initial) = per_invocation.get(i).cloned().unwrap_or_default();
        let state: DynState = graph
            .defaults()
            .schema()
            .state_from_json(own_initial.as_ref().unwrap_or(&initial))
            .map_err(|e| format!("initial_state: {e}"))?;
        let mut options = attach(InvokeOptions {
            correlation_id: correlation_id.clone(),
            metadata: metadata.clone(),
            session_id: own_session.or_else(|| session_id.clone()),
            ..InvokeOptions::default()
        });
        options.invocation_id = meta
            .sequence
            .get(i)
            .map(|(_, id)| id.clone())
            .or_else(|| caller_invocation_id.clone());
        let result = observer.invoke(&graph, state, options).await;
        outcomes.push(outcome(result, &mut invocation_ids));
    }
    // Register O22: `resume:` runs once more, resuming the first run.
    let mut before_resume = Vec::new();
    if let Some(from) = resume::resume_from(case, invocation_ids.first().map(String::as_str))? {
        graph.drain_events_for(&from, None).await;
        if let Some(lf) = &langfuse_observer {
            before_resume = lf.traces();
        }
        let options = attach(InvokeOptions {
            metadata: metadata.clone(),
            ..InvokeOptions::default()
        })
        .resume_invocation(from);
        let result = observer
            .invoke(&graph, graph.defaults().clone(), options)
            .await;
        outcomes.push(outcome(result, &mut invocation_ids));
    }
    graph.drain(None).await;
    *lock(&meta.finals) = outcomes
        .iter()
        .map(|o| match o {
            Outcome::Completed(v) => Some(v.clone()),
            _ => None,
        })
        .collect();
    observer.close_all();
    let langfuse_traces = match &langfuse_observer {
        Some(lf) => {
            lf.close_all();
            if let Some(langfuse::client::ClientMode::Credentials(mock)) = &langfuse_mode {
                lf.flush()
                    .await
                    .map_err(|e| format!("Langfuse flush: {e}"))?;
                if mock.batches().is_empty() {
                    return Err("Langfuse ingestion mock received no batch".into());
                }
            }
            Some(lf.traces())
        }
        None => None,
    };
    let metric_points = meters.finish()?;
    let spans = span_exporter
        .get_finished_spans()
        .map_err(|e| format!("in-memory exporter: {e}"))?;
    let global_spans = match &global {
        Some(g) => Some(
            g.exporter
                .get_finished_spans()
                .map_err(|e| format!("global in-memory exporter: {e}"))?,
        ),
        None => None,
    };
    drop(global);
    if let Some(h) = &llm {
        let overruns = h.overruns();
        if !overruns.is_empty() {
            return Err(format!("mock provider exhausted: {}", overruns.join("; ")).into());
        }
    }
    let forest = Forest::new(spans);
    let global_forest = global_spans.map(Forest::new);
    let logs = log_views(&log_exporter)?;
    let events = lock(&recorded).clone();
    let mut opts = MatchOpts::default();
    if let Some(h) = &llm {
        opts.blobs = lock(&h.blobs).clone();
    }
    for e in &events {
        if let ObserverEvent::LlmAttempt(a) = &**e {
            opts.full_serializations.push(canonical_json(&Value::Array(
                a.request.input_messages.to_vec(),
            )));
        }
    }
    let run = Run {
        forest: &forest,
        logs,
        emitted: lock(&emitted).clone(),
        case,
        invocation_ids,
        events,
        collectors,
        calls: llm
            .as_ref()
            .map(|h| lock(&h.calls).clone())
            .unwrap_or_default(),
        meta: Arc::clone(&meta),
        failures: outcomes
            .iter()
            .map(|o| match o {
                Outcome::Failed { llm, .. } => Some(llm.clone()),
                _ => None,
            })
            .collect(),
        metrics: metric_points,
        langfuse: langfuse_traces,
    };

    if let Some(e) = case.get("expected_error") {
        expected_error(&e, &outcomes).map_err(|m| m.context("expected_error: "))?;
    }
    if resume::present(case) {
        resume::check(case, &run, &outcomes, &before_resume)?;
        if case.get("expected").is_none() {
            return Ok(());
        }
    }
    let expected = case.req("expected")?;
    assert_expected(
        &expected,
        &run,
        &outcomes,
        &harness,
        &opts,
        global_forest.as_ref(),
    )?;
    meta::expect::check_expected(&expected, &run, &outcomes)?;
    attempts::check_expected(&expected, &run)
}

/// The outcome of one invocation; its id goes to `ids`.
fn outcome(
    result: Result<openarmature_graph::Completed<DynState>, InvokeError<DynState>>,
    ids: &mut Vec<String>,
) -> Outcome {
    match result {
        Ok(done) => {
            ids.push(done.invocation_id);
            Outcome::Completed(State::to_json(&done.state))
        }
        Err(InvokeError::Graph(e)) => {
            ids.push(e.invocation_id().to_owned());
            Outcome::Failed {
                category: e.category_name().to_owned(),
                node: e.node().to_owned(),
                llm: LlmError::find_in(e.cause())
                    .map(|l| l.category().as_str().to_owned())
                    .or_else(|| {
                        openarmature_retrieval::RetrievalError::find_in(e.cause())
                            .map(|r| r.category().as_str().to_owned())
                    }),
            }
        }
        Err(_) => Outcome::Rejected,
    }
}
