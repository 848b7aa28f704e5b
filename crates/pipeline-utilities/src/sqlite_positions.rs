//! Spec: pipeline-utilities §10.2 / §10.3.1 — `completed_positions` of the SQLite
//! Checkpointer, stored one row per position.
//!
//! A record is a full snapshot (§10.3.1), but its positions only ever grow during a run:
//! re-encoding them inside the record at every save made the save cost grow with the run
//! (the whole list re-serialized and the whole row rewritten per node). Here the record
//! row holds everything but the positions, and a save appends only the positions the
//! store does not have yet, in the same transaction as the record's upsert. When the
//! stored prefix does not match the record's (the same invocation id re-run from the
//! start, say), the stored positions are replaced. Rows written before this table
//! existed keep their positions inside the record JSON; they are read as before and
//! moved into the table at their next save.

use openarmature_graph::checkpoint::{NodePosition, Positions, PositionsWrite};
use rusqlite::{params, Connection, OptionalExtension};

use crate::sqlite_checkpoint::SqliteCheckpointError;

/// The positions table (created on open, beside the checkpoint table).
pub(crate) const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS openarmature_checkpoint_positions (
    invocation_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    position TEXT NOT NULL,
    PRIMARY KEY (invocation_id, seq)
) WITHOUT ROWID;";

fn encode(id: &str, p: &NodePosition) -> Result<String, SqliteCheckpointError> {
    serde_json::to_string(p).map_err(|source| SqliteCheckpointError::Encode {
        invocation_id: id.to_owned(),
        source,
    })
}

/// Brings the stored positions of `id` up to `positions`: appends the new ones when the
/// stored ones are its prefix (compared by the last stored position), else replaces them
/// ([`PositionsWrite::plan`]). Run inside the save's transaction.
pub(crate) fn store(
    conn: &Connection,
    id: &str,
    positions: &Positions,
) -> Result<(), SqliteCheckpointError> {
    let newest: Option<(i64, String)> = conn
        .prepare_cached(
            "SELECT seq, position FROM openarmature_checkpoint_positions
             WHERE invocation_id = ?1 ORDER BY seq DESC LIMIT 1",
        )?
        .query_row(params![id], |row| Ok((row.get(0)?, row.get(1)?)))
        .optional()?;
    let newest = match newest {
        Some((seq, text)) => Some((
            usize::try_from(seq).unwrap_or(usize::MAX).saturating_add(1),
            decode(id, &text)?,
        )),
        None => None,
    };
    let plan = PositionsWrite::plan(positions, newest.as_ref().map(|(n, p)| (*n, p)));
    if plan.replace {
        delete(conn, id)?;
    }
    let mut insert = conn.prepare_cached(
        "INSERT INTO openarmature_checkpoint_positions (invocation_id, seq, position)
         VALUES (?1, ?2, ?3)",
    )?;
    for (offset, p) in positions.tail(plan.from).into_iter().enumerate() {
        let seq = i64::try_from(plan.from + offset).unwrap_or(i64::MAX);
        insert.execute(params![id, seq, encode(id, p)?])?;
    }
    Ok(())
}

fn decode(id: &str, text: &str) -> Result<NodePosition, SqliteCheckpointError> {
    serde_json::from_str(text).map_err(|source| SqliteCheckpointError::Decode {
        invocation_id: id.to_owned(),
        source,
    })
}

/// The stored positions of `id` in completion order, or `None` when the table has none
/// (a record written before the table existed carries its own).
pub(crate) fn load(
    conn: &Connection,
    id: &str,
) -> Result<Option<Positions>, SqliteCheckpointError> {
    let mut stmt = conn.prepare_cached(
        "SELECT position FROM openarmature_checkpoint_positions
         WHERE invocation_id = ?1 ORDER BY seq",
    )?;
    let mut rows = stmt.query(params![id])?;
    let mut out = Positions::new();
    while let Some(row) = rows.next()? {
        let text: String = row.get(0)?;
        out.push(decode(id, &text)?);
    }
    Ok((!out.is_empty()).then_some(out))
}

/// Deletes the stored positions of `id`.
pub(crate) fn delete(conn: &Connection, id: &str) -> Result<(), SqliteCheckpointError> {
    conn.execute(
        "DELETE FROM openarmature_checkpoint_positions WHERE invocation_id = ?1",
        params![id],
    )?;
    Ok(())
}
