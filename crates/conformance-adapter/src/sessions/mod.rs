//! Spec: sessions §3–§11 and conformance-adapter §4 / §8.3 — the sessions runner.
//!
//! A case is read into the typed model of [`model`]; its graph definition is rewritten
//! into the graph-engine vocabulary ([`desugar`]) and built by the graph-engine
//! runner's builder (`ge/build.rs`) with the sessions node directives of [`nodes`].
//! The session registration (store, projection, `auto_save`, migrations) goes on the
//! outermost graph through `GraphBuilder::sessions`. Each invocation runs with the
//! runner's recording observer (and, when the case looks at spans or logs, through
//! the case's `OtelObserver`, [`telemetry`]); the store records every call the engine
//! makes ([`store`]). The case's `expected` / `expected_error` are checked by
//! [`expect`], its invariants by the table in [`invariants`].
//!
//! Register of fixture-shaped conventions (adapter register S1–S4 in REGISTER.md):
//!
//! - S1 node vocabulary ([`desugar`]): `mapping: {inputs, outputs}` on subgraph and
//!   fan-out nodes, `<fan_out_item>`, `raises: {category}`.
//! - S2 `explicit_save_session: true` merges the node's scripted update into its input
//!   state and saves that (`NodeCtx::save_session`) before returning the update.
//! - S3 a `seeded_session` without `schema_version` is stored at the graph's own
//!   version (the declared `state.schema_version`, else `UNVERSIONED`): the record was
//!   written by this graph; `state.schema_version` is the graph's
//!   (`GraphBuilder::schema_version`), which the session registration inherits.
//! - S4 invariant readings ([`invariants`]): "the graph sees X" is read from the
//!   `started` event of the entry node (its `pre_state`); "no load / save" from the
//!   store's call log; "subgraph / instance sees only its schema" from the `started`
//!   events below the outermost graph; `node_event_does_not_carry_session_id_field`
//!   means no recorded node event (rendered with `Debug`) contains the session id.

mod desugar;
mod expect;
mod invariants;

pub(crate) use invariants::TABLE_NAMES as INVARIANT_NAMES;
mod model;
mod nodes;
mod run;
mod store;
mod telemetry;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use openarmature_graph::checkpoint::UNVERSIONED;
use openarmature_graph::session::{SessionConfig, SessionRecord, SessionStore, SessionSummary};
use serde::Deserialize;
use serde_json::Value as Json;
use serde_norway::{Mapping, Value as Yv};

use self::model::Case;
use self::nodes::SessionNodes;
use self::run::{Invoker, Run, RunFailure, RECORDER};
use self::store::RecordingStore;
use self::telemetry::Telemetry;
use crate::failure::{Check, Failure};
use crate::ge::build::Builder;
use crate::ge::checkpoint::MigrationLog;
use crate::ge::harness::{Behavior, Harness, HarnessObserver, Pace};
use crate::shared::lock;
use crate::yaml::Y;

/// Everything a case left behind, for [`expect`] and [`invariants`].
struct Ctx<'a> {
    case: &'a Case,
    /// The session registration's failure (§7: a duplicate migration pair).
    registration: Option<RunFailure>,
    /// The invocations, in order.
    runs: Vec<Run>,
    store: Option<Arc<RecordingStore>>,
    /// The store's sessions before the first invocation (after seeding) and after
    /// the last.
    listed_before: Vec<SessionSummary>,
    listed_after: Vec<SessionSummary>,
    /// `load()` against the backend after the case, per session id it names.
    records_after: BTreeMap<String, Option<SessionRecord>>,
    /// What the migration mocks did, and each successful migration's output.
    migrations: Arc<MigrationLog>,
    migrated: Arc<Mutex<Vec<Json>>>,
    /// Explicit mid-invoke saves that wrote a record.
    explicit_saves: usize,
    telemetry: Option<Telemetry>,
    /// Declared state fields per subgraph definition, with its node names.
    subgraphs: Vec<(Vec<String>, Vec<String>)>,
}

/// The `state.schema_version` of a graph definition.
#[derive(Deserialize)]
struct Versioned {
    #[serde(default)]
    schema_version: Option<String>,
}

/// The field names of a `state: {fields: {...}}` declaration.
fn declared_fields(state: &Yv) -> Vec<String> {
    state
        .get("fields")
        .and_then(Yv::as_mapping)
        .map(|m| {
            m.keys()
                .filter_map(|k| k.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn mentions_log(nodes: &Yv) -> bool {
    nodes
        .as_mapping()
        .is_some_and(|m| m.values().any(|n| n.get("emits_log").is_some()))
}

/// Runs one sessions case. `doc` is the file root, `case` the case mapping.
pub(crate) async fn run_case(doc: &Y<'_>, case: &Y<'_>) -> Check {
    if case.value != doc.value {
        doc.check_keys(crate::ge::FILE_KEYS)?;
    }
    let model: Case = serde_norway::from_value(case.value.clone()).map_err(|e| {
        Failure::fixture(format!(
            "fixture_schema_invalid: {}: {}: {e}",
            case.file.display(),
            case.location()
        ))
    })?;
    let ctx = execute(&model, case).await?;
    expect::check(&ctx)?;
    invariants::check(&ctx)
}

/// Registers, builds, seeds and runs the case; returns what it left behind.
async fn execute<'c>(case: &'c Case, y: &Y<'_>) -> Check<Ctx<'c>> {
    let version = serde_norway::from_value::<Versioned>(case.state.clone())
        .map_err(|e| Failure::fixture(format!("fixture_schema_invalid: state: {e}")))?
        .schema_version;
    let store = case
        .session_store
        .map(store::fresh)
        .transpose()?
        .map(Arc::new);
    if let Some(seed) = &case.seeded_session {
        let (Some(store), Some(id)) = (&store, &case.session_id) else {
            return Err(
                "fixture_schema_invalid: seeded_session needs session_store and session_id".into(),
            );
        };
        let at = seed
            .schema_version
            .clone()
            .or_else(|| version.clone())
            .unwrap_or_else(|| UNVERSIONED.to_owned());
        let record = SessionRecord::new(id.as_str(), at, seed.state.clone());
        store
            .backend
            .save(id, record, None)
            .await
            .map_err(|e| format!("cannot seed the session store: {e}"))?;
    }
    let migrations = Arc::new(MigrationLog::default());
    let migrated = Arc::new(Mutex::new(Vec::new()));
    let mut ctx = Ctx {
        case,
        registration: None,
        runs: Vec::new(),
        store: store.clone(),
        listed_before: list(store.as_deref()).await?,
        listed_after: Vec::new(),
        records_after: BTreeMap::new(),
        migrations: Arc::clone(&migrations),
        migrated: Arc::clone(&migrated),
        explicit_saves: 0,
        telemetry: None,
        subgraphs: Vec::new(),
    };
    let config = match registration(case, y, store.as_ref(), &migrations, &migrated)? {
        Ok(config) => config,
        Err(failure) => {
            ctx.registration = Some(failure);
            return finish(ctx).await;
        }
    };

    // The graph: S1-rewritten definitions built by the graph-engine builder.
    let graph_v = desugar::graph(&case.state, &case.entry, &case.nodes, &case.edges)?;
    let mut defs = Mapping::new();
    if let Some(subgraphs) = &case.subgraphs {
        let rewritten = desugar::subgraphs(subgraphs)?;
        for def in rewritten.as_mapping().into_iter().flat_map(|m| m.values()) {
            let nodes = def
                .get("nodes")
                .and_then(Yv::as_mapping)
                .map(|m| {
                    m.keys()
                        .filter_map(|k| k.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            let fields = def.get("state").map(declared_fields).unwrap_or_default();
            ctx.subgraphs.push((fields, nodes));
        }
        defs.insert(Yv::String("subgraphs".into()), rewritten);
    }
    let defs = Yv::Mapping(defs);
    let wants_telemetry = case.expected.span_tree.is_some()
        || case.expected.log_records.is_some()
        || mentions_log(&case.nodes);
    ctx.telemetry = wants_telemetry.then(Telemetry::new);
    let saves = Arc::new(AtomicUsize::new(0));
    let harness = Arc::new(Harness::default());
    let mut builder = Builder::new(Arc::clone(&harness));
    builder.extension = Some(Arc::new(SessionNodes {
        otel: ctx.telemetry.as_ref().map(|t| t.observer.clone()),
        saves: Arc::clone(&saves),
    }));
    builder.collect_defs(&Y::root(&defs, y.file))?;
    builder.configure_outer = Some(Box::new(move |mut b| {
        if let Some(v) = &version {
            b = b.schema_version(v.clone());
        }
        match &config {
            Some(c) => b.sessions(c.clone()),
            None => b,
        }
    }));
    let extra = initial_keys(case);
    let graph = builder
        .graph(&Y::root(&graph_v, y.file), true, &extra)?
        .map_err(|e| Failure::setup(format!("unexpected compile error: {e}")))?;

    let recorder = Arc::new(HarnessObserver::new(
        RECORDER,
        Behavior::Record,
        Pace::Fixed(0),
        Arc::clone(&harness.deliveries),
        false,
    ));
    let invoker = Invoker {
        graph: &graph,
        harness: &harness,
        recorder: &recorder,
        store: store.as_deref(),
        telemetry: ctx.telemetry.as_ref(),
    };
    let mut runs = Vec::new();
    if case.invocations.is_empty() {
        runs.push(
            invoker
                .run(case.session_id.as_deref(), case.initial_state.as_ref())
                .await,
        );
    } else {
        for inv in &case.invocations {
            runs.push(
                invoker
                    .run(inv.session_id.as_deref(), inv.initial_state.as_ref())
                    .await,
            );
        }
    }
    ctx.runs = runs;
    ctx.explicit_saves = saves.load(Ordering::SeqCst);
    finish(ctx).await
}

/// The undeclared `initial_state` keys (adapter register R1 declares them `any`).
fn initial_keys(case: &Case) -> Vec<String> {
    let states = std::iter::once(case.initial_state.as_ref())
        .chain(case.invocations.iter().map(|i| i.initial_state.as_ref()));
    states
        .flatten()
        .filter_map(Json::as_object)
        .flat_map(|m| m.keys().cloned())
        .collect()
}

/// The session registration: `Ok(None)` without a store, `Err(failure)` when the
/// registration itself is refused (§7, a duplicate migration pair).
#[allow(clippy::type_complexity)]
fn registration(
    case: &Case,
    y: &Y<'_>,
    store: Option<&Arc<RecordingStore>>,
    log: &Arc<MigrationLog>,
    migrated: &Arc<Mutex<Vec<Json>>>,
) -> Check<Result<Option<SessionConfig>, RunFailure>> {
    let Some(store) = store else {
        if case.auto_save.is_some() || case.session_state.is_some() {
            return Err(Failure::fixture(
                "fixture_schema_invalid: session directives without session_store",
            ));
        }
        return Ok(Ok(None));
    };
    let mut config = SessionConfig::new(Arc::clone(store) as Arc<dyn SessionStore>)
        .auto_save(case.auto_save.unwrap_or(true));
    if let Some(projection) = &case.session_state {
        config = config.project(projection.fields.iter().cloned());
    }
    let decls = y.get("session_migrations").map(|m| m.seq()).transpose();
    let decls = decls?.unwrap_or_default();
    for (m, at) in case.session_migrations.iter().zip(decls) {
        let pair = (m.from_version.as_str(), m.to_version.as_str());
        let mock = crate::ge::checkpoint::migration(&at, &m.migrate, pair, log)?;
        let outputs = Arc::clone(migrated);
        let f = move |v: Json| {
            let out = mock(v)?;
            lock(&outputs).push(out.clone());
            Ok(out)
        };
        config = match config.migration(m.from_version.clone(), m.to_version.clone(), f) {
            Ok(c) => c,
            Err(e) => return Ok(Err(RunFailure::of_session(&e))),
        };
    }
    Ok(Ok(Some(config)))
}

async fn list(store: Option<&RecordingStore>) -> Check<Vec<SessionSummary>> {
    match store {
        Some(s) => Ok(s
            .backend
            .list(None)
            .await
            .map_err(|e| format!("cannot list the session store: {e}"))?),
        None => Ok(Vec::new()),
    }
}

/// Reads the store's final contents.
async fn finish(mut ctx: Ctx<'_>) -> Check<Ctx<'_>> {
    ctx.listed_after = list(ctx.store.as_deref()).await?;
    let mut ids: Vec<String> = ctx.case.session_id.iter().cloned().collect();
    ids.extend(
        ctx.case
            .invocations
            .iter()
            .filter_map(|i| i.session_id.clone()),
    );
    if let Some(after) = &ctx.case.expected.store_after {
        ids.extend(after.load_returns_for_session_id.iter().cloned());
        ids.extend(after.load_returns_none_for_session_id.iter().cloned());
    }
    if let Some(store) = &ctx.store {
        for id in ids {
            let record = store
                .backend
                .load(&id)
                .await
                .map_err(|e| format!("cannot load session `{id}` after the case: {e}"))?;
            ctx.records_after.insert(id, record);
        }
    }
    Ok(ctx)
}
