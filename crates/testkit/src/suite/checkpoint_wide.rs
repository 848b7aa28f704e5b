//! Checkpointer cases for records saved the way a run saves them (pipeline-utilities
//! §10.3.1 / §10.11): one growing record, re-saved after every node and every finished
//! fan-out instance. Backends that store positions and instances incrementally must
//! load exactly the record last saved, from a fresh store too.

use std::sync::Arc;

use openarmature_graph::checkpoint::{
    CheckpointRecord, Checkpointer, FanOutProgress, InMemoryCheckpointer, InstanceProgress,
    InstanceState, LineageEntry, NodePosition,
};
use serde_json::json;

use super::Backend;

const WIDTH: usize = 120;

fn at(namespace: &[&str], node: &str, step: u64, index: Option<usize>) -> NodePosition {
    let namespace = namespace.iter().map(|s| (*s).to_owned()).collect();
    NodePosition::new(namespace, node, step, 0, index)
}

fn done(i: usize) -> InstanceProgress {
    let mut p = InstanceProgress::default();
    p.state = InstanceState::Completed;
    p.result = json!({"item": i, "text": format!("é{i}")});
    p.result_is_error = i % 7 == 3;
    if i.is_multiple_of(5) {
        p.extra_outputs.insert("seen".into(), json!([i]));
    }
    p
}

/// Saves `record` to both stores.
async fn both(store: &Arc<dyn Checkpointer>, memory: &InMemoryCheckpointer, r: &CheckpointRecord) {
    store.save(&r.invocation_id, r.clone()).await.unwrap();
    memory.save(&r.invocation_id, r.clone()).await.unwrap();
}

/// The fresh store and the in-memory store load the same record, equal to `r`.
async fn same(b: &dyn Backend, s: &str, memory: &InMemoryCheckpointer, r: &CheckpointRecord) {
    let fresh = b.checkpointer(s).await;
    let loaded = fresh.load(&r.invocation_id).await.unwrap();
    let reference = memory.load(&r.invocation_id).await.unwrap();
    assert_eq!(loaded.as_ref(), Some(r));
    assert_eq!(loaded, reference);
}

/// A wide fan-out (and a nested one) saved after every instance, then ended, then a
/// fan-out of the same key run again: every load equals the in-memory record.
pub(super) async fn wide_fan_out(b: &dyn Backend, s: &str) {
    let store = b.checkpointer(s).await;
    let memory = InMemoryCheckpointer::new();
    let mut live = CheckpointRecord::new("wide", "corr", json!({"items": WIDTH}), Vec::new(), "1");
    live.completed_positions.push(at(&[], "prepare", 0, None));
    let outer = FanOutProgress::new(vec![], "fan", vec![], WIDTH);
    let nested = FanOutProgress::new(
        vec!["fan".into()],
        "inner_fan",
        vec![LineageEntry::new(vec![], "fan", 4)],
        3,
    );
    live.fan_out_progress = vec![outer, nested];
    both(&store, &memory, &live).await;
    let mut step = 1;
    for i in 0..WIDTH {
        let outer = &mut live.fan_out_progress[0].instances;
        outer[i].state = InstanceState::InFlight;
        if i.is_multiple_of(9) {
            // An inner position of the in-flight instance, saved on its own.
            outer[i]
                .completed_inner_positions
                .push(at(&["fan"], "work", step, Some(i)));
            step += 1;
            both(&store, &memory, &live).await;
        }
        if i < 3 {
            live.fan_out_progress[1].instances.set(i, done(100 + i));
        }
        live.fan_out_progress[0].instances.set(i, done(i));
        live.last_saved_at += std::time::Duration::from_micros(1);
        both(&store, &memory, &live).await;
        if i % 40 == 39 {
            same(b, s, &memory, &live).await;
        }
    }
    same(b, s, &memory, &live).await;
    let listed = store.list(None).await.unwrap();
    assert_eq!(listed[0].completed_node_count, 1);

    // The fan-out node completes: no progress left, one more position.
    live.fan_out_progress.clear();
    live.completed_positions.push(at(&[], "fan", step, None));
    both(&store, &memory, &live).await;
    same(b, s, &memory, &live).await;

    // A fan-out of the same key runs again (a loop): its old instances are gone.
    live.fan_out_progress = vec![FanOutProgress::new(vec![], "fan", vec![], 3)];
    live.fan_out_progress[0].instances.set(1, done(1));
    both(&store, &memory, &live).await;
    same(b, s, &memory, &live).await;

    // A record loaded back, changed and saved (its change log is not the store's).
    let mut loaded = store.load("wide").await.unwrap().unwrap();
    loaded.fan_out_progress[0].instances.set(2, done(2));
    loaded
        .completed_positions
        .push(at(&[], "after", step + 1, None));
    both(&store, &memory, &loaded).await;
    same(b, s, &memory, &loaded).await;

    store.delete("wide").await.unwrap();
    assert_eq!(b.checkpointer(s).await.load("wide").await.unwrap(), None);
    // A new run under the deleted id stores from scratch.
    let mut again = CheckpointRecord::new("wide", "c2", json!({}), Vec::new(), "1");
    again.fan_out_progress = vec![FanOutProgress::new(vec![], "fan", vec![], 2)];
    again.fan_out_progress[0].instances.set(0, done(0));
    both(&store, &memory, &again).await;
    same(b, s, &memory, &again).await;
}

/// Two runs saving under one invocation id in turn (a re-run from the start): each
/// load is the record last saved, never a mix of both histories.
pub(super) async fn interleaved_histories(b: &dyn Backend, s: &str) {
    let store = b.checkpointer(s).await;
    let memory = InMemoryCheckpointer::new();
    let mut first = CheckpointRecord::new("twice", "c", json!({}), Vec::new(), "1");
    let mut second = first.clone();
    first.fan_out_progress = vec![FanOutProgress::new(vec![], "fan", vec![], 8)];
    second.fan_out_progress = first.fan_out_progress.clone();
    for i in 0..8 {
        first.completed_positions.push(at(&[], "a", i, None));
        first.fan_out_progress[0]
            .instances
            .set(i as usize, done(i as usize));
        both(&store, &memory, &first).await;
        same(b, s, &memory, &first).await;
        // The second history shares the first's change log up to its fork.
        second.completed_positions.push(at(&[], "b", i, None));
        second.fan_out_progress[0].instances[i as usize].state = InstanceState::InFlight;
        both(&store, &memory, &second).await;
        same(b, s, &memory, &second).await;
    }
}
