//! Spec: suspension §8.5, pipeline-utilities §10.15 — paused-invocation records in the
//! PostgreSQL Checkpointer's schema: a table of their own beside the checkpoints
//! (migration 3), so a checkpoint resume (§10.4) never loads one.
//!
//! The claim (`suspended` → `resumed`) is one conditional `UPDATE … WHERE status =
//! 'suspended' RETURNING`: under PostgreSQL's row locking, concurrent claims of one
//! row from any number of processes queue on the row, the first commits, and every
//! later one re-checks the condition against the committed row and matches nothing.
//! So one resume wins, with no transaction held open across a round trip. A claimed
//! row that does not decode is reported (`checkpoint_record_invalid`) and stays claimed:
//! it could not have been resumed either way.

use openarmature_graph::suspension::PausedRecord;

use crate::backend::{to_ns, upsert_sql, PgBackend};
use crate::error::{db, PostgresError, StoreKind};

const STORE: StoreKind = StoreKind::Checkpoint;

/// The paused-record statements of one schema.
#[derive(Debug, Clone)]
pub(crate) struct PausedSql {
    upsert: String,
    select: String,
    claim: String,
    list: String,
    delete: String,
}

impl PausedSql {
    pub(crate) fn new(backend: &PgBackend) -> Self {
        let t = backend.table("openarmature_paused_invocations");
        PausedSql {
            upsert: upsert_sql(
                &t,
                &["invocation_id"],
                &["signal_id", "status", "suspended_at_ns", "record"],
            ),
            select: format!("SELECT record, status FROM {t} WHERE invocation_id = $1"),
            claim: format!(
                "UPDATE {t} SET status = 'resumed'
                 WHERE invocation_id = $1 AND status = 'suspended'
                 RETURNING record, 'suspended'::text"
            ),
            list: format!(
                "SELECT invocation_id, record, status FROM {t}
                 WHERE status = 'suspended' AND ($1::text IS NULL OR signal_id = $1)
                 ORDER BY suspended_at_ns, invocation_id"
            ),
            delete: format!("DELETE FROM {t} WHERE invocation_id = $1"),
        }
    }
}

/// A stored row back as a record, its status taken from the column.
fn decode(
    operation: &'static str,
    id: &str,
    text: &str,
    status: &str,
) -> Result<PausedRecord, PostgresError> {
    let invalid = |reason: String| PostgresError::Decode {
        store: STORE,
        operation,
        key: id.to_owned(),
        reason,
    };
    let mut record: PausedRecord =
        serde_json::from_str(text).map_err(|e| invalid(e.to_string()))?;
    record.status = serde_json::from_value(serde_json::Value::from(status))
        .map_err(|e| invalid(format!("status `{status}`: {e}")))?;
    Ok(record)
}

/// The record of the one row `rows` may hold (`record`, `status` columns).
fn one(
    operation: &'static str,
    id: &str,
    row: Option<tokio_postgres::Row>,
) -> Result<Option<PausedRecord>, PostgresError> {
    let Some(row) = row else {
        return Ok(None);
    };
    let err = db(STORE, operation);
    let text: String = row.try_get(0).map_err(&err)?;
    let status: String = row.try_get(1).map_err(&err)?;
    decode(operation, id, &text, &status).map(Some)
}

impl PausedSql {
    pub(crate) async fn save(
        &self,
        backend: &PgBackend,
        record: &PausedRecord,
    ) -> Result<(), PostgresError> {
        const OP: &str = "save_paused";
        let text = serde_json::to_string(record).map_err(|source| PostgresError::Encode {
            store: STORE,
            operation: OP,
            key: record.invocation_id.clone(),
            source,
        })?;
        let client = backend.client(STORE, OP).await?;
        let err = db(STORE, OP);
        let stmt = client.prepare_cached(&self.upsert).await.map_err(&err)?;
        client
            .execute(
                &stmt,
                &[
                    &record.invocation_id,
                    &record.descriptor.signal_id,
                    &record.status.as_str(),
                    &to_ns(record.suspended_at),
                    &text,
                ],
            )
            .await
            .map_err(&err)?;
        Ok(())
    }

    /// `load_paused` (`claim: false`) or `claim_paused` (`claim: true`).
    pub(crate) async fn fetch(
        &self,
        backend: &PgBackend,
        id: &str,
        claim: bool,
    ) -> Result<Option<PausedRecord>, PostgresError> {
        let (op, sql) = if claim {
            ("claim_paused", &self.claim)
        } else {
            ("load_paused", &self.select)
        };
        let client = backend.client(STORE, op).await?;
        let err = db(STORE, op);
        let stmt = client.prepare_cached(sql).await.map_err(&err)?;
        let row = client.query_opt(&stmt, &[&id]).await.map_err(&err)?;
        one(op, id, row)
    }

    pub(crate) async fn list(
        &self,
        backend: &PgBackend,
        signal_id: Option<&str>,
    ) -> Result<Vec<PausedRecord>, PostgresError> {
        const OP: &str = "list_paused";
        let client = backend.client(STORE, OP).await?;
        let err = db(STORE, OP);
        let stmt = client.prepare_cached(&self.list).await.map_err(&err)?;
        let rows = client.query(&stmt, &[&signal_id]).await.map_err(&err)?;
        rows.iter()
            .map(|row| {
                let id: String = row.try_get(0).map_err(&err)?;
                let text: String = row.try_get(1).map_err(&err)?;
                let status: String = row.try_get(2).map_err(&err)?;
                decode(OP, &id, &text, &status)
            })
            .collect()
    }

    pub(crate) async fn delete(&self, backend: &PgBackend, id: &str) -> Result<(), PostgresError> {
        const OP: &str = "delete_paused";
        let client = backend.client(STORE, OP).await?;
        let err = db(STORE, OP);
        let stmt = client.prepare_cached(&self.delete).await.map_err(&err)?;
        client.execute(&stmt, &[&id]).await.map_err(&err)?;
        Ok(())
    }
}
