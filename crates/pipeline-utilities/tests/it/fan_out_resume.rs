//! pipeline-utilities §10.7 / §10.11 — per-instance fan-out resume: completed instances
//! are skipped and their contributions (successes, collected errors, extra outputs) roll
//! forward exactly once; in-flight instances restart from their entry; a changed
//! instance count is `checkpoint_record_invalid`; nested fan-outs match saved progress
//! by enclosing lineage only.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use openarmature_graph::checkpoint::{
    CheckpointRecord, Checkpointer, FanOutProgress, InMemoryCheckpointer, InstanceState,
    LineageEntry,
};
use openarmature_graph::{
    CategorizedError, CompiledGraph, GraphBuilder, InvokeOptions, NodeCtx, RuntimeCategory, END,
};
use openarmature_pipeline::{ErrorPolicy, FanOutNode};

use crate::common::single_node;
use crate::common::{resume, Group, Outer};
use serde_json::json;

openarmature_graph::state! {
    /// One instance.
    #[derive(Default, PartialEq)]
    pub struct Item => ItemUpdate {
        /// Input.
        pub x: i64,
        /// Output.
        pub y: i64,
        /// An extra output.
        pub note: String,
    }
}

openarmature_graph::state! {
    /// The parent.
    #[derive(Default, PartialEq)]
    pub struct Batch => BatchUpdate {
        /// Inputs.
        pub xs: Vec<i64>,
        /// Outputs.
        pub ys: Vec<i64> => append,
        /// Extra outputs.
        pub notes: Vec<String> => append,
        /// Collected errors.
        pub errors: Vec<BTreeMap<String, String>> => append,
    }
}

/// Which inputs ran (in order) and which fail while `failing` is set.
#[derive(Default)]
struct Script {
    ran: Mutex<Vec<i64>>,
    failing: AtomicBool,
    fail_on: Vec<i64>,
}

fn leaf(script: &Arc<Script>) -> CompiledGraph<Item> {
    let script = Arc::clone(script);
    single_node::<Item>("score", move |s: Arc<Item>, _c: NodeCtx| {
        let script = Arc::clone(&script);
        async move {
            script.ran.lock().unwrap().push(s.x);
            if script.failing.load(Ordering::SeqCst) && script.fail_on.contains(&s.x) {
                return Err(CategorizedError::new(
                    openarmature_graph::Category::from_name("boom"),
                    "scripted",
                )
                .into());
            }
            Ok(ItemUpdate::default().y(s.x).note(format!("n{}", s.x)))
        }
    })
}

fn batch(
    script: &Arc<Script>,
    policy: ErrorPolicy,
    store: &InMemoryCheckpointer,
) -> CompiledGraph<Batch> {
    let fan = FanOutNode::<Batch, Item>::over_items(leaf(script), "xs", "x", "y", "ys")
        .extra_outputs([("notes", "note")])
        .errors_field("errors")
        .error_policy(policy)
        .concurrency(NonZeroUsize::new(1));
    GraphBuilder::new(Batch::default())
        .add_node("fan", fan)
        .add_edge("fan", END)
        .entry("fan")
        .checkpointer(Arc::new(store.clone()))
        .compile()
        .unwrap()
}

/// A script whose input `x` fails while `failing` is set (it is, at first).
fn failing_on(x: i64) -> Arc<Script> {
    let script = Arc::new(Script {
        fail_on: vec![x],
        ..Script::default()
    });
    script.failing.store(true, Ordering::SeqCst);
    script
}

fn input(xs: &[i64]) -> Batch {
    Batch {
        xs: xs.to_vec(),
        ..Batch::default()
    }
}

fn states(record: &CheckpointRecord) -> Vec<InstanceState> {
    record.fan_out_progress[0]
        .instances
        .iter()
        .map(|i| i.state)
        .collect()
}

#[tokio::test]
async fn completed_instances_are_skipped_and_roll_forward_once() {
    let script = failing_on(30);
    let store = InMemoryCheckpointer::new();
    let graph = batch(&script, ErrorPolicy::FailFast, &store);
    let err = graph
        .invoke_with(input(&[10, 20, 30, 40]), InvokeOptions::default())
        .await
        .unwrap_err();
    let saved = store.load(err.invocation_id()).await.unwrap().unwrap();
    use InstanceState::{Completed, InFlight, NotStarted};
    assert_eq!(states(&saved), [Completed, Completed, InFlight, NotStarted]);
    assert_eq!(saved.fan_out_progress[0].instances[1].result, json!(20));
    assert!(saved.completed_positions.is_empty());

    script.failing.store(false, Ordering::SeqCst);
    script.ran.lock().unwrap().clear();
    let resumed = resume(&graph, err.invocation_id()).await.unwrap();
    assert_eq!(*script.ran.lock().unwrap(), [30, 40]);
    assert_eq!(resumed.state.ys, [10, 20, 30, 40]);
    assert_eq!(resumed.state.notes, ["n10", "n20", "n30", "n40"]);
    // The fan-out's completion save carries no progress for it.
    let last = store.load(&resumed.invocation_id).await.unwrap().unwrap();
    assert!(last.fan_out_progress.is_empty());
}

#[tokio::test]
async fn collected_errors_roll_forward_without_a_rerun() {
    let script = failing_on(20);
    let store = InMemoryCheckpointer::new();
    let graph = batch(&script, ErrorPolicy::Collect, &store);
    let first = graph
        .invoke_with(input(&[10, 20, 30]), InvokeOptions::default())
        .await
        .unwrap();
    // Seed a resume from the save made right after instance 1's error was recorded:
    // instance 2 still not started.
    let mut record = store.load(&first.invocation_id).await.unwrap().unwrap();
    let mut entry = FanOutProgress::new(Vec::new(), "fan", Vec::new(), 3);
    entry.instances[0].state = InstanceState::Completed;
    entry.instances[0].result = json!(10);
    entry.instances[0]
        .extra_outputs
        .insert("notes".into(), json!("n10"));
    entry.instances[1].state = InstanceState::Completed;
    entry.instances[1].result_is_error = true;
    entry.instances[1].result = json!({"fan_out_index": "1", "category": "boom", "message": "m"});
    record = record.with_fan_out_progress(vec![entry]);
    record.completed_positions = Default::default();
    record.state = json!({"xs": [10, 20, 30], "ys": [], "notes": [], "errors": []});
    store.save("seeded", record).await.unwrap();

    script.ran.lock().unwrap().clear();
    let resumed = resume(&graph, "seeded").await.unwrap();
    assert_eq!(*script.ran.lock().unwrap(), [30]);
    assert_eq!(resumed.state.ys, [10, 30]);
    assert_eq!(resumed.state.notes, ["n10", "n30"]);
    assert_eq!(resumed.state.errors.len(), 1);
    assert_eq!(resumed.state.errors[0]["category"], "boom");
}

#[tokio::test]
async fn a_changed_instance_count_is_record_invalid_before_any_instance_runs() {
    let script = failing_on(20);
    let store = InMemoryCheckpointer::new();
    let graph = batch(&script, ErrorPolicy::FailFast, &store);
    let err = graph
        .invoke_with(input(&[10, 20, 30]), InvokeOptions::default())
        .await
        .unwrap_err();
    let mut record = store.load(err.invocation_id()).await.unwrap().unwrap();
    record.state = json!({"xs": [10, 20], "ys": [], "notes": [], "errors": []});
    record.parent_states.clear();
    store.save("drifted", record).await.unwrap();
    script.ran.lock().unwrap().clear();
    let err = resume(&graph, "drifted").await.unwrap_err();
    assert_eq!(err.category(), RuntimeCategory::CheckpointRecordInvalid);
    assert!(script.ran.lock().unwrap().is_empty());
}

fn nested(script: &Arc<Script>, store: &InMemoryCheckpointer) -> CompiledGraph<Outer> {
    let inner = FanOutNode::<Group, Item>::over_items(leaf(script), "xs", "x", "y", "ys")
        .concurrency(NonZeroUsize::new(1));
    let group = single_node::<Group>("inner", inner);
    GraphBuilder::new(Outer::default())
        .add_node(
            "outer",
            FanOutNode::<Outer, Group>::over_items(group, "groups", "xs", "ys", "all"),
        )
        .add_edge("outer", END)
        .entry("outer")
        .checkpointer(Arc::new(store.clone()))
        .compile()
        .unwrap()
}

fn inner_entry(lineage: Vec<LineageEntry>, done: &[i64]) -> FanOutProgress {
    let mut entry = FanOutProgress::new(vec!["outer".into()], "inner", lineage, 3);
    for (i, v) in done.iter().enumerate() {
        entry.instances[i].state = InstanceState::Completed;
        entry.instances[i].result = json!(v);
    }
    entry
}

#[tokio::test]
async fn nested_progress_applies_only_to_its_enclosing_instance() {
    let script = Arc::new(Script::default());
    let store = InMemoryCheckpointer::new();
    let graph = nested(&script, &store);
    let at = |i| vec![LineageEntry::new(Vec::new(), "outer", i)];
    let seed = |id: &str, inner: Vec<FanOutProgress>| {
        let mut progress = vec![FanOutProgress::new(Vec::new(), "outer", Vec::new(), 2)];
        progress.extend(inner);
        let state = json!({"groups": [[1, 2, 3], [4, 5, 6]], "all": []});
        CheckpointRecord::new(id, "c", state, Vec::new(), "unversioned")
            .with_fan_out_progress(progress)
    };
    // Lineage-matched entries: each outer instance skips only its own completed ones.
    store
        .save(
            "lineaged",
            seed(
                "lineaged",
                vec![inner_entry(at(0), &[1, 2]), inner_entry(at(1), &[4])],
            ),
        )
        .await
        .unwrap();
    let out = resume(&graph, "lineaged").await.unwrap();
    assert_eq!(out.state.all, [vec![1, 2, 3], vec![4, 5, 6]]);
    let mut ran = script.ran.lock().unwrap().clone();
    ran.sort_unstable();
    assert_eq!(ran, [3, 5, 6]);

    // A legacy entry without lineage matches no nested execution: everything re-runs.
    script.ran.lock().unwrap().clear();
    store
        .save(
            "legacy",
            seed("legacy", vec![inner_entry(Vec::new(), &[1, 2])]),
        )
        .await
        .unwrap();
    let out = resume(&graph, "legacy").await.unwrap();
    assert_eq!(out.state.all, [vec![1, 2, 3], vec![4, 5, 6]]);
    assert_eq!(script.ran.lock().unwrap().len(), 6);
}

/// The last completed position is inside a serial subgraph that finished before the
/// fan-out: the resume re-enters the in-flight fan-out, not the subgraph.
#[tokio::test]
async fn a_fan_out_after_a_subgraph_resumes_into_the_fan_out() {
    use openarmature_graph::SubgraphNode;
    let script = failing_on(20);
    let prep_runs = Arc::new(Mutex::new(0));
    let runs = Arc::clone(&prep_runs);
    let prep = single_node::<Batch>("fill", move |_s: Arc<Batch>, _c: NodeCtx| {
        *runs.lock().unwrap() += 1;
        async { Ok(BatchUpdate::default().xs(vec![10, 20, 30])) }
    });
    let store = InMemoryCheckpointer::new();
    let fan = FanOutNode::<Batch, Item>::over_items(leaf(&script), "xs", "x", "y", "ys")
        .concurrency(NonZeroUsize::new(1));
    let graph = GraphBuilder::new(Batch::default())
        .add_node("prep", SubgraphNode::new(prep).projects_out(["xs"]))
        .add_node("fan", fan)
        .add_edge("prep", "fan")
        .add_edge("fan", END)
        .entry("prep")
        .checkpointer(Arc::new(store.clone()))
        .compile()
        .unwrap();
    let err = graph
        .invoke_with(Batch::default(), InvokeOptions::default())
        .await
        .unwrap_err();
    script.failing.store(false, Ordering::SeqCst);
    script.ran.lock().unwrap().clear();
    let resumed = resume(&graph, err.invocation_id()).await.unwrap();
    assert_eq!(*prep_runs.lock().unwrap(), 1);
    assert_eq!(*script.ran.lock().unwrap(), [20, 30]);
    assert_eq!(resumed.state.ys, [10, 20, 30]);
}
