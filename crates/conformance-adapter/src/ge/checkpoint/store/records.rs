//! Spec: conformance-adapter §5.6 / §6.2 — checkpoint records as fixtures see them
//! (`record_json`), and the `seeded_record` directive (register R13 for records
//! without a schema version).

use std::time::UNIX_EPOCH;

use openarmature_graph::checkpoint::{CheckpointRecord, FanOutProgress, Positions};
use serde_json::{json, Value};

use super::{SEEDED_CORRELATION, SEEDED_ID};
use crate::yaml::Y;
use crate::AdapterError;

/// A record as fixtures see it: positions without an absent `fan_out_index`,
/// `fan_out_progress` null when empty, `last_saved_at` in microseconds since the epoch.
pub(crate) fn record_json(r: &CheckpointRecord) -> Value {
    let saved_at = r
        .last_saved_at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros());
    json!({
        "invocation_id": r.invocation_id,
        "correlation_id": r.correlation_id,
        "state": r.state,
        "completed_positions": positions_json(&r.completed_positions),
        "fan_out_progress": if r.fan_out_progress.is_empty() {
            Value::Null
        } else {
            serde_json::to_value(&r.fan_out_progress).unwrap_or(Value::Null)
        },
        "parent_states": r.parent_states,
        "last_saved_at": u64::try_from(saved_at).unwrap_or(u64::MAX),
        "schema_version": r.schema_version,
    })
}

pub(crate) fn positions_json(positions: &Positions) -> Value {
    serde_json::to_value(positions).unwrap_or(Value::Null)
}

/// `seeded_record: {schema_version, state, completed_positions, parent_states}`.
pub(crate) fn seeded_record(y: &Y<'_>) -> Result<CheckpointRecord, AdapterError> {
    y.check_keys(&[
        "schema_version",
        "state",
        "completed_positions",
        "parent_states",
        "fan_out_progress",
    ])?;
    // A record without a version was written by a graph declaring none (R13).
    let version = match y.get("schema_version") {
        Some(v) => v.str()?.to_owned(),
        None => openarmature_graph::checkpoint::UNVERSIONED.to_owned(),
    };
    let mut positions = Vec::new();
    if let Some(list) = y.get("completed_positions") {
        for p in list.seq()? {
            p.check_keys(&[
                "namespace",
                "node_name",
                "step",
                "attempt_index",
                "fan_out_index",
            ])?;
            positions
                .push(serde_json::from_value(p.json()?).map_err(|e| p.invalid(e.to_string()))?);
        }
    }
    let parents = match y.get("parent_states") {
        Some(list) => list.seq()?.iter().map(Y::json).collect::<Result<_, _>>()?,
        None => Vec::new(),
    };
    // §10.11 entries, lineage elements `{namespace, fan_out_node_name, fan_out_index}`.
    let progress: Vec<FanOutProgress> = match y.get("fan_out_progress") {
        Some(list) => {
            serde_json::from_value(list.json()?).map_err(|e| list.invalid(e.to_string()))?
        }
        None => Vec::new(),
    };
    Ok(CheckpointRecord::new(
        SEEDED_ID,
        SEEDED_CORRELATION,
        y.req("state")?.json()?,
        positions,
        version,
    )
    .with_parent_states(parents)
    .with_fan_out_progress(progress))
}
