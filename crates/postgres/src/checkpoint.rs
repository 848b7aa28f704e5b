//! Spec: pipeline-utilities §10.1 (Checkpointer protocol), §10.3.1 (upsert storage) —
//! the PostgreSQL Checkpointer.
//!
//! One row per invocation, upserted on every save (the latest record wins), its
//! completed positions and fan-out instances in tables of their own written
//! incrementally ([`crate::checkpoint_rows`]); one transaction per save, so a record is
//! either wholly stored or not at all, durable once `save` returns (the server's
//! commit). Records
//! are the JSON text the SQLite backend stores too, so state migrations (§10.12) and
//! records moved between backends work alike. `list` filters in SQL on indexed
//! summary columns and never reads records. Paused-invocation records (suspension
//! §8.5) live in a table of their own ([`crate::paused`]).

use futures::future::BoxFuture;
use openarmature_graph::checkpoint::{
    join_instances, split_instances, CheckpointFilter, CheckpointRecord, CheckpointSummary,
    Checkpointer,
};
use openarmature_graph::suspension::PausedRecord;
use openarmature_graph::BoxError;
use tokio_postgres::types::ToSql;

use crate::backend::{from_ns, to_ns, upsert_sql, PgBackend};
use crate::checkpoint_rows::RowSql;
use crate::error::{db, PostgresError, StoreKind};
use crate::paused::PausedSql;

const STORE: StoreKind = StoreKind::Checkpoint;

/// The PostgreSQL Checkpointer: durable, shared by every process that reaches the
/// database, so a run checkpointed by one worker resumes on another. Cheap to clone.
#[derive(Debug, Clone)]
pub struct PostgresCheckpointer {
    backend: PgBackend,
    upsert: String,
    select: String,
    list: String,
    delete: String,
    rows: RowSql,
    paused: PausedSql,
}

impl PostgresCheckpointer {
    pub(crate) fn new(backend: PgBackend) -> Self {
        let t = backend.table("openarmature_checkpoints");
        PostgresCheckpointer {
            upsert: upsert_sql(
                &t,
                &["invocation_id"],
                &[
                    "correlation_id",
                    "last_saved_at_ns",
                    "completed_node_count",
                    "record",
                ],
            ),
            select: format!("SELECT record FROM {t} WHERE invocation_id = $1"),
            list: format!(
                "SELECT invocation_id, correlation_id, last_saved_at_ns, completed_node_count
                 FROM {t}
                 WHERE ($1::text IS NULL OR correlation_id = $1)
                   AND ($2::bigint IS NULL OR last_saved_at_ns >= $2)
                 ORDER BY last_saved_at_ns, invocation_id"
            ),
            delete: format!("DELETE FROM {t} WHERE invocation_id = $1"),
            rows: RowSql::new(&backend),
            paused: PausedSql::new(&backend),
            backend,
        }
    }

    /// Connects with [`crate::PgConfig::new`]`(url)` defaults.
    ///
    /// # Errors
    /// As [`PgBackend::connect`].
    pub async fn connect(url: &str) -> Result<Self, PostgresError> {
        Ok(PgBackend::connect(crate::PgConfig::new(url))
            .await?
            .checkpointer())
    }

    /// The backend (pool and schema).
    pub fn backend(&self) -> &PgBackend {
        &self.backend
    }

    async fn save_record(
        &self,
        invocation_id: &str,
        mut record: CheckpointRecord,
    ) -> Result<(), PostgresError> {
        // The positions and instances go to their own tables (only the new ones); the
        // row keeps the rest of the snapshot.
        let positions = std::mem::take(&mut record.completed_positions);
        let instances = split_instances(&mut record);
        let text = serde_json::to_string(&record).map_err(|source| PostgresError::Encode {
            store: STORE,
            operation: "save",
            key: invocation_id.to_owned(),
            source,
        })?;
        let mut client = self.backend.client(STORE, "save").await?;
        let err = db(STORE, "save");
        let tx = client.transaction().await.map_err(&err)?;
        let plan = self.rows.plan(&tx, invocation_id, &positions).await?;
        let stmt = tx.prepare_cached(&self.upsert).await.map_err(&err)?;
        let count = i64::try_from(positions.len()).unwrap_or(i64::MAX);
        let saved_at = to_ns(record.last_saved_at);
        let params: [&(dyn ToSql + Sync); 5] = [
            &invocation_id,
            &record.correlation_id,
            &saved_at,
            &count,
            &text,
        ];
        let row = tx.execute(&stmt, &params);
        let (upserted, written) = futures::join!(
            row,
            self.rows
                .write(&tx, invocation_id, &plan, &positions, &instances)
        );
        upserted.map_err(&err)?;
        written?;
        tx.commit().await.map_err(&err)
    }

    async fn load_record(
        &self,
        invocation_id: &str,
    ) -> Result<Option<CheckpointRecord>, PostgresError> {
        let mut client = self.backend.client(STORE, "load").await?;
        let err = db(STORE, "load");
        let tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(&err)?;
        let stmt = tx.prepare_cached(&self.select).await.map_err(&err)?;
        let by_id: [&(dyn ToSql + Sync); 1] = [&invocation_id];
        let (row, rows) = futures::join!(
            tx.query_opt(&stmt, &by_id),
            self.rows.load(&tx, invocation_id)
        );
        let Some(row) = row.map_err(&err)? else {
            return Ok(None);
        };
        let (positions, instances) = rows?;
        let text: String = row.try_get(0).map_err(&err)?;
        let decode = |reason: String| PostgresError::Decode {
            store: STORE,
            operation: "load",
            key: invocation_id.to_owned(),
            reason,
        };
        let mut record: CheckpointRecord =
            serde_json::from_str(&text).map_err(|e| decode(e.to_string()))?;
        if let Some(positions) = positions {
            record.completed_positions = positions;
        }
        join_instances(&mut record, instances).map_err(decode)?;
        tx.commit().await.map_err(&err)?;
        Ok(Some(record))
    }

    async fn list_records(
        &self,
        filter: Option<&CheckpointFilter>,
    ) -> Result<Vec<CheckpointSummary>, PostgresError> {
        let client = self.backend.client(STORE, "list").await?;
        let err = db(STORE, "list");
        let stmt = client.prepare_cached(&self.list).await.map_err(&err)?;
        let correlation = filter.and_then(|f| f.correlation_id.clone());
        let since = filter.and_then(|f| f.saved_since).map(to_ns);
        let rows = client
            .query(&stmt, &[&correlation, &since])
            .await
            .map_err(&err)?;
        rows.iter()
            .map(|row| {
                Ok(CheckpointSummary::new(
                    row.try_get::<_, String>(0).map_err(&err)?,
                    row.try_get::<_, String>(1).map_err(&err)?,
                    from_ns(row.try_get(2).map_err(&err)?),
                    usize::try_from(row.try_get::<_, i64>(3).map_err(&err)?).unwrap_or(0),
                ))
            })
            .collect()
    }

    async fn delete_records(&self, invocation_id: &str) -> Result<(), PostgresError> {
        let mut client = self.backend.client(STORE, "delete").await?;
        let err = db(STORE, "delete");
        let tx = client.transaction().await.map_err(&err)?;
        let stmt = tx.prepare_cached(&self.delete).await.map_err(&err)?;
        let by_id: [&(dyn ToSql + Sync); 1] = [&invocation_id];
        let (record, rows) = futures::join!(
            tx.execute(&stmt, &by_id),
            self.rows.delete(&tx, invocation_id)
        );
        record.map_err(&err)?;
        rows?;
        tx.commit().await.map_err(&err)
    }
}

fn boxed<T>(r: Result<T, PostgresError>) -> Result<T, BoxError> {
    r.map_err(|e| Box::new(e) as BoxError)
}

impl Checkpointer for PostgresCheckpointer {
    fn save<'a>(
        &'a self,
        invocation_id: &'a str,
        record: CheckpointRecord,
    ) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move { boxed(self.save_record(invocation_id, record).await) })
    }

    fn load<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, BoxError>> {
        Box::pin(async move { boxed(self.load_record(invocation_id).await) })
    }

    fn list<'a>(
        &'a self,
        filter: Option<&'a CheckpointFilter>,
    ) -> BoxFuture<'a, Result<Vec<CheckpointSummary>, BoxError>> {
        Box::pin(async move { boxed(self.list_records(filter).await) })
    }

    fn delete<'a>(&'a self, invocation_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move { boxed(self.delete_records(invocation_id).await) })
    }

    fn save_paused<'a>(&'a self, record: PausedRecord) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move { boxed(self.paused.save(&self.backend, &record).await) })
    }

    fn load_paused<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<PausedRecord>, BoxError>> {
        Box::pin(async move { boxed(self.paused.fetch(&self.backend, invocation_id, false).await) })
    }

    fn claim_paused<'a>(
        &'a self,
        invocation_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<PausedRecord>, BoxError>> {
        Box::pin(async move { boxed(self.paused.fetch(&self.backend, invocation_id, true).await) })
    }

    fn list_paused<'a>(
        &'a self,
        signal_id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Vec<PausedRecord>, BoxError>> {
        Box::pin(async move { boxed(self.paused.list(&self.backend, signal_id).await) })
    }

    fn delete_paused<'a>(&'a self, invocation_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move { boxed(self.paused.delete(&self.backend, invocation_id).await) })
    }
}
