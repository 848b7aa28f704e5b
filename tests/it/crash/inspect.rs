//! What the database holds after a process died: every row decodes and agrees with its
//! summary columns, the fan-out progress is well-formed, and which LLM calls the latest
//! record marks complete (those must never be sent again).

use std::collections::BTreeSet;
use std::path::Path;
use std::time::UNIX_EPOCH;

use openarmature::graph::checkpoint::{CheckpointRecord, Checkpointer, InstanceState};

use super::pipeline::{item_key, ITEMS};

/// The database after one process.
pub struct Snapshot {
    /// Checkpoint rows (one per process that saved).
    pub rows: usize,
    /// The newest record of the job.
    pub latest: Option<CheckpointRecord>,
    /// Request keys the latest record marks complete.
    pub done: BTreeSet<String>,
}

fn ns(t: std::time::SystemTime) -> u128 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}

/// `PRAGMA integrity_check` on the SQLite file: `ok`, or the test fails with SQLite's
/// findings.
pub fn sqlite_integrity(path: &Path) {
    let conn = rusqlite::Connection::open(path).expect("open the checkpoint database");
    let findings: Vec<String> = conn
        .prepare("PRAGMA integrity_check")
        .and_then(|mut s| {
            s.query_map([], |row| row.get::<_, String>(0))?
                .collect::<Result<_, _>>()
        })
        .expect("integrity_check runs");
    assert_eq!(findings, ["ok"], "the SQLite database is corrupt");
}

/// Reads every row of `store` and checks it; every row belongs to `correlation`.
pub async fn inspect(store: &dyn Checkpointer, correlation: &str) -> Snapshot {
    let summaries = store.list(None).await.expect("list the checkpoints");
    let mut records = Vec::new();
    for s in &summaries {
        let record = store
            .load(&s.invocation_id)
            .await
            .unwrap_or_else(|e| panic!("the record of {} does not decode: {e}", s.invocation_id))
            .unwrap_or_else(|| panic!("listed record {} does not load", s.invocation_id));
        assert_eq!(record.invocation_id, s.invocation_id);
        assert_eq!(
            record.correlation_id, correlation,
            "one job, one correlation"
        );
        assert_eq!(s.correlation_id, correlation, "summary column vs record");
        assert_eq!(
            s.completed_node_count,
            record.completed_positions.len(),
            "completed_node_count column vs record of {}",
            s.invocation_id
        );
        assert_eq!(
            ns(s.last_saved_at) / 1000,
            ns(record.last_saved_at) / 1000,
            "last_saved_at column vs record of {}",
            s.invocation_id
        );
        for entry in &record.fan_out_progress {
            assert_eq!(entry.fan_out_node_name, "extract_all");
            assert_eq!(
                (entry.instance_count, entry.instances.len()),
                (ITEMS, ITEMS)
            );
            for (i, instance) in entry.instances.iter().enumerate() {
                if instance.state == InstanceState::Completed {
                    assert!(
                        !instance.result_is_error,
                        "instance {i} failed: {instance:?}"
                    );
                    assert_eq!(instance.result["key"], item_key(i), "instance {i}'s slot");
                } else {
                    assert!(!instance.result_is_error);
                }
            }
        }
        records.push(record);
    }
    let latest = records.into_iter().max_by_key(|r| ns(r.last_saved_at));
    let done = latest.as_ref().map(done_keys).unwrap_or_default();
    Snapshot {
        rows: summaries.len(),
        latest,
        done,
    }
}

/// The request keys `record` marks complete: the top-level LLM nodes it lists, and
/// every item when `extract_all` completed, else its completed instances.
fn done_keys(record: &CheckpointRecord) -> BTreeSet<String> {
    let top = |name: &str| {
        record
            .completed_positions
            .iter()
            .any(|p| p.namespace.is_empty() && p.node_name == name)
    };
    let mut done = BTreeSet::new();
    for name in ["outline", "summarize"] {
        if top(name) {
            done.insert(name.to_owned());
        }
    }
    if top("extract_all") {
        done.extend((0..ITEMS).map(item_key));
    }
    for entry in &record.fan_out_progress {
        for (i, instance) in entry.instances.iter().enumerate() {
            if instance.state == InstanceState::Completed {
                done.insert(item_key(i));
            }
        }
    }
    done
}
