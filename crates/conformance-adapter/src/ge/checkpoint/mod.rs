//! Spec: conformance-adapter §5.6 (persistence directives) and §6.2 for the
//! pipeline-utilities checkpointing fixtures (§10): a case with a `checkpointer:` runs
//! here instead of the plain graph-engine runner.
//!
//! Conventions (adapter register R9–R13 in REGISTER.md; the per-instance fan-out
//! ones, R13, are listed in `fan_out.rs` and `store/`):
//! - `checkpointer: in_memory | sqlite` both use the engine's `InMemoryCheckpointer`
//!   (records hold JSON states, so §10.12 migrations work on it), wrapped to record every
//!   save ([`store::Store`]). Other backends are `harness_primitive_missing`.
//! - The outermost `state.schema_version` is registered with `GraphBuilder::schema_version`;
//!   a subgraph's is accepted and ignored (§10.12.2: parent states share the outer version).
//!   `runtime_state_subclass` is accepted as a no-op: a Rust state value carries no schema
//!   version, so the builder's declaration is the only source (§10.2, proposal 0028).
//! - One compiled graph serves every run of a case (so `fail_first_invocation_only` mocks
//!   see the resume as a later invocation). Runs, in order: `populate_checkpointer_via_runs`
//!   fresh runs; then `invoke_with.resume_invocation`, or a `seeded_record` stored under
//!   [`store::SEEDED_ID`], or one fresh run (with `caller_correlation_id` /
//!   `caller_invocation_id`); then `resume:`. Assertions run after all runs.
//! - `crash_injection: {after_node}`: the save appending that node's position is stored,
//!   then never returns; the runner drops the invocation future (the run is abandoned, no
//!   error path runs) and takes its id from that save.
//! - A resumed run is passed the schema defaults with `required` fields set to their type's
//!   zero value (the engine restores the record's state and discards this argument).
//! - "Nodes executed" are the node names of the recorded `started` events of a run (first
//!   occurrence order), so subgraph-internal nodes count and subgraph nodes do not.

mod assert;
mod fan_out;
mod invariants;
mod raised;
mod run;
mod store;

pub(crate) use self::run::Run;
pub(crate) use self::store::{flaky_resume_aware, migration, KeyError, MigrationLog};

use std::sync::Arc;

use openarmature_graph::checkpoint::Checkpointer;
use serde_json::Value;

use self::run::{Call, Runner, RECORDER};
use self::store::{Boundary, Crash, Store, SEEDED_ID};
use super::build::{Builder, GRAPH_KEYS};
use super::harness::{Behavior, Harness, HarnessObserver, Pace};
use crate::failure::{Check, Failure};
use crate::yaml::Y;
use crate::AdapterError;

/// Keys a checkpoint case may carry besides the graph itself.
const CASE_KEYS: &[&str] = &[
    "name",
    "description",
    "initial_state",
    "checkpointer",
    "caller_correlation_id",
    "caller_invocation_id",
    "populate_checkpointer_via_runs",
    "invoke_with",
    "invoke",
    "seeded_record",
    "migrations",
    "runtime_state_subclass",
    "crash_injection",
    "first_run_expected_error",
    "saved_record_assertions",
    "expected",
    "expected_error",
    "expected_chain_ambiguity_error",
    "every_save_assertions",
    "resume",
    "invariants",
];

const RESUME_KEYS: &[&str] = &[
    "from_first_run",
    "resume_with_modified_items",
    "from_seeded_record",
    "caller_invocation_id",
    "expected",
    "expected_error",
    "expected_chain_ambiguity_error",
    "invariants",
];

fn opt_str(y: &Y<'_>, key: &str) -> Check<Option<String>> {
    y.get(key)
        .map(|v| v.str().map(str::to_owned))
        .transpose()
        .map_err(Failure::from)
}

fn flag(y: &Y<'_>, key: &str) -> Check<bool> {
    Ok(y.get(key).map(|v| v.bool()).transpose()? == Some(true))
}

/// The Checkpointer backend (`in_memory` / `sqlite` / `in_memory_batched`) and the
/// crash or abort boundary.
fn store_for(case: &Y<'_>) -> Check<Store> {
    let kind = case.req("checkpointer")?;
    let missing = |what: String| {
        Failure::from(AdapterError::PrimitiveMissing {
            file: kind.file.to_path_buf(),
            primitive: what,
        })
    };
    let flush_every = match kind.str() {
        Ok("in_memory" | "sqlite") => None,
        _ if kind
            .get("kind")
            .is_some_and(|k| k.str().ok() == Some("in_memory_batched")) =>
        {
            kind.check_keys(&["kind", "fan_out_internal_save_batching"])?;
            let b = kind.req("fan_out_internal_save_batching")?;
            b.check_keys(&["flush_every"])?;
            let n = b.req("flush_every").and_then(|n| n.i64())?;
            Some(usize::try_from(n).map_err(|_| "flush_every must be ≥ 0".to_owned())?)
        }
        _ => {
            return Err(missing(format!(
                "checkpointer {:?} at {} (only in_memory / sqlite / in_memory_batched)",
                kind.json().unwrap_or(Value::Null),
                kind.location()
            )))
        }
    };
    let mut crash = match case.get("crash_injection") {
        None => None,
        Some(c) => {
            c.check_keys(&["after_node", "after_fan_out_instance"])?;
            if let Some(at) = c.get("after_fan_out_instance") {
                at.check_keys(&["node", "index"])?;
                let node = at.req("node").and_then(|n| n.str())?;
                let index = at.req("index").and_then(|n| n.i64())?;
                let index = usize::try_from(index).map_err(|_| "index must be ≥ 0".to_owned())?;
                Some(Crash::new(
                    Boundary::AfterInstance(node.to_owned(), index),
                    false,
                ))
            } else {
                opt_str(&c, "after_node")?.map(|n| Crash::new(Boundary::AfterNode(n), false))
            }
        }
    };
    // A fan-out's `abort_after_instance` (register R13).
    if let Some(nodes) = case.get("nodes") {
        for (name, node) in nodes.entries()? {
            let abort = node
                .get("fan_out")
                .and_then(|f| f.get("abort_after_instance"));
            if let Some(a) = abort {
                let index = usize::try_from(a.i64()?)
                    .map_err(|_| "abort_after_instance must be ≥ 0".to_owned())?;
                crash = Some(Crash::new(Boundary::AfterInstance(name, index), true));
            }
        }
    }
    Store::new(crash, flush_every)
}

/// The case graph's top-level fan-out nodes (their failures are `raised_from` them).
fn fan_out_nodes(case: &Y<'_>) -> Vec<String> {
    case.get("nodes")
        .and_then(|n| n.entries().ok())
        .map(|e| {
            e.into_iter()
                .filter(|(_, n)| n.get("fan_out").is_some())
                .map(|(name, _)| name)
                .collect()
        })
        .unwrap_or_default()
}

/// Runs one checkpoint case. `doc` is the file root, `case` the case mapping.
pub(crate) async fn run_case(doc: &Y<'_>, case: &Y<'_>) -> Check {
    let mut keys = CASE_KEYS.to_vec();
    keys.extend_from_slice(GRAPH_KEYS);
    if case.value == doc.value {
        keys.push("conformance_version");
    } else {
        doc.check_keys(super::FILE_KEYS)?;
    }
    case.check_keys(&keys)?;
    let store = Arc::new(store_for(case)?);
    let log = Arc::new(MigrationLog::default());
    let mut migrations = Vec::new();
    for m in case
        .get("migrations")
        .map(|l| l.seq())
        .transpose()?
        .unwrap_or_default()
    {
        m.check_keys(&["from_version", "to_version", "migrate"])?;
        let from = m.req("from_version").and_then(|v| v.str())?.to_owned();
        let to = m.req("to_version").and_then(|v| v.str())?.to_owned();
        let name = m.req("migrate").and_then(|v| v.str())?;
        let f = store::migration(&m, name, (&from, &to), &log)?;
        migrations.push((from, to, f));
    }
    let version = opt_str(&case.req("state")?, "schema_version")?;
    let declared_version = version.clone().unwrap_or_default();
    if let Some(sub) = case.get("runtime_state_subclass") {
        sub.check_keys(&["schema_version"])?;
        sub.req("schema_version").and_then(|v| v.str().map(drop))?;
    }

    let harness = Arc::new(Harness::default());
    let mut builder = Builder::new(Arc::clone(&harness));
    builder.collect_defs(doc)?;
    if case.value != doc.value {
        builder.collect_defs(case)?;
    }
    let cp: Arc<dyn Checkpointer> = Arc::clone(&store) as Arc<_>;
    builder.configure_outer = Some(Box::new(move |b| {
        let mut b = b.checkpointer(Arc::clone(&cp));
        if let Some(v) = &version {
            b = b.schema_version(v.clone());
        }
        for (from, to, f) in &migrations {
            let f = Arc::clone(f);
            b = b.state_migration(from.clone(), to.clone(), move |v| f(v));
        }
        b
    }));
    let initial = match case.get("initial_state") {
        Some(s) if !s.is_null() => s.json()?,
        _ => Value::Null,
    };
    let extra: Vec<String> = initial
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let compiled = builder.graph(case, true, &extra)?;

    let resume_y = case.get("resume");
    let ambiguity = match case.get("expected_chain_ambiguity_error").or_else(|| {
        resume_y
            .as_ref()
            .and_then(|r| r.get("expected_chain_ambiguity_error"))
    }) {
        Some(a) => Some(a.str()?.to_owned()),
        None => None,
    };
    let graph = match (compiled, &ambiguity) {
        (Ok(g), _) => g,
        // Detected at build time (§10.12.1 / §10.12.2 compile-time SHOULD).
        (Err(e), Some(want)) if e.category() == want => {
            return assert::no_violations(&log, &harness)
        }
        (Err(e), _) => return Err(Failure::setup(format!("unexpected compile error: {e}"))),
    };
    if case.get("expected_chain_ambiguity_error").is_some() && resume_y.is_none() {
        return Err(
            "expected_chain_ambiguity_error: the graph compiled and the case has no resume".into(),
        );
    }
    let _ = harness.outer.set(graph.clone());
    let implicit = Arc::new(HarnessObserver::new(
        RECORDER,
        Behavior::Record,
        Pace::Fixed(0),
        Arc::clone(&harness.deliveries),
        false,
    ));
    let fan_outs = fan_out_nodes(case);
    let runner = Runner {
        graph: &graph,
        implicit: &implicit,
        store: &store,
        fan_outs: &fan_outs,
    };

    if let Some(n) = case.get("populate_checkpointer_via_runs") {
        for i in 0..n.i64()? {
            if let Err(f) = runner.run(Call::default(), &initial).await.result {
                return Err(
                    format!("populate run #{i} failed: {}: {}", f.category, f.message).into(),
                );
            }
        }
    }
    let invoke_y = case.get("invoke_with").or_else(|| case.get("invoke"));
    let main = if let Some(inv) = &invoke_y {
        inv.check_keys(&["resume_invocation"])?;
        let call = Call {
            resume: opt_str(inv, "resume_invocation")?,
            ..Call::default()
        };
        Some(runner.run(call, &initial).await)
    } else if let Some(seed) = case.get("seeded_record") {
        store.seed(store::seeded_record(&seed)?).await?;
        None
    } else {
        let call = Call {
            correlation: opt_str(case, "caller_correlation_id")?,
            invocation: opt_str(case, "caller_invocation_id")?,
            ..Call::default()
        };
        Some(runner.run(call, &initial).await)
    };

    let mut resumed = None;
    let (mut loaded, mut resume_caller) = (None, None);
    if let Some(r) = &resume_y {
        r.check_keys(RESUME_KEYS)?;
        let from = match (&main, flag(r, "from_first_run")?, flag(r, "from_seeded_record")?) {
            (Some(first), true, false) if invoke_y.is_none() => first.id.clone(),
            (None, false, true) => SEEDED_ID.to_owned(),
            _ => return Err("resume: needs from_first_run after a fresh run, or from_seeded_record with a seeded_record".into()),
        };
        if let Some(m) = r.get("resume_with_modified_items") {
            let fields = match m.json()? {
                Value::Object(fields) => fields,
                _ => return Err("resume_with_modified_items: not a mapping".into()),
            };
            store.modify_latest(&from, &fields).await?;
        }
        loaded = store.latest(&from).await;
        resume_caller = opt_str(r, "caller_invocation_id")?;
        let call = Call {
            resume: Some(from),
            invocation: resume_caller.clone(),
            ..Call::default()
        };
        resumed = Some(runner.run(call, &initial).await);
    }

    let ctx = assert::Ctx {
        store: &store,
        log: &log,
        implicit: &implicit,
        first: main.as_ref(),
        resumed: resumed.as_ref(),
        loaded: loaded.as_ref(),
        resume_caller: resume_caller.as_deref(),
        declared_version: &declared_version,
        outer_fields: graph.defaults().schema().fields().keys().cloned().collect(),
        fan_outs: &fan_outs,
    };
    assert::first_run(case, &ctx).await?;
    if let (Some(r), Some(run)) = (&resume_y, &resumed) {
        assert::resume(r, &ctx, run).await?;
    }
    if let Some(i) = case.get("invariants") {
        let run = resumed
            .as_ref()
            .or(main.as_ref())
            .ok_or("invariants: nothing ran")?;
        assert::invariants(&i, &ctx, run).await?;
    }
    assert::no_violations(&log, &harness)
}
