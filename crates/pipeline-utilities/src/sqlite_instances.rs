//! Spec: pipeline-utilities §10.3.1 / §10.11 — fan-out instance progress of the SQLite
//! Checkpointer, stored one row per (invocation, fan-out key, instance index).
//!
//! A run saves after every finished instance; re-encoding the whole fan-out's progress
//! inside the record made a fan-out of `n` instances cost O(n²). Here the record row
//! keeps each fan-out entry without its instances, a save upserts only the instances
//! changed since the version stored for that fan-out (see
//! [`openarmature_graph::checkpoint::Instances::changed_since`]), and the rows of a
//! fan-out the record no longer holds (it ended) are deleted in the same transaction.
//! A fan-out whose stored version is unknown (another process's run, a restarted
//! change log) is rewritten whole. Records written before these tables existed keep
//! their instances inside the record JSON and are read as before.

use std::collections::HashMap;

use openarmature_graph::checkpoint::{InstanceProgress, InstancesVersion, SplitInstances};
use rusqlite::{params, Connection};

use crate::sqlite_checkpoint::SqliteCheckpointError;

/// The fan-out and instance tables (created on open, beside the checkpoint table).
pub(crate) const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS openarmature_checkpoint_fan_outs (
    invocation_id TEXT NOT NULL,
    fan_out_key TEXT NOT NULL,
    version_id INTEGER NOT NULL,
    version_seq INTEGER NOT NULL,
    PRIMARY KEY (invocation_id, fan_out_key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS openarmature_checkpoint_instances (
    invocation_id TEXT NOT NULL,
    fan_out_key TEXT NOT NULL,
    idx INTEGER NOT NULL,
    progress TEXT NOT NULL,
    PRIMARY KEY (invocation_id, fan_out_key, idx)
) WITHOUT ROWID;";

fn to_db(v: u64) -> i64 {
    i64::from_ne_bytes(v.to_ne_bytes())
}

fn from_db(v: i64) -> u64 {
    u64::from_ne_bytes(v.to_ne_bytes())
}

fn stored_versions(
    conn: &Connection,
    id: &str,
) -> Result<HashMap<String, InstancesVersion>, SqliteCheckpointError> {
    let mut stmt = conn.prepare_cached(
        "SELECT fan_out_key, version_id, version_seq FROM openarmature_checkpoint_fan_outs
         WHERE invocation_id = ?1",
    )?;
    let rows = stmt.query_map(params![id], |row| {
        let version = InstancesVersion::new(from_db(row.get(1)?), from_db(row.get(2)?));
        Ok((row.get::<_, String>(0)?, version))
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// Brings the stored instances of `id` up to the record's `split`. Run inside the
/// save's transaction.
pub(crate) fn store(
    conn: &Connection,
    id: &str,
    split: &SplitInstances,
) -> Result<(), SqliteCheckpointError> {
    let stored = stored_versions(conn, id)?;
    for key in split.removed(&stored) {
        delete_key(conn, id, Some(key))?;
    }
    let mut upsert = conn.prepare_cached(
        "INSERT INTO openarmature_checkpoint_instances (invocation_id, fan_out_key, idx, progress)
         VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(invocation_id, fan_out_key, idx) DO UPDATE SET progress = excluded.progress",
    )?;
    for write in split.writes(&stored) {
        if write.replace {
            delete_key(conn, id, Some(write.key))?;
        }
        for (index, progress) in &write.instances {
            let text = serde_json::to_string(progress).map_err(|source| {
                SqliteCheckpointError::Encode {
                    invocation_id: id.to_owned(),
                    source,
                }
            })?;
            let index = i64::try_from(*index).unwrap_or(i64::MAX);
            upsert.execute(params![id, write.key, index, text])?;
        }
        conn.prepare_cached(
            "INSERT INTO openarmature_checkpoint_fan_outs
               (invocation_id, fan_out_key, version_id, version_seq)
             VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(invocation_id, fan_out_key) DO UPDATE SET
               version_id = excluded.version_id, version_seq = excluded.version_seq",
        )?
        .execute(params![
            id,
            write.key,
            to_db(write.version.id),
            to_db(write.version.seq)
        ])?;
    }
    Ok(())
}

/// The stored instance rows of `id`, per fan-out key with a stored version (a key
/// without rows maps to an empty list).
pub(crate) fn load(
    conn: &Connection,
    id: &str,
) -> Result<HashMap<String, Vec<(usize, InstanceProgress)>>, SqliteCheckpointError> {
    let mut out: HashMap<String, Vec<(usize, InstanceProgress)>> = stored_versions(conn, id)?
        .into_keys()
        .map(|k| (k, Vec::new()))
        .collect();
    let mut stmt = conn.prepare_cached(
        "SELECT fan_out_key, idx, progress FROM openarmature_checkpoint_instances
         WHERE invocation_id = ?1 ORDER BY fan_out_key, idx",
    )?;
    let mut rows = stmt.query(params![id])?;
    while let Some(row) = rows.next()? {
        let key: String = row.get(0)?;
        let index = usize::try_from(row.get::<_, i64>(1)?).unwrap_or(usize::MAX);
        let text: String = row.get(2)?;
        let progress =
            serde_json::from_str(&text).map_err(|source| SqliteCheckpointError::Decode {
                invocation_id: id.to_owned(),
                source,
            })?;
        out.entry(key).or_default().push((index, progress));
    }
    Ok(out)
}

/// Deletes the stored instances of `id` (of one fan-out key, or all).
pub(crate) fn delete_key(
    conn: &Connection,
    id: &str,
    key: Option<&str>,
) -> Result<(), SqliteCheckpointError> {
    for table in [
        "openarmature_checkpoint_instances",
        "openarmature_checkpoint_fan_outs",
    ] {
        conn.prepare_cached(&format!(
            "DELETE FROM {table} WHERE invocation_id = ?1 AND (?2 IS NULL OR fan_out_key = ?2)"
        ))?
        .execute(params![id, key])?;
    }
    Ok(())
}
