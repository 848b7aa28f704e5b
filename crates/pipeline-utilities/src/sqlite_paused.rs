//! Spec: suspension §8.5 / pipeline-utilities §10.15 — paused-invocation records in
//! the SQLite checkpointer's database: a table of their own beside the checkpoints,
//! so a checkpoint resume (§10.4) never loads one. The claim (`suspended` →
//! `resumed`) runs in an immediate transaction, so two processes resuming one signal
//! resume it once.

use openarmature_graph::suspension::{PausedRecord, PausedStatus};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::sqlite_checkpoint::SqliteCheckpointError;
use crate::sqlite_db::to_ns;

/// The paused-record table, created with the checkpoint table.
pub(crate) const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS openarmature_paused_invocations (
    invocation_id TEXT PRIMARY KEY,
    signal_id TEXT NOT NULL,
    status TEXT NOT NULL,
    suspended_at_ns INTEGER NOT NULL,
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS openarmature_paused_by_signal
    ON openarmature_paused_invocations (signal_id, status)";

fn decode(id: &str, text: &str, status: &str) -> Result<PausedRecord, SqliteCheckpointError> {
    let decode_err = |source| SqliteCheckpointError::Decode {
        invocation_id: id.to_owned(),
        source,
    };
    let mut record: PausedRecord = serde_json::from_str(text).map_err(decode_err)?;
    record.status = serde_json::from_value(serde_json::Value::from(status)).map_err(decode_err)?;
    Ok(record)
}

pub(crate) fn save(conn: &Connection, record: &PausedRecord) -> Result<(), SqliteCheckpointError> {
    let text = serde_json::to_string(record).map_err(|source| SqliteCheckpointError::Encode {
        invocation_id: record.invocation_id.clone(),
        source,
    })?;
    conn.execute(
        "INSERT INTO openarmature_paused_invocations
           (invocation_id, signal_id, status, suspended_at_ns, record)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT(invocation_id) DO UPDATE SET
           signal_id = excluded.signal_id, status = excluded.status,
           suspended_at_ns = excluded.suspended_at_ns, record = excluded.record",
        params![
            record.invocation_id,
            record.descriptor.signal_id,
            record.status.as_str(),
            to_ns(record.suspended_at),
            text
        ],
    )?;
    Ok(())
}

pub(crate) fn load(
    conn: &Connection,
    id: &str,
) -> Result<Option<PausedRecord>, SqliteCheckpointError> {
    let row: Option<(String, String)> = conn
        .query_row(
            "SELECT record, status FROM openarmature_paused_invocations WHERE invocation_id = ?1",
            params![id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .optional()?;
    row.map(|(text, status)| decode(id, &text, &status))
        .transpose()
}

pub(crate) fn claim(
    conn: &mut Connection,
    id: &str,
) -> Result<Option<PausedRecord>, SqliteCheckpointError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let found = load(&tx, id)?.filter(|r| r.status == PausedStatus::Suspended);
    if found.is_some() {
        tx.execute(
            "UPDATE openarmature_paused_invocations SET status = ?2 WHERE invocation_id = ?1",
            params![id, PausedStatus::Resumed.as_str()],
        )?;
    }
    tx.commit()?;
    Ok(found)
}

pub(crate) fn list(
    conn: &Connection,
    signal_id: Option<&str>,
) -> Result<Vec<PausedRecord>, SqliteCheckpointError> {
    let mut stmt = conn.prepare(
        "SELECT invocation_id, record, status FROM openarmature_paused_invocations
         WHERE status = ?1 AND (?2 IS NULL OR signal_id = ?2) ORDER BY suspended_at_ns",
    )?;
    let rows = stmt.query_map(
        params![PausedStatus::Suspended.as_str(), signal_id],
        |row| {
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                row.get::<_, String>(2)?,
            ))
        },
    )?;
    let mut out = Vec::new();
    for row in rows {
        let (id, text, status) = row?;
        out.push(decode(&id, &text, &status)?);
    }
    Ok(out)
}

pub(crate) fn delete(conn: &Connection, id: &str) -> Result<(), SqliteCheckpointError> {
    conn.execute(
        "DELETE FROM openarmature_paused_invocations WHERE invocation_id = ?1",
        params![id],
    )?;
    Ok(())
}
