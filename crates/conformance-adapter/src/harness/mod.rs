//! Spec: conformance-adapter §4 for the harness suite: the case graph (built like the
//! suspension suite's, with its directives) served by an `openarmature_harness::Harness`
//! in the case's mode; each `transmissions` entry is one synthetic inbound handed to
//! `Harness::handle`, and its turn is asserted (`expected`) — then the case invariants,
//! a table (`invariants.rs`).
//!
//! Adapter register H1: the harness builds every turn's initial state from the schema
//! defaults (the fixtures' payloads carry routing keys, not state fields), and resolves a
//! session id from the payload's `session_id` key. H2: `raises: {category, message}` is
//! the graph-engine runner's `raises: message` with `error_category: category`.

mod invariants;

pub(crate) use invariants::TABLE_NAMES as INVARIANT_NAMES;

use std::sync::Arc;

use openarmature_graph::session::{SessionConfig, SessionStore};
use openarmature_graph::{CompiledGraph, DynState};
use openarmature_harness::{
    DispatchIntent, Harness, InMemoryCoordinator, Outbound, SignalTarget, Transmission, TurnOutcome,
};
use serde_json::Value;

use crate::failure::{Check, Failure};
use crate::ge::build::{Builder, INLINE_GRAPH_CASE_KEYS};
use crate::ge::harness::{lock, Harness as Recorder};
use crate::session_log::RecordingStore;
use crate::yaml::Y;

/// One turn, reduced to what the fixtures assert.
pub(crate) struct TurnRecord {
    pub(crate) path: Option<&'static str>,
    pub(crate) outcome: &'static str,
    pub(crate) state: Option<Value>,
    pub(crate) invocation_id: Option<String>,
    pub(crate) descriptor: Option<Value>,
    pub(crate) category: Option<String>,
    pub(crate) bucket: Option<&'static str>,
    pub(crate) shape: &'static str,
    pub(crate) payload: Value,
    pub(crate) session_id: Option<String>,
    pub(crate) session_generated: bool,
    pub(crate) resume_invocation: Option<String>,
    pub(crate) signal_payload: Option<Value>,
    pub(crate) subscribed: bool,
    pub(crate) resolved: Option<String>,
    /// Outer node bodies that ran in this turn.
    pub(crate) order: Vec<String>,
    pub(crate) caller_session: Option<String>,
}

/// What the case set up.
pub(crate) struct Rig {
    pub(crate) store: Option<Arc<RecordingStore>>,
    pub(crate) coordinator: Option<InMemoryCoordinator>,
    pub(crate) stateless: bool,
}

/// H2: `raises: {category, message}` → `raises: message` + `error_category`.
fn desugar(value: &mut serde_norway::Value) {
    use serde_norway::Value as V;
    match value {
        V::Mapping(m) => {
            let lifted = match m.get("raises") {
                Some(V::Mapping(r)) if r.contains_key("category") => {
                    Some((r.get("category").cloned(), r.get("message").cloned()))
                }
                _ => None,
            };
            if let Some((category, message)) = lifted {
                m.insert(V::from("raises"), message.unwrap_or(V::from("raised")));
                if let Some(c) = category {
                    m.insert(V::from("error_category"), c);
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

/// A case's graph, built as the harness suite builds it, and what the case set up
/// around it (shared with the chat suite).
pub(crate) struct CaseGraph {
    pub(crate) recorder: Arc<Recorder>,
    pub(crate) graph: CompiledGraph<DynState>,
    pub(crate) store: Option<Arc<RecordingStore>>,
    pub(crate) coordinator: Option<InMemoryCoordinator>,
    pub(crate) stateless: bool,
}

/// The case with the H2 and suspension desugarings applied.
pub(crate) fn patched(case: &Y<'_>) -> serde_norway::Value {
    let mut patched = case.value.clone();
    desugar(&mut patched);
    crate::suspension::desugar(&mut patched);
    patched
}

/// Builds the case's graph (its `state`, `nodes`, `edges`, `session_store`,
/// `checkpointer`) and reads its `harness` block.
pub(crate) fn case_graph(doc: &Y<'_>, case: &Y<'_>, same: bool) -> Check<CaseGraph> {
    let recorder = Arc::new(Recorder::default());
    let mut builder = Builder::new(Arc::clone(&recorder));
    builder.extension = Some(Arc::new(crate::suspension::nodes::SuspendExt::default()));
    builder.collect_defs(doc)?;
    if !same {
        builder.collect_defs(case)?;
    }
    let h = case.req("harness")?;
    h.check_keys(&["mode", "signal_coordinator"])?;
    let stateless = match h
        .req("mode")
        .and_then(|m| m.str().map(str::to_owned))?
        .as_str()
    {
        "sessioned" => false,
        "stateless" => true,
        other => {
            return Err(Failure::unsupported(format!(
                "fixture_directive_unknown: harness mode `{other}`"
            )))
        }
    };
    let store = match case.get("session_store") {
        None => None,
        Some(s) if s.value.is_string() => Some(Arc::new(RecordingStore::default())),
        Some(s) => {
            s.check_keys(&["type", "behavior"])?;
            let raises = match s.get("behavior") {
                Some(b) => {
                    b.check_keys(&["load_raises"])?;
                    b.get("load_raises").is_some()
                }
                None => false,
            };
            let store = RecordingStore::default();
            Some(Arc::new(if raises { store.failing_loads() } else { store }))
        }
    };
    // The selected backend's, when a backend crate's test binary selected one.
    let checkpointer = case
        .get("checkpointer")
        .map(|_| crate::backends::checkpointer_or_in_memory())
        .transpose()?;
    let (ss, cp) = (store.clone(), checkpointer.clone());
    builder.configure_outer = Some(Box::new(move |mut b| {
        if let Some(cp) = &cp {
            b = b.checkpointer(Arc::clone(cp));
        }
        if let Some(ss) = &ss {
            b = b.sessions(SessionConfig::new(Arc::clone(ss) as Arc<dyn SessionStore>));
        }
        b
    }));
    let graph = builder
        .graph(case, true, &[])?
        .map_err(|e| Failure::setup(format!("unexpected compile error: {e}")))?;
    let coordinator = match h.get("signal_coordinator") {
        Some(c) if c.str()? == "in_memory" => Some(InMemoryCoordinator::new()),
        Some(c) => {
            return Err(Failure::unsupported(format!(
                "fixture_directive_unknown: signal_coordinator `{}`",
                c.str()?
            )))
        }
        None => None,
    };
    Ok(CaseGraph {
        recorder,
        graph,
        store,
        coordinator,
        stateless,
    })
}

/// Keys the harness and chat-harness cases share (besides the graph's own).
pub(crate) const HARNESS_CASE_KEYS: &[&str] = &[
    "name",
    "description",
    "harness",
    "state",
    "entry",
    "nodes",
    "edges",
    "session_store",
    "invariants",
];

pub(crate) async fn run_case(doc: &Y<'_>, case: &Y<'_>) -> Check {
    let same = case.value == doc.value;
    let patched = patched(case);
    let case = &Y::root(&patched, case.file);
    case.check_keys_of(&[
        INLINE_GRAPH_CASE_KEYS,
        HARNESS_CASE_KEYS,
        &["checkpointer", "transmissions"],
    ])?;
    let CaseGraph {
        recorder,
        graph,
        store,
        coordinator,
        stateless,
    } = case_graph(doc, case, same)?;
    let defaults = graph.defaults().clone();
    let build =
        move |_: &Value| -> Result<DynState, openarmature_graph::BoxError> { Ok(defaults.clone()) };
    let mut harness = if stateless {
        Harness::stateless(graph, build)
    } else {
        Harness::sessioned(graph, build)
    };
    if let Some(c) = &coordinator {
        harness = harness.coordinator(c.clone());
    }
    let rig = Rig {
        store,
        coordinator,
        stateless,
    };
    let mut turns: Vec<TurnRecord> = Vec::new();
    for item in case.named_items(
        "transmissions",
        &[
            "name",
            "payload",
            "dispatch_intent",
            "signal_payload",
            "expected",
        ],
    )? {
        let (label, t) = item?;
        let transmission =
            transmission(&t, turns.last()).map_err(|m| m.context(format!("{label}: ")))?;
        let caller_session = transmission
            .payload
            .get("session_id")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let before = lock(&recorder.order).len();
        let turn = harness.handle(transmission).await;
        harness.graph().drain(None).await;
        let order = lock(&recorder.order)[before..]
            .iter()
            .map(|(_, n)| n.clone())
            .collect();
        let record = reduce(turn, order, caller_session);
        if let Some(expected) = t.get("expected") {
            invariants::expected(&expected, &record, &rig, turns.last())
                .map_err(|m| m.context(format!("transmission {label}: ")))?;
        }
        turns.push(record);
    }
    if let Some(inv) = case.get("invariants") {
        invariants::check(&inv, &turns, &rig)?;
    }
    Ok(())
}

fn transmission(t: &Y<'_>, previous: Option<&TurnRecord>) -> Check<Transmission> {
    let payload = t
        .get("payload")
        .map(|p| p.json())
        .transpose()?
        .unwrap_or(Value::Null);
    let intent = match t
        .get("dispatch_intent")
        .map(|d| d.str().map(str::to_owned))
        .transpose()?
    {
        None => None,
        Some(d) => Some(match d.as_str() {
            "new_session" => DispatchIntent::NewSession,
            "existing_session" => DispatchIntent::ExistingSession,
            "signal_resume" => DispatchIntent::SignalResume,
            other => {
                return Err(Failure::unsupported(format!(
                    "fixture_directive_unknown: dispatch_intent `{other}`"
                )))
            }
        }),
    };
    let mut out = Transmission::new(payload.clone());
    if let Some(sp) = t.get("signal_payload") {
        let sp = sp.json()?;
        let target = if let Some(id) = payload.get("invocation_id").and_then(Value::as_str) {
            let id = if id.starts_with('<') {
                previous
                    .and_then(|p| p.invocation_id.clone())
                    .ok_or("`<from previous …>` but no previous invocation")?
            } else {
                id.to_owned()
            };
            SignalTarget::Invocation(id)
        } else if let Some(s) = payload.get("signal_id").and_then(Value::as_str) {
            SignalTarget::SignalId(s.to_owned())
        } else {
            return Err("a signal names neither invocation_id nor signal_id".into());
        };
        out.signal = Some((target, sp));
    }
    out.intent = intent;
    Ok(out)
}

fn reduce(
    turn: openarmature_harness::Turn<DynState>,
    order: Vec<String>,
    caller_session: Option<String>,
) -> TurnRecord {
    use openarmature_graph::State;
    let (outcome, state, invocation_id, descriptor) = match &turn.outcome {
        TurnOutcome::Completed(done) => (
            "completed",
            Some(done.state.to_json()),
            Some(done.invocation_id.clone()),
            None,
        ),
        TurnOutcome::Suspended(p) => (
            "suspended",
            Some(p.state.to_json()),
            Some(p.invocation_id.clone()),
            serde_json::to_value(&p.descriptor).ok(),
        ),
        TurnOutcome::Errored(e) => ("errored", None, e.invocation_id.clone(), None),
        _ => ("unknown", None, None, None),
    };
    let (category, bucket) = match &turn.outbound {
        Outbound::Error(e) => (Some(e.category.clone()), Some(e.bucket.as_str())),
        _ => (None, None),
    };
    let args = turn.invoke.clone().unwrap_or_default();
    TurnRecord {
        path: turn.path.map(|p| p.as_str()),
        outcome,
        state,
        invocation_id,
        descriptor,
        category,
        bucket,
        shape: turn.outbound.shape(),
        payload: turn.outbound.payload(),
        session_id: args.session_id,
        session_generated: args.session_id_generated,
        resume_invocation: args.resume_invocation,
        signal_payload: args.signal_payload,
        subscribed: turn.subscribed,
        resolved: turn.resolved_invocation,
        order,
        caller_session,
    }
}

/// The store's load / save counts.
pub(crate) fn counts(rig: &Rig) -> (usize, usize) {
    rig.store
        .as_ref()
        .map_or((0, 0), |s| (s.loads(), s.saves()))
}
