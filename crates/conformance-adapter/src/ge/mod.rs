//! Spec: conformance-adapter §4 and §8.3 for the graph-engine suite: builds each
//! case's graph with the real engine, invokes it, drains, and asserts.

pub(crate) mod assert;
pub(crate) mod build;
pub(crate) mod checkpoint;
pub(crate) mod composite;
mod event_invariants;
pub(crate) mod harness;
mod middleware;
mod pu_assert;

pub(crate) use event_invariants::STREAM_NAMES as EVENT_INVARIANT_NAMES;
pub(crate) use pu_assert::TABLE_NAMES as PU_INVARIANT_NAMES;

use std::sync::Arc;
use std::time::Duration;

use openarmature_graph::{
    timeout_from_secs, CompiledGraph, DrainSummary, DynState, GraphError, InvokeOptions, Phase,
    PhaseSet, Registration, State,
};
use serde_json::Value;

use self::build::{Builder, GRAPH_KEYS};
use self::harness::{lock, Behavior, DrainCall, Harness, HarnessObserver, Pace};
use crate::failure::{Check, Failure};
use crate::yaml::Y;
use crate::AdapterError;

/// Keys a graph-engine case may carry besides the graph itself.
const CASE_KEYS: &[&str] = &[
    "name",
    "description",
    "graph",
    "initial_state",
    "expected",
    "expected_error",
    "expected_compile_error",
    "expected_compile_warning",
    "observers",
    "run_count",
    "invoke",
    "invocations",
    "invariants",
    "clock_stub",
];

/// File-level keys of a `cases:` fixture (shared by every case).
pub(crate) const FILE_KEYS: &[&str] = &[
    "cases",
    "subgraph",
    "subgraph_with_idx",
    "subgraphs",
    "conformance_version",
    "description",
];

/// The name of the harness's own invocation-scoped recorder (always attached last).
const IMPLICIT: &str = "__harness_recorder";

/// How one invocation ended.
pub(crate) struct RunOutcome {
    pub(crate) invocation_id: String,
    pub(crate) result: Result<Value, FailureInfo>,
    pub(crate) drain: DrainSummary,
}

/// A [`GraphError`] reduced to what fixtures assert.
pub(crate) struct FailureInfo {
    /// The §6.4 derived category of the cause chain.
    pub(crate) derived_category: Option<String>,
    pub(crate) category: String,
    /// The failing parallel branch, if any.
    pub(crate) branch_name: Option<String>,
    pub(crate) node: String,
    pub(crate) message: String,
    pub(crate) state: Value,
}

impl From<GraphError<DynState>> for FailureInfo {
    fn from(e: GraphError<DynState>) -> Self {
        FailureInfo {
            derived_category: openarmature_graph::CaughtException::capture(e.cause()).category,
            category: e.category_name().to_owned(),
            branch_name: e.branch_name().map(str::to_owned),
            node: e.node().to_owned(),
            message: e.original_message(),
            state: State::to_json(e.recoverable_state()),
        }
    }
}

/// Runs one graph-engine case. `doc` is the file root, `case` the case mapping
/// (the root itself for single-case files). A case with a `checkpointer:` runs in
/// [`checkpoint`] (pipeline-utilities §10).
pub(crate) async fn run_case(doc: &Y<'_>, case: &Y<'_>) -> Check {
    if case.get("checkpointer").is_some() {
        return checkpoint::run_case(doc, case).await;
    }
    let runs = match case.get("run_count") {
        Some(n) => match n.i64()? {
            runs if runs >= 1 => runs,
            _ => {
                return Err(Failure::from(
                    n.invalid("run_count must be a positive integer"),
                ))
            }
        },
        None => 1,
    };
    let mut finals = Vec::new();
    for _ in 0..runs {
        finals.push(run_once(doc, case).await?);
    }
    if finals.windows(2).any(|w| w[0] != w[1]) {
        return Err(format!("run_count: runs differ: {finals:?}").into());
    }
    Ok(())
}

/// One full run with fresh primitives; returns a determinism fingerprint.
async fn run_once(doc: &Y<'_>, case: &Y<'_>) -> Check<Vec<String>> {
    let mut keys: Vec<&str> = CASE_KEYS.to_vec();
    if case.get("graph").is_none() {
        keys.extend_from_slice(GRAPH_KEYS);
    }
    if case.value == doc.value {
        keys.push("conformance_version");
    } else {
        doc.check_keys(FILE_KEYS)?;
    }
    case.check_keys(&keys)?;
    let graph_y = case.get("graph").unwrap_or_else(|| case.clone());
    if case.get("graph").is_some() {
        graph_y.check_keys(GRAPH_KEYS)?;
    }

    let clock_step_ms = match case.get("clock_stub") {
        None => None,
        Some(c) => {
            c.check_keys(&["type", "advance_ms_per_call"])?;
            match c
                .req("type")
                .and_then(|t| t.str().map(str::to_owned))?
                .as_str()
            {
                "deterministic_monotonic" => Some(non_negative(&c.req("advance_ms_per_call")?)?),
                other => {
                    return Err(Failure::unsupported(format!(
                        "fixture_directive_unknown: clock_stub type `{other}`"
                    )))
                }
            }
        }
    };
    let harness = Arc::new(Harness {
        clock_step_ms,
        ..Harness::default()
    });
    let mut builder = Builder::new(Arc::clone(&harness));
    builder.collect_defs(doc)?;
    if case.value != doc.value {
        builder.collect_defs(case)?;
    }
    if case.get("graph").is_some() {
        builder.collect_defs(&graph_y)?;
    }

    let initial_states = initial_states(case)?;
    let extra: Vec<String> = initial_states
        .iter()
        .filter_map(|(_, s)| s.as_object())
        .flat_map(|m| m.keys().cloned())
        .collect();
    let compiled = builder.graph(&graph_y, true, &extra)?;

    if let Some(expected) = case.get("expected_compile_error") {
        let want = expected.str()?;
        return match compiled {
            Err(e) if e.category() == want => {
                if lock(&harness.order).is_empty() {
                    Ok(Vec::new())
                } else {
                    Err("a node body ran before the compile error".into())
                }
            }
            Err(e) => {
                Err(format!("expected compile error {want}, got {} ({e})", e.category()).into())
            }
            Ok(_) => Err(format!("expected compile error {want}, but the graph compiled").into()),
        };
    }
    let graph = compiled.map_err(|e| Failure::setup(format!("unexpected compile error: {e}")))?;
    if let Some(w) = case.get("expected_compile_warning") {
        assert::compile_warnings(&w, graph.warnings())
            .map_err(|m| m.context("expected_compile_warning: "))?;
    }
    let runnable = [
        "initial_state",
        "expected",
        "expected_error",
        "invocations",
        "invoke",
    ]
    .iter()
    .any(|k| case.get(k).is_some());
    if !runnable {
        return Ok(Vec::new());
    }
    let _ = harness.outer.set(graph.clone());

    let invocation_observers = attach_observers(case, &graph, &builder, &harness)?;
    let implicit = Arc::new(HarnessObserver::new(
        IMPLICIT,
        Behavior::Record,
        Pace::Fixed(0),
        Arc::clone(&harness.deliveries),
        false,
    ));
    let run = Invoker {
        graph: &graph,
        observers: &invocation_observers,
        implicit: &implicit,
        harness: &harness,
    };

    let mut fingerprint = Vec::new();
    let mut outcomes = Vec::new();
    if let Some(invocations) = case.get("invocations") {
        for (i, inv) in invocations.seq()?.iter().enumerate() {
            inv.check_keys(&["name", "initial_state", "drain", "expected"])?;
            let label = inv
                .get("name")
                .and_then(|n| n.str().ok().map(str::to_owned))
                .unwrap_or(format!("#{i}"));
            let timeout = drain_timeout(inv.get("drain"))?;
            let outcome = invoke(&run, &initial_states[i].1, timeout).await;
            fingerprint.push(format!("{:?}", outcome.result.as_ref().ok()));
            let ctx = assert::Ctx {
                harness: &harness,
                implicit: &implicit,
                outcome: &outcome,
                graph: &graph,
            };
            if let Some(expected) = inv.get("expected") {
                assert::expected(&expected, &ctx, None)
                    .await
                    .map_err(|m| m.context(format!("invocation {label}: ")))?;
            }
            outcomes.push(outcome);
        }
        if let Some(invariants) = case.get("invariants") {
            assert::file_invariants(&invariants, &harness, &implicit, &outcomes, &graph).await?;
        }
    } else {
        let timeout = drain_timeout(case.get("invoke").and_then(|i| i.get("drain")))?;
        if let Some(invoke_y) = case.get("invoke") {
            invoke_y.check_keys(&["drain"])?;
        }
        let initial = initial_states
            .first()
            .map(|(_, v)| v.clone())
            .unwrap_or(Value::Null);
        let outcome = invoke(&run, &initial, timeout).await;
        fingerprint.push(format!("{:?}", outcome.result.as_ref().ok()));
        fingerprint.push(format!("{:?}", harness.order_for(&outcome.invocation_id)));
        let ctx = assert::Ctx {
            harness: &harness,
            implicit: &implicit,
            outcome: &outcome,
            graph: &graph,
        };
        let expected = case.get("expected");
        let case_error = case.get("expected_error");
        if let Some(e) = &case_error {
            assert::expected_error(e, &ctx).map_err(|m| m.context("expected_error: "))?;
        }
        match &expected {
            Some(expected) => assert::expected(expected, &ctx, case_error.as_ref()).await?,
            None if case_error.is_none() => return Err("case asserts nothing".into()),
            None => {}
        }
        if let Some(invariants) = case.get("invariants") {
            assert::invariants(&invariants, &ctx).await?;
        }
    }
    Ok(fingerprint)
}

/// `(label, initial_state)` per invocation (one entry for single-invocation cases).
fn initial_states(case: &Y<'_>) -> Result<Vec<(String, Value)>, AdapterError> {
    if let Some(invocations) = case.get("invocations") {
        return invocations
            .seq()?
            .iter()
            .enumerate()
            .map(|(i, inv)| Ok((format!("#{i}"), initial_state(inv.get("initial_state"))?)))
            .collect();
    }
    Ok(vec![(
        "#0".into(),
        initial_state(case.get("initial_state"))?,
    )])
}

/// `initial_state`: a mapping of field values (absent or null: all defaults).
fn initial_state(y: Option<Y<'_>>) -> Result<Value, AdapterError> {
    match y {
        None => Ok(Value::Null),
        Some(y) if y.is_null() || y.value.is_mapping() => y.json(),
        Some(y) => Err(y.invalid("initial_state must be a mapping of field values")),
    }
}

fn drain_timeout(drain: Option<Y<'_>>) -> Result<Option<Duration>, AdapterError> {
    let Some(drain) = drain else { return Ok(None) };
    if drain.is_null() {
        return Ok(None);
    }
    drain.check_keys(&["timeout_seconds"])?;
    match drain.get("timeout_seconds") {
        Some(t) if !t.is_null() => Ok(Some(
            timeout_from_secs(t.f64()?).map_err(|e| t.invalid(e.to_string()))?,
        )),
        _ => Ok(None),
    }
}

/// Registers the fixture's observers: graph-attached ones on their target graph,
/// invocation-scoped ones returned for `invoke`.
fn attach_observers(
    case: &Y<'_>,
    graph: &CompiledGraph<DynState>,
    builder: &Builder<'_>,
    harness: &Arc<Harness>,
) -> Result<Vec<Registration>, AdapterError> {
    let mut per_invocation = Vec::new();
    let Some(list) = case.get("observers") else {
        return Ok(per_invocation);
    };
    for spec in list.seq()? {
        spec.check_keys(&[
            "name",
            "attach",
            "target",
            "behavior",
            "phases",
            "sleep_ms_per_event",
        ])?;
        let name = spec.req("name")?.str()?.to_owned();
        let behavior = match spec.opt_str("behavior")?.unwrap_or("record") {
            "record" => Behavior::Record,
            "accumulate" => Behavior::Accumulate,
            "raise" => Behavior::Raise,
            other => {
                return Err(AdapterError::DirectiveUnknown {
                    file: spec.file.to_path_buf(),
                    directive: format!("behavior: {other}"),
                    location: spec.location().to_owned(),
                })
            }
        };
        let pace = match spec.get("sleep_ms_per_event") {
            None => Pace::Fixed(0),
            Some(p) if p.value.is_mapping() => {
                p.check_keys(&["first_invocation", "subsequent_invocations"])?;
                Pace::FirstThenRest {
                    first: non_negative(&p.req("first_invocation")?)?,
                    rest: non_negative(&p.req("subsequent_invocations")?)?,
                }
            }
            Some(p) => Pace::Fixed(non_negative(&p)?),
        };
        let phases = match spec.get("phases") {
            None => PhaseSet::ALL,
            Some(p) => {
                let mut list = Vec::new();
                for phase in p.seq()? {
                    list.push(match phase.str()? {
                        "started" => Phase::Started,
                        "completed" => Phase::Completed,
                        other => return Err(phase.invalid(format!("unknown phase `{other}`"))),
                    });
                }
                PhaseSet::new(&list).map_err(|e| p.invalid(e.to_string()))?
            }
        };
        let observer = Arc::new(HarnessObserver::new(
            &name,
            behavior,
            pace,
            Arc::clone(&harness.deliveries),
            true,
        ));
        lock(&harness.observers).insert(name.clone(), Arc::clone(&observer));
        let registration = Registration::shared(name.as_str(), observer).phases(phases);
        let attach = spec.opt_str("attach")?.unwrap_or("graph");
        let target = spec.opt_str("target")?.unwrap_or("outer");
        match attach {
            "invocation" => per_invocation.push(registration),
            "graph" if target == "outer" => graph.attach_observer(registration),
            "graph" => match builder.subgraph(target, &spec)? {
                Ok(sub) => sub.attach_observer(registration),
                Err(e) => {
                    return Err(
                        spec.invalid(format!("observer target `{target}` failed to compile: {e}"))
                    )
                }
            },
            other => return Err(spec.invalid(format!("unknown attach mode `{other}`"))),
        }
    }
    Ok(per_invocation)
}

fn non_negative(y: &Y<'_>) -> Result<u64, AdapterError> {
    u64::try_from(y.i64()?).map_err(|_| y.invalid("expected a non-negative integer"))
}

/// What every invocation of a case runs with.
struct Invoker<'a> {
    graph: &'a CompiledGraph<DynState>,
    observers: &'a [Registration],
    implicit: &'a Arc<HarnessObserver>,
    harness: &'a Harness,
}

/// Invokes the graph once, then drains (with the fixture's timeout, or fully).
async fn invoke(run: &Invoker<'_>, initial: &Value, drain_timeout: Option<Duration>) -> RunOutcome {
    let Invoker {
        graph,
        observers,
        implicit,
        harness,
    } = *run;
    let mut options = InvokeOptions {
        observers: observers.to_vec(),
        ..InvokeOptions::default()
    };
    options.observers.push(Registration::shared(
        IMPLICIT,
        Arc::clone(implicit) as Arc<_>,
    ));
    let (invocation_id, result) = match graph.defaults().schema().state_from_json(initial) {
        Ok(state) => match graph.invoke_with(state, options).await {
            Ok(done) => (done.invocation_id, Ok(State::to_json(&done.state))),
            Err(e) => (e.invocation_id().to_owned(), Err(FailureInfo::from(e))),
        },
        Err(e) => (
            String::new(),
            Err(FailureInfo {
                derived_category: None,
                category: "state_validation_error".into(),
                branch_name: None,
                node: String::new(),
                message: e.to_string(),
                state: initial.clone(),
            }),
        ),
    };
    let started = tokio::time::Instant::now();
    let drain = graph.drain(drain_timeout).await;
    lock(&harness.drains).push(DrainCall {
        timeout: drain_timeout,
        elapsed: started.elapsed(),
    });
    RunOutcome {
        invocation_id,
        result,
        drain,
    }
}
