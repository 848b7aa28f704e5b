//! pipeline-utilities §10 through the engine's public API: a save per completed node,
//! resume after a failure (completed nodes are not re-run, fresh invocation id, same
//! correlation id), subgraph re-entry, `checkpoint_not_found`, failure saves, and state
//! migrations on load.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use openarmature_graph::checkpoint::{
    CheckpointFilter, CheckpointRecord, CheckpointSummary, Checkpointer, InMemoryCheckpointer,
    NodePosition,
};
use openarmature_graph::{
    state, BoxError, CompileError, CompiledGraph, GraphBuilder, InvokeOptions, NodeCtx, NodeError,
    RuntimeCategory, SubgraphNode, END,
};
use openarmature_testkit::graphs::single_node;
use serde_json::json;

state! {
    /// The outer state.
    #[derive(Default, PartialEq)]
    pub struct Run => RunUpdate {
        /// Visited nodes.
        pub log: Vec<String> => append,
        /// Written by the subgraph.
        pub inner: String,
    }
}

state! {
    /// The subgraph's state.
    #[derive(Default, PartialEq)]
    pub struct Sub => SubUpdate {
        /// Visited inner nodes.
        pub steps: Vec<String> => append,
        /// Its output.
        pub inner: String,
    }
}

/// Every record saved, in order (wraps the in-memory store).
#[derive(Clone, Default)]
struct Recording {
    store: InMemoryCheckpointer,
    saved: Arc<Mutex<Vec<CheckpointRecord>>>,
}

impl Checkpointer for Recording {
    fn save<'a>(
        &'a self,
        id: &'a str,
        record: CheckpointRecord,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        self.saved.lock().unwrap().push(record.clone());
        self.store.save(id, record)
    }
    fn load<'a>(
        &'a self,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, BoxError>> {
        self.store.load(id)
    }
    fn list<'a>(
        &'a self,
        filter: Option<&'a CheckpointFilter>,
    ) -> BoxFuture<'a, Result<Vec<CheckpointSummary>, BoxError>> {
        self.store.list(filter)
    }
    fn delete<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        self.store.delete(id)
    }
}

/// Counts runs per node; `fail` makes node `b` raise while it is set.
#[derive(Clone, Default)]
struct Script {
    runs: Arc<Mutex<Vec<String>>>,
    fail: Arc<AtomicBool>,
}

impl Script {
    fn ran(&self) -> Vec<String> {
        std::mem::take(&mut *self.runs.lock().unwrap())
    }
}

fn linear(script: &Script, cp: Arc<dyn Checkpointer>) -> CompiledGraph<Run> {
    let step = |name: &'static str, script: Script| {
        move |_s: Arc<Run>, _ctx: NodeCtx| {
            let script = script.clone();
            async move {
                script.runs.lock().unwrap().push(name.into());
                if name == "b" && script.fail.load(Ordering::SeqCst) {
                    return Err::<RunUpdate, NodeError>("b failed".into());
                }
                Ok(RunUpdate::default().log(vec![name.to_owned()]))
            }
        }
    };
    GraphBuilder::new(Run::default())
        .add_node("a", step("a", script.clone()))
        .add_node("b", step("b", script.clone()))
        .add_node("c", step("c", script.clone()))
        .add_edge("a", "b")
        .add_edge("b", "c")
        .add_edge("c", END)
        .entry("a")
        .checkpointer(cp)
        .compile()
        .unwrap()
}

#[tokio::test]
async fn every_completed_node_saves_a_full_snapshot() {
    let rec = Recording::default();
    let graph = linear(&Script::default(), Arc::new(rec.clone()));
    let done = run_with(&graph, InvokeOptions::default().correlation_id("corr"))
        .await
        .unwrap();
    let saved = rec.saved.lock().unwrap().clone();
    assert_eq!(saved.len(), 3);
    for (i, record) in saved.iter().enumerate() {
        assert_eq!(record.invocation_id, done.invocation_id);
        assert_eq!(record.correlation_id, "corr");
        assert_eq!(record.completed_positions.len(), i + 1);
        let last = record.completed_positions.last().unwrap();
        assert_eq!(last.step, i as u64);
        assert_eq!(last.attempt_index, 0);
        assert!(last.namespace.is_empty());
    }
    assert_eq!(saved[1].state["log"], json!(["a", "b"]));
    assert!(saved[0].last_saved_at < saved[1].last_saved_at);
    assert_eq!(rec.store.len(), 1);
}

#[tokio::test]
async fn resume_skips_completed_nodes_with_fresh_id_and_same_correlation() {
    let rec = Recording::default();
    let script = Script::default();
    script.fail.store(true, Ordering::SeqCst);
    let graph = linear(&script, Arc::new(rec.clone()));
    let err = run_with(&graph, InvokeOptions::default().correlation_id("corr"))
        .await
        .unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::NodeException);
    let first = err.invocation_id().to_owned();
    assert_eq!(script.ran(), ["a", "b"]);
    // The failure save keeps the record at "a completed".
    let record = rec.store.load(&first).await.unwrap().unwrap();
    assert_eq!(record.completed_positions.len(), 1);
    assert_eq!(record.state["log"], json!(["a"]));

    script.fail.store(false, Ordering::SeqCst);
    let done = run_with(
        &graph,
        InvokeOptions::default()
            .resume_invocation(&first)
            .invocation_id("ignored-on-resume"),
    )
    .await
    .unwrap();
    assert_eq!(script.ran(), ["b", "c"]);
    assert_eq!(done.state.log, ["a", "b", "c"]);
    assert_ne!(done.invocation_id, first);
    assert_ne!(done.invocation_id, "ignored-on-resume");
    let resumed = rec.store.load(&done.invocation_id).await.unwrap().unwrap();
    assert_eq!(resumed.correlation_id, "corr");
    let steps: Vec<u64> = resumed.completed_positions.iter().map(|p| p.step).collect();
    assert_eq!(steps, [0, 1, 2]);
}

#[tokio::test]
async fn resume_of_a_run_that_never_completed_a_node_restarts_at_the_entry() {
    let rec = Recording::default();
    let script = Script::default();
    let graph = GraphBuilder::new(Run::default())
        .add_node("b", {
            let script = script.clone();
            move |_s: Arc<Run>, _ctx: NodeCtx| {
                let script = script.clone();
                async move {
                    script.runs.lock().unwrap().push("b".into());
                    if script.fail.swap(false, Ordering::SeqCst) {
                        return Err::<RunUpdate, NodeError>("first run fails".into());
                    }
                    Ok(RunUpdate::default().log(vec!["b".to_owned()]))
                }
            }
        })
        .add_edge("b", END)
        .entry("b")
        .checkpointer(Arc::new(rec.clone()))
        .compile()
        .unwrap();
    script.fail.store(true, Ordering::SeqCst);
    let err = graph.invoke(Run::default()).await.unwrap_err();
    let record = rec.store.load(err.invocation_id()).await.unwrap().unwrap();
    assert!(record.completed_positions.is_empty());
    let done = resume(&graph, err.invocation_id()).await.unwrap();
    assert_eq!(done.state.log, ["b"]);
    assert_eq!(script.ran(), ["b", "b"]);
}

#[tokio::test]
async fn unknown_or_unregistered_resume_is_checkpoint_not_found() {
    let graph = linear(&Script::default(), Arc::new(InMemoryCheckpointer::new()));
    let err = resume(&graph, "nope").await.unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::CheckpointNotFound);
    assert_eq!(err.category_name(), "checkpoint_not_found");
    let plain = single_node::<Run>("a", |_s: Arc<Run>, _c: NodeCtx| async {
        Ok(RunUpdate::default())
    });
    let err = resume(&plain, "x").await.unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::CheckpointNotFound);
}

#[tokio::test]
async fn resume_re_enters_a_subgraph_after_its_last_completed_inner_node() {
    let rec = Recording::default();
    let fail = Arc::new(AtomicBool::new(true));
    let inner_runs = Arc::new(AtomicUsize::new(0));
    let sub = GraphBuilder::new(Sub::default())
        .add_node("s1", {
            let runs = Arc::clone(&inner_runs);
            move |_s: Arc<Sub>, _c: NodeCtx| {
                runs.fetch_add(1, Ordering::SeqCst);
                async { Ok(SubUpdate::default().steps(vec!["s1".into()])) }
            }
        })
        .add_node("s2", {
            let fail = Arc::clone(&fail);
            move |s: Arc<Sub>, _c: NodeCtx| {
                let failing = fail.load(Ordering::SeqCst);
                async move {
                    if failing {
                        return Err::<SubUpdate, NodeError>("s2 failed".into());
                    }
                    Ok(SubUpdate::default().inner(s.steps.join("+")))
                }
            }
        })
        .add_edge("s1", "s2")
        .add_edge("s2", END)
        .entry("s1")
        .compile()
        .unwrap();
    let graph = GraphBuilder::new(Run::default())
        .add_node("pre", |_s: Arc<Run>, _c: NodeCtx| async {
            Ok(RunUpdate::default().log(vec!["pre".into()]))
        })
        .add_node("sub", SubgraphNode::new(sub).projects_out(["inner"]))
        .add_edge("pre", "sub")
        .add_edge("sub", END)
        .entry("pre")
        .checkpointer(Arc::new(rec.clone()))
        .compile()
        .unwrap();
    let err = graph.invoke(Run::default()).await.unwrap_err();
    let record = rec.store.load(err.invocation_id()).await.unwrap().unwrap();
    let last = record.completed_positions.last().unwrap();
    assert_eq!(
        (last.namespace.clone(), last.node_name.as_str()),
        (vec!["sub".to_owned()], "s1")
    );
    assert_eq!(record.parent_states.len(), 1);
    assert_eq!(record.parent_states[0]["log"], json!(["pre"]));
    assert_eq!(record.state["steps"], json!(["s1"]));

    fail.store(false, Ordering::SeqCst);
    let done = resume(&graph, err.invocation_id()).await.unwrap();
    assert_eq!(inner_runs.load(Ordering::SeqCst), 1, "s1 is not re-run");
    assert_eq!(done.state.log, ["pre"], "pre is not re-run");
    assert_eq!(done.state.inner, "s1");
}

/// Runs `graph` from the default initial state with `options`.
async fn run_with(
    graph: &CompiledGraph<Run>,
    options: InvokeOptions,
) -> Result<openarmature_graph::Completed<Run>, openarmature_graph::GraphError<Run>> {
    graph.invoke_with(Run::default(), options).await
}

/// Resumes invocation `id` of `graph` from the default initial state.
async fn resume(
    graph: &CompiledGraph<Run>,
    id: &str,
) -> Result<openarmature_graph::Completed<Run>, openarmature_graph::GraphError<Run>> {
    run_with(graph, InvokeOptions::default().resume_invocation(id)).await
}

fn seeded(version: &str) -> CheckpointRecord {
    CheckpointRecord::new(
        "old",
        "corr",
        json!({"log": ["a"]}),
        vec![NodePosition::new(vec![], "a", 0, 0, None)],
        version,
    )
}

fn migrating(store: InMemoryCheckpointer, version: &str) -> GraphBuilder<Run> {
    GraphBuilder::new(Run::default())
        .add_node("a", |_s: Arc<Run>, _c: NodeCtx| async {
            Ok(RunUpdate::default())
        })
        .add_node("b", |s: Arc<Run>, _c: NodeCtx| async move {
            Ok(RunUpdate::default().inner(s.inner.clone() + "+b"))
        })
        .add_edge("a", "b")
        .add_edge("b", END)
        .entry("a")
        .checkpointer(Arc::new(store))
        .schema_version(version)
}

#[tokio::test]
async fn migrations_bridge_versions_on_load_and_fail_with_typed_categories() {
    let store = InMemoryCheckpointer::new();
    store.save("old", seeded("1")).await.unwrap();
    let graph = migrating(store.clone(), "3")
        .state_migration("1", "2", |mut v| {
            v["inner"] = json!("v2");
            Ok(v)
        })
        .state_migration("2", "3", |mut v| {
            v["inner"] = json!(format!("{}+v3", v["inner"].as_str().unwrap_or("")));
            Ok(v)
        })
        .compile()
        .unwrap();
    let done = resume(&graph, "old").await.unwrap();
    assert_eq!(done.state.inner, "v2+v3+b");
    let latest = store.load(&done.invocation_id).await.unwrap().unwrap();
    assert_eq!(latest.schema_version, "3");

    let missing = migrating(store.clone(), "9");
    let raising =
        migrating(store.clone(), "2").state_migration("1", "2", |_| Err("bad migration".into()));
    let bad_field = migrating(store.clone(), "2").state_migration("1", "2", |mut v| {
        v["undeclared"] = json!(1);
        Ok(v)
    });
    for (builder, want) in [
        (missing, RuntimeCategory::CheckpointStateMigrationMissing),
        (raising, RuntimeCategory::CheckpointStateMigrationFailed),
        (bad_field, RuntimeCategory::CheckpointRecordInvalid),
    ] {
        let err = resume(&builder.compile().unwrap(), "old")
            .await
            .unwrap_err();
        assert_eq!(err.category(), want);
    }
}

#[test]
fn ambiguous_migrations_fail_compilation() {
    let store = InMemoryCheckpointer::new();
    let dup = migrating(store.clone(), "2")
        .state_migration("1", "2", Ok)
        .state_migration("1", "2", Ok)
        .compile()
        .err()
        .unwrap();
    assert_eq!(dup.category(), "checkpoint_state_migration_chain_ambiguous");
    let diamond = migrating(store, "3")
        .state_migration("1", "2a", Ok)
        .state_migration("1", "2b", Ok)
        .state_migration("2a", "3", Ok)
        .state_migration("2b", "3", Ok)
        .compile()
        .err()
        .unwrap();
    assert!(matches!(
        diamond,
        CompileError::CheckpointStateMigrationChainAmbiguous { .. }
    ));
}
