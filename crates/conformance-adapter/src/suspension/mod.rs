//! Spec: conformance-adapter §4 for the suspension suite: builds each case's graph with
//! the graph-engine runner's builder (plus this suite's directives, `nodes.rs`), runs
//! its `invocations` in order — a resume names the previous suspended outcome — and
//! asserts each invocation's `expected` block and the case's `invariants` (a table,
//! `invariants.rs`).
//!
//! Adapter register U1: `expected.suspending_node` names the outermost node on the
//! suspension path (`namespace[0]` of the outcome: the subgraph, fan-out or branches
//! node containing the suspending node); the outcome's `node_name` is the suspending
//! node's own name per suspension §5.

mod invariants;

pub(crate) use invariants::TABLE_NAMES as INVARIANT_NAMES;
pub(crate) mod nodes;

pub(crate) use invariants::subset;

use std::collections::HashMap;
use std::sync::Arc;

use openarmature_graph::checkpoint::Checkpointer;
use openarmature_graph::session::{SessionConfig, SessionStore};
use openarmature_graph::suspension::{Outcome, PausedRecord};
use openarmature_graph::{
    CompiledGraph, DynState, InvokeOptions, ObserverEvent, Registration, State,
};
use openarmature_observability::OtelObserver;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde_json::{Map, Value};

use crate::failure::{Check, Failure};
use crate::ge::build::{Builder, INLINE_GRAPH_CASE_KEYS};
use crate::ge::harness::{lock, Behavior, Harness, HarnessObserver, Pace};
use crate::yaml::Y;
use crate::AdapterError;

/// One invocation of a case, reduced to what the fixtures assert.
pub(crate) struct RunRecord {
    /// `completed`, `suspended` or `errored`.
    pub(crate) outcome: &'static str,
    pub(crate) invocation_id: String,
    /// The final state, the state at the suspension point, or the error's state.
    pub(crate) state: Value,
    pub(crate) category: Option<String>,
    /// `signal_id`, `metadata`, the namespace and node of a suspension.
    pub(crate) descriptor: Option<Value>,
    pub(crate) namespace: Vec<String>,
    /// Outer-graph nodes whose bodies ran in this invocation.
    pub(crate) order: Vec<String>,
    /// The events each recording observer received during this invocation.
    pub(crate) events: HashMap<String, Vec<Arc<ObserverEvent>>>,
    pub(crate) payload: Option<Value>,
    /// The session record's state after the invocation.
    pub(crate) session: Option<Value>,
    /// The paused record of the invocation after it, and whether a checkpoint record
    /// (the other record type) exists for it.
    pub(crate) paused: Option<PausedRecord>,
    pub(crate) checkpoint_record: bool,
}

/// What a case set up, shared by its invocations' assertions.
pub(crate) struct CaseRig {
    pub(crate) harness: Arc<Harness>,
    pub(crate) log: Arc<std::sync::Mutex<Vec<String>>>,
    pub(crate) recorders: Vec<(String, Arc<HarnessObserver>)>,
    pub(crate) otel: Vec<(String, InMemorySpanExporter)>,
    pub(crate) checkpointer: Option<Arc<dyn Checkpointer>>,
    pub(crate) sessions: Option<Arc<dyn SessionStore>>,
}

/// Adapter register U2: a `fan_out:` block without `collect_field` (fixture 007, whose
/// run never reaches fan-in) collects its `item_field`.
pub(crate) fn desugar(value: &mut serde_norway::Value) {
    use serde_norway::Value as V;
    match value {
        V::Mapping(m) => {
            if let Some(V::Mapping(f)) = m.get_mut("fan_out") {
                let item = f.get("item_field").cloned();
                if let (None, Some(item)) = (f.get("collect_field"), item) {
                    f.insert(V::from("collect_field"), item);
                }
            }
            for (_, v) in m.iter_mut() {
                desugar(v);
            }
        }
        V::Sequence(items) => items.iter_mut().for_each(desugar),
        _ => {}
    }
}

pub(crate) async fn run_case(doc: &Y<'_>, case: &Y<'_>) -> Check {
    let same = case.value == doc.value;
    let mut patched = case.value.clone();
    desugar(&mut patched);
    let case = &Y::root(&patched, case.file);
    case.check_keys_of(&[
        INLINE_GRAPH_CASE_KEYS,
        &[
            "observers",
            "invocations",
            "invariants",
            "session_store",
            "checkpointer",
        ],
    ])?;
    let harness = Arc::new(Harness::default());
    let ext = Arc::new(nodes::SuspendExt::default());
    let log = Arc::clone(&ext.log);
    let mut builder = Builder::new(Arc::clone(&harness));
    builder.extension = Some(ext);
    builder.collect_defs(doc)?;
    if !same {
        builder.collect_defs(case)?;
    }
    let checkpointer = match case.get("checkpointer") {
        None => None,
        // The selected backend's, when a backend crate's test binary selected one.
        Some(c) if c.str()? == "in_memory" => Some(crate::backends::checkpointer_or_in_memory()?),
        Some(c) => {
            return Err(Failure::from(
                c.invalid("only `in_memory` checkpointers are scripted"),
            ))
        }
    };
    let sessions = match case.get("session_store") {
        None => None,
        Some(c) if c.str()? == "in_memory" => Some(crate::backends::session_store_or_in_memory()?),
        Some(c) => {
            return Err(Failure::from(
                c.invalid("only `in_memory` session stores are scripted"),
            ))
        }
    };
    let (cp, ss) = (checkpointer.clone(), sessions.clone());
    builder.configure_outer = Some(Box::new(move |mut b| {
        if let Some(cp) = &cp {
            b = b.checkpointer(Arc::clone(cp));
        }
        if let Some(ss) = &ss {
            b = b.sessions(SessionConfig::new(Arc::clone(ss)));
        }
        b
    }));
    let graph = builder
        .graph(case, true, &[])?
        .map_err(|e| Failure::setup(format!("unexpected compile error: {e}")))?;
    let mut rig = CaseRig {
        harness,
        log,
        recorders: Vec::new(),
        otel: Vec::new(),
        checkpointer,
        sessions,
    };
    attach_observers(case, &graph, &mut rig)?;

    let mut runs: Vec<RunRecord> = Vec::new();
    for item in case.named_items(
        "invocations",
        &[
            "name",
            "initial_state",
            "resume_invocation",
            "signal_payload",
            "session_id",
            "expected",
        ],
    )? {
        let (label, inv) = item?;
        let record = invoke(&graph, &inv, &rig, runs.last()).await?;
        if let Some(expected) = inv.get("expected") {
            invariants::expected(&expected, &record, &rig)
                .map_err(|m| m.context(format!("invocation {label}: ")))?;
        }
        runs.push(record);
    }
    for scope in [
        case.get("invariants"),
        (!same).then(|| doc.get("invariants")).flatten(),
    ]
    .into_iter()
    .flatten()
    {
        invariants::check(&scope, &runs, &rig)?;
    }
    Ok(())
}

fn attach_observers(
    case: &Y<'_>,
    graph: &CompiledGraph<DynState>,
    rig: &mut CaseRig,
) -> Result<(), AdapterError> {
    let Some(list) = case.get("observers") else {
        return Ok(());
    };
    for spec in list.seq()? {
        spec.check_keys(&["name", "attach", "target", "behavior"])?;
        let name = spec.req("name")?.str()?.to_owned();
        let attach = spec.opt_str("attach")?.unwrap_or("graph");
        let target = spec.opt_str("target")?.unwrap_or("outer");
        if (attach, target) != ("graph", "outer") {
            return Err(
                spec.invalid("only graph-attached observers of the outer graph are scripted")
            );
        }
        match spec.opt_str("behavior")?.unwrap_or("record") {
            "record" => {
                let observer = Arc::new(HarnessObserver::new(
                    &name,
                    Behavior::Record,
                    Pace::Fixed(0),
                    Arc::clone(&rig.harness.deliveries),
                    true,
                ));
                graph.attach_observer(Registration::shared(
                    name.as_str(),
                    Arc::clone(&observer) as Arc<_>,
                ));
                rig.recorders.push((name, observer));
            }
            "otel" => {
                let exporter = InMemorySpanExporter::default();
                let provider = SdkTracerProvider::builder()
                    .with_simple_exporter(exporter.clone())
                    .build();
                graph.attach_observer(OtelObserver::builder(&provider).build().registration());
                rig.otel.push((name, exporter));
            }
            other => {
                return Err(AdapterError::DirectiveUnknown {
                    file: spec.file.to_path_buf(),
                    directive: format!("behavior: {other}"),
                    location: spec.location().to_owned(),
                })
            }
        }
    }
    Ok(())
}

async fn invoke(
    graph: &CompiledGraph<DynState>,
    inv: &Y<'_>,
    rig: &CaseRig,
    previous: Option<&RunRecord>,
) -> Check<RunRecord> {
    let schema = graph.defaults().schema();
    let mut options = InvokeOptions::default();
    if let Some(s) = inv.get("session_id") {
        options.session_id = Some(s.str()?.to_owned());
    }
    let payload = inv.get("signal_payload").map(|p| p.json()).transpose()?;
    let initial = match inv.get("resume_invocation") {
        Some(r) => {
            let named = r.str()?;
            // `<from previous ...>`: the previous invocation's id.
            let id = if named.starts_with('<') {
                previous
                    .map(|p| p.invocation_id.clone())
                    .ok_or("resume_invocation names a previous invocation, but this is the first")?
            } else {
                named.to_owned()
            };
            options = options
                .resume_invocation(id)
                .signal_payload(payload.clone().unwrap_or(Value::Object(Map::new())));
            graph.defaults().clone()
        }
        None => {
            let initial = inv.get("initial_state").map(|s| s.json()).transpose()?;
            schema
                .state_from_json(&initial.unwrap_or(Value::Null))
                .map_err(|e| format!("initial_state: {e}"))?
        }
    };
    let order_before = lock(&rig.harness.order).len();
    let events_before: Vec<usize> = rig
        .recorders
        .iter()
        .map(|(_, o)| lock(&o.events).len())
        .collect();
    let result = graph.run(initial, options.clone()).await;
    graph.drain(None).await;
    let mut record = RunRecord {
        outcome: "completed",
        invocation_id: String::new(),
        state: Value::Null,
        category: None,
        descriptor: None,
        namespace: Vec::new(),
        order: lock(&rig.harness.order)[order_before..]
            .iter()
            .map(|(_, n)| n.clone())
            .collect(),
        events: rig
            .recorders
            .iter()
            .zip(events_before)
            .map(|((name, o), before)| (name.clone(), lock(&o.events)[before..].to_vec()))
            .collect(),
        payload,
        session: None,
        paused: None,
        checkpoint_record: false,
    };
    match result {
        Ok(Outcome::Completed(done)) => {
            record.invocation_id = done.invocation_id;
            record.state = done.state.to_json();
        }
        Ok(Outcome::Suspended(paused)) => {
            record.outcome = "suspended";
            record.invocation_id = paused.invocation_id;
            record.state = paused.state.to_json();
            record.descriptor =
                Some(serde_json::to_value(&paused.descriptor).map_err(Failure::mismatch)?);
            record.namespace = paused.namespace;
        }
        Ok(_) => return Err("an outcome this runner does not know".into()),
        Err(e) => {
            record.outcome = "errored";
            record.invocation_id = e.invocation_id().to_owned();
            record.category = Some(e.category_name().to_owned());
            record.state = e.into_state().to_json();
        }
    }
    if let (Some(store), Some(id)) = (&rig.sessions, &options.session_id) {
        record.session = store
            .load(id)
            .await
            .map_err(Failure::mismatch)?
            .map(|r| r.state);
    }
    if let Some(cp) = &rig.checkpointer {
        record.paused = cp
            .load_paused(&record.invocation_id)
            .await
            .map_err(Failure::mismatch)?;
        record.checkpoint_record = cp
            .load(&record.invocation_id)
            .await
            .map_err(Failure::mismatch)?
            .is_some();
    } else {
        record.paused = graph
            .paused_record(&record.invocation_id)
            .await
            .map_err(Failure::mismatch)?;
    }
    Ok(record)
}
