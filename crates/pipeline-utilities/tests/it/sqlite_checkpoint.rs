//! pipeline-utilities §10.1 / §10.13: the SQLite Checkpointer keeps the latest record
//! per invocation in a file, which a checkpointer opened afresh on the same file (a
//! restarted process) reads back; bad input gives typed errors. A failed run resuming
//! from a reopened file is the shared suite's `graph_resume` case (`backend_suite.rs`).

use std::time::Duration;

use openarmature_graph::checkpoint::{
    CheckpointFilter, CheckpointRecord, Checkpointer, FanOutProgress, InstanceProgress,
    InstanceState,
};
use openarmature_pipeline::{SqliteCheckpointError, SqliteCheckpointer};
use serde_json::json;

use crate::common::TempDb;

fn record(id: &str, corr: &str, nodes: usize) -> CheckpointRecord {
    CheckpointRecord::new(id, corr, json!({"log": ["a"]}), Vec::new(), "1")
        .with_parent_states(vec![json!({"outer": nodes})])
}

#[tokio::test]
async fn save_load_list_delete_and_reopen() {
    let db = TempDb::new("ckpt-crud");
    let store = SqliteCheckpointer::open(&db.0).unwrap();
    assert_eq!(store.load("inv-1").await.unwrap(), None);
    let first = record("inv-1", "corr-a", 1);
    store.save("inv-1", first.clone()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2)).await;
    let later = record("inv-2", "corr-b", 2);
    store.save("inv-2", later.clone()).await.unwrap();
    // Upsert: the latest record wins.
    let mut updated = first.clone();
    updated.state = json!({"log": ["a", "b"]});
    store.save("inv-1", updated.clone()).await.unwrap();
    assert_eq!(store.load("inv-1").await.unwrap(), Some(updated.clone()));

    // A checkpointer opened afresh on the file sees the same records.
    let reopened = SqliteCheckpointer::open(&db.0).unwrap();
    assert_eq!(reopened.load("inv-2").await.unwrap(), Some(later));
    let all = reopened.list(None).await.unwrap();
    let ids: Vec<&str> = all.iter().map(|s| s.invocation_id.as_str()).collect();
    assert_eq!(ids, ["inv-1", "inv-2"], "ordered by last save");
    let only_b = CheckpointFilter::new().correlation_id("corr-b");
    let filtered = reopened.list(Some(&only_b)).await.unwrap();
    assert_eq!(filtered.len(), 1);
    assert_eq!(filtered[0].invocation_id, "inv-2");

    reopened.delete("inv-1").await.unwrap();
    reopened.delete("inv-1").await.unwrap();
    assert_eq!(store.load("inv-1").await.unwrap(), None);
    assert_eq!(store.list(None).await.unwrap().len(), 1);
}

#[tokio::test]
async fn unreadable_rows_and_paths_are_typed_errors() {
    let db = TempDb::new("ckpt-corrupt");
    let store = SqliteCheckpointer::open(&db.0).unwrap();
    store.save("inv-1", record("inv-1", "c", 1)).await.unwrap();
    {
        let conn = rusqlite_conn(&db.0);
        conn.execute(
            "UPDATE openarmature_checkpoints SET record = '{not json' WHERE invocation_id = 'inv-1'",
            [],
        )
        .unwrap();
    }
    let err = store.load("inv-1").await.unwrap_err();
    let typed = err.downcast_ref::<SqliteCheckpointError>().unwrap();
    assert_eq!(typed.category(), "checkpoint_record_invalid");

    let dir = std::env::temp_dir();
    let err = SqliteCheckpointer::open(&dir).unwrap_err();
    assert!(matches!(err, SqliteCheckpointError::Open { .. }), "{err}");
    assert_eq!(err.category(), "checkpoint_backend_unavailable");
}

/// A second, raw connection to tamper with the file.
fn rusqlite_conn(path: &std::path::Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

fn at(step: u64) -> openarmature_graph::checkpoint::NodePosition {
    openarmature_graph::checkpoint::NodePosition::new(Vec::new(), format!("n{step}"), step, 0, None)
}

fn with_positions(id: &str, steps: impl IntoIterator<Item = u64>) -> CheckpointRecord {
    let positions: Vec<_> = steps.into_iter().map(at).collect();
    CheckpointRecord::new(id, "c", json!({"log": []}), positions, "1")
}

fn stored_rows(path: &std::path::Path, id: &str) -> (i64, i64) {
    let conn = rusqlite_conn(path);
    let rows: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM openarmature_checkpoint_positions WHERE invocation_id = ?1",
            [id],
            |r| r.get(0),
        )
        .unwrap();
    let in_record: i64 = conn
        .query_row(
            "SELECT json_array_length(record, '$.completed_positions')
             FROM openarmature_checkpoints WHERE invocation_id = ?1",
            [id],
            |r| r.get(0),
        )
        .unwrap();
    (rows, in_record)
}

/// §10.3.1 full snapshots, stored incrementally: each save appends only its new
/// positions (the record row carries none), a load reads them all back in order, a
/// re-run of the same id from the start replaces them, and delete removes them.
#[tokio::test]
async fn positions_are_appended_not_re_encoded() {
    let db = TempDb::new("ckpt-positions");
    let store = SqliteCheckpointer::open(&db.0).unwrap();
    for n in 1..=50u64 {
        store
            .save("inv", with_positions("inv", 0..n))
            .await
            .unwrap();
    }
    assert_eq!(stored_rows(&db.0, "inv"), (50, 0));
    let back = store.load("inv").await.unwrap().unwrap();
    assert_eq!(
        back.completed_positions.to_vec(),
        (0..50).map(at).collect::<Vec<_>>()
    );
    assert_eq!(store.list(None).await.unwrap()[0].completed_node_count, 50);

    // Same id, a different (shorter) history: the stored positions are replaced.
    store
        .save("inv", with_positions("inv", [7, 8]))
        .await
        .unwrap();
    let back = store.load("inv").await.unwrap().unwrap();
    assert_eq!(back.completed_positions.to_vec(), vec![at(7), at(8)]);
    assert_eq!(stored_rows(&db.0, "inv"), (2, 0));
    // Same length, different last position: replaced too.
    store
        .save("inv", with_positions("inv", [7, 9]))
        .await
        .unwrap();
    let back = store.load("inv").await.unwrap().unwrap();
    assert_eq!(back.completed_positions.to_vec(), vec![at(7), at(9)]);

    store.delete("inv").await.unwrap();
    assert_eq!(store.load("inv").await.unwrap(), None);
    let conn = rusqlite_conn(&db.0);
    let left: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM openarmature_checkpoint_positions",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 0);
}

/// A row written before the positions table existed (positions inside the record JSON)
/// loads as before and moves its positions into the table at its next save.
#[tokio::test]
async fn legacy_rows_keep_their_positions() {
    let db = TempDb::new("ckpt-legacy");
    let store = SqliteCheckpointer::open(&db.0).unwrap();
    let legacy = with_positions("old", 0..3);
    {
        let conn = rusqlite_conn(&db.0);
        conn.execute(
            "INSERT INTO openarmature_checkpoints
               (invocation_id, correlation_id, last_saved_at_ns, completed_node_count, record)
             VALUES ('old', 'c', 1, 3, ?1)",
            [serde_json::to_string(&legacy).unwrap()],
        )
        .unwrap();
    }
    let back = store.load("old").await.unwrap().unwrap();
    assert_eq!(
        back.completed_positions.to_vec(),
        (0..3).map(at).collect::<Vec<_>>()
    );
    let mut next = back;
    next.completed_positions.push(at(3));
    store.save("old", next).await.unwrap();
    assert_eq!(stored_rows(&db.0, "old"), (4, 0));
    let back = store.load("old").await.unwrap().unwrap();
    assert_eq!(
        back.completed_positions.to_vec(),
        (0..4).map(at).collect::<Vec<_>>()
    );
}

fn count(path: &std::path::Path, sql: &str) -> i64 {
    rusqlite_conn(path)
        .query_row(sql, [], |r| r.get(0))
        .unwrap()
}

/// A record with `positions` positions and one top-level fan-out of `width` instances.
fn with_fan_out(id: &str, positions: u64, width: usize) -> CheckpointRecord {
    let fan_out = FanOutProgress::new(vec![], "fan", vec![], width);
    with_positions(id, 0..positions).with_fan_out_progress(vec![fan_out])
}

fn completed(result: serde_json::Value) -> InstanceProgress {
    let mut p = InstanceProgress::default();
    p.state = InstanceState::Completed;
    p.result = result;
    p
}

/// §10.11 progress stored incrementally: the record row holds each fan-out without
/// its instances, every started instance has one row (a save upserts only the changed
/// ones: an unchanged instance's row is never rewritten), and the rows of a fan-out
/// that ended are deleted with its entry.
#[tokio::test]
async fn fan_out_instances_are_rows_written_when_they_change() {
    let db = TempDb::new("ckpt-instances");
    let store = SqliteCheckpointer::open(&db.0).unwrap();
    let mut live = with_fan_out("inv", 1, 500);
    store.save("inv", live.clone()).await.unwrap();
    let rows = "SELECT COUNT(*) FROM openarmature_checkpoint_instances";
    assert_eq!(count(&db.0, rows), 0, "not_started instances have no row");
    for i in 0..20 {
        live.fan_out_progress[0]
            .instances
            .set(i, completed(json!(i)));
        store.save("inv", live.clone()).await.unwrap();
    }
    assert_eq!(count(&db.0, rows), 20);
    // Tamper with instance 0's row: a later save must not rewrite it (only instance 20
    // changed), which shows saves write the changed instances only.
    rusqlite_conn(&db.0)
        .execute(
            "UPDATE openarmature_checkpoint_instances SET progress = ?1 WHERE idx = 0",
            [serde_json::to_string(&completed(json!("tampered"))).unwrap()],
        )
        .unwrap();
    live.fan_out_progress[0]
        .instances
        .set(20, completed(json!(20)));
    store.save("inv", live.clone()).await.unwrap();
    let back = store.load("inv").await.unwrap().unwrap();
    assert_eq!(
        back.fan_out_progress[0].instances[0].result,
        json!("tampered")
    );
    assert_eq!(back.fan_out_progress[0].instances[20].result, json!(20));
    assert_eq!(back.fan_out_progress[0].instances.len(), 500);
    let inline = "SELECT json_array_length(record, '$.fan_out_progress[0].instances')
                  FROM openarmature_checkpoints";
    assert_eq!(count(&db.0, inline), 0);

    live.fan_out_progress.clear();
    store.save("inv", live.clone()).await.unwrap();
    assert_eq!(count(&db.0, rows), 0);
    assert_eq!(store.load("inv").await.unwrap(), Some(live));
}

/// A row written before the instance tables existed (instances inside the record JSON)
/// loads as before, and its next save moves them into rows.
#[tokio::test]
async fn legacy_rows_keep_their_fan_out_instances() {
    let db = TempDb::new("ckpt-legacy-fan");
    let store = SqliteCheckpointer::open(&db.0).unwrap();
    let mut legacy = with_fan_out("old", 2, 3);
    legacy.fan_out_progress[0]
        .instances
        .set(1, completed(json!("one")));
    rusqlite_conn(&db.0)
        .execute(
            "INSERT INTO openarmature_checkpoints
               (invocation_id, correlation_id, last_saved_at_ns, completed_node_count, record)
             VALUES ('old', 'c', 1, 2, ?1)",
            [serde_json::to_string(&legacy).unwrap()],
        )
        .unwrap();
    let mut back = store.load("old").await.unwrap().unwrap();
    assert_eq!(back.fan_out_progress, legacy.fan_out_progress);
    back.fan_out_progress[0]
        .instances
        .set(2, completed(json!("two")));
    store.save("old", back.clone()).await.unwrap();
    let rows = "SELECT COUNT(*) FROM openarmature_checkpoint_instances";
    assert_eq!(count(&db.0, rows), 2);
    assert_eq!(store.load("old").await.unwrap(), Some(back));
}
