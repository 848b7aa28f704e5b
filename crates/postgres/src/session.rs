//! Spec: sessions §5 (SessionStore protocol), §8.1 (last-write-wins), §8.2 (optimistic
//! concurrency) — the PostgreSQL SessionStore.
//!
//! One row per session; the state is JSON text beside indexed metadata columns, so
//! `list` never reads states. Every save is one transaction whose write is a single
//! conditional statement, so the §8.2 check and the write are atomic even across
//! processes: with `expected_version = Some(0)` an `INSERT … ON CONFLICT DO NOTHING`,
//! with `Some(v)` an `UPDATE … WHERE version = v`, and with `None` an upsert that
//! bumps the counter. A write that matched no row is a `session_write_conflict`
//! naming the version actually stored.

use std::time::SystemTime;

use futures::future::BoxFuture;
use openarmature_graph::session::{
    SessionError, SessionFilter, SessionRecord, SessionStore, SessionSummary,
};
use openarmature_graph::BoxError;

use crate::backend::{from_ns, to_ns, PgBackend};
use crate::error::{db, PostgresError, StoreKind};

const STORE: StoreKind = StoreKind::Session;

/// The SQL of one store (schema-qualified once, at construction).
#[derive(Debug, Clone)]
struct Sql {
    select: String,
    upsert: String,
    insert_new: String,
    update_at: String,
    version: String,
    delete: String,
    list: String,
}

impl Sql {
    fn new(t: &str) -> Self {
        Sql {
            select: format!(
                "SELECT schema_version, version, created_at_ns, updated_at_ns, state
                 FROM {t} WHERE session_id = $1"
            ),
            upsert: format!(
                "INSERT INTO {t} AS s
                   (session_id, schema_version, version, created_at_ns, updated_at_ns, state)
                 VALUES ($1, $2, 1, $3, $3, $4)
                 ON CONFLICT (session_id) DO UPDATE SET
                   schema_version = excluded.schema_version,
                   version = s.version + 1,
                   updated_at_ns = excluded.updated_at_ns,
                   state = excluded.state
                 RETURNING version"
            ),
            insert_new: format!(
                "INSERT INTO {t}
                   (session_id, schema_version, version, created_at_ns, updated_at_ns, state)
                 VALUES ($1, $2, 1, $3, $3, $4)
                 ON CONFLICT (session_id) DO NOTHING
                 RETURNING version"
            ),
            update_at: format!(
                "UPDATE {t} SET schema_version = $2, version = version + 1,
                   updated_at_ns = $3, state = $4
                 WHERE session_id = $1 AND version = $5
                 RETURNING version"
            ),
            version: format!("SELECT version FROM {t} WHERE session_id = $1"),
            delete: format!("DELETE FROM {t} WHERE session_id = $1"),
            list: format!(
                "SELECT session_id, schema_version, version, created_at_ns, updated_at_ns
                 FROM {t}
                 WHERE ($1::bigint IS NULL OR updated_at_ns >= $1)
                   AND ($2::bigint IS NULL OR created_at_ns >= $2)
                   AND ($3::text IS NULL OR schema_version = $3)
                 ORDER BY updated_at_ns, session_id"
            ),
        }
    }
}

/// The PostgreSQL SessionStore: durable and shared, so whichever replica gets a
/// session's next message reads its latest state. Cheap to clone.
#[derive(Debug, Clone)]
pub struct PostgresSessionStore {
    backend: PgBackend,
    sql: Sql,
}

fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl PostgresSessionStore {
    pub(crate) fn new(backend: PgBackend) -> Self {
        let sql = Sql::new(&backend.table("openarmature_sessions"));
        PostgresSessionStore { backend, sql }
    }

    /// Connects with [`crate::PgConfig::new`]`(url)` defaults.
    ///
    /// # Errors
    /// As [`PgBackend::connect`].
    pub async fn connect(url: &str) -> Result<Self, PostgresError> {
        Ok(PgBackend::connect(crate::PgConfig::new(url))
            .await?
            .session_store())
    }

    /// The backend (pool and schema).
    pub fn backend(&self) -> &PgBackend {
        &self.backend
    }

    async fn load_record(&self, id: &str) -> Result<Option<SessionRecord>, PostgresError> {
        let client = self.backend.client(STORE, "load").await?;
        let err = db(STORE, "load");
        let stmt = client
            .prepare_cached(&self.sql.select)
            .await
            .map_err(&err)?;
        let Some(row) = client.query_opt(&stmt, &[&id]).await.map_err(&err)? else {
            return Ok(None);
        };
        let text: String = row.try_get(4).map_err(&err)?;
        let state = serde_json::from_str(&text).map_err(|e| PostgresError::Decode {
            store: STORE,
            operation: "load",
            key: id.to_owned(),
            reason: e.to_string(),
        })?;
        let mut record = SessionRecord::new(id, row.try_get::<_, String>(0).map_err(&err)?, state);
        record.version = to_u64(row.try_get(1).map_err(&err)?);
        record.created_at = from_ns(row.try_get(2).map_err(&err)?);
        record.updated_at = from_ns(row.try_get(3).map_err(&err)?);
        Ok(Some(record))
    }

    /// Saves; `Ok(Err(conflict))` when the §8.2 check failed.
    async fn save_record(
        &self,
        id: &str,
        record: &SessionRecord,
        expected: Option<u64>,
    ) -> Result<Result<u64, SessionError>, PostgresError> {
        let text =
            serde_json::to_string(&record.state).map_err(|source| PostgresError::Encode {
                store: STORE,
                operation: "save",
                key: id.to_owned(),
                source,
            })?;
        let now = to_ns(SystemTime::now());
        let mut client = self.backend.client(STORE, "save").await?;
        let err = db(STORE, "save");
        let tx = client.transaction().await.map_err(&err)?;
        let row = match expected {
            None => {
                let stmt = tx.prepare_cached(&self.sql.upsert).await.map_err(&err)?;
                tx.query_opt(&stmt, &[&id, &record.schema_version, &now, &text])
                    .await
            }
            Some(0) => {
                let stmt = tx
                    .prepare_cached(&self.sql.insert_new)
                    .await
                    .map_err(&err)?;
                tx.query_opt(&stmt, &[&id, &record.schema_version, &now, &text])
                    .await
            }
            Some(v) => {
                let stmt = tx.prepare_cached(&self.sql.update_at).await.map_err(&err)?;
                tx.query_opt(
                    &stmt,
                    &[&id, &record.schema_version, &now, &text, &to_i64(v)],
                )
                .await
            }
        }
        .map_err(&err)?;
        if let Some(row) = row {
            let version: i64 = row.try_get(0).map_err(&err)?;
            tx.commit().await.map_err(&err)?;
            return Ok(Ok(to_u64(version)));
        }
        let stmt = tx.prepare_cached(&self.sql.version).await.map_err(&err)?;
        let actual = tx
            .query_opt(&stmt, &[&id])
            .await
            .map_err(&err)?
            .map(|r| r.try_get::<_, i64>(0).map(to_u64))
            .transpose()
            .map_err(&err)?;
        tx.rollback().await.map_err(&err)?;
        Ok(Err(SessionError::WriteConflict {
            session_id: id.to_owned(),
            expected_version: expected.unwrap_or(0),
            actual_version: actual,
        }))
    }

    async fn delete_record(&self, id: &str) -> Result<(), PostgresError> {
        let client = self.backend.client(STORE, "delete").await?;
        let err = db(STORE, "delete");
        let stmt = client
            .prepare_cached(&self.sql.delete)
            .await
            .map_err(&err)?;
        client.execute(&stmt, &[&id]).await.map_err(&err)?;
        Ok(())
    }

    async fn list_records(
        &self,
        filter: Option<&SessionFilter>,
    ) -> Result<Vec<SessionSummary>, PostgresError> {
        let client = self.backend.client(STORE, "list").await?;
        let err = db(STORE, "list");
        let stmt = client.prepare_cached(&self.sql.list).await.map_err(&err)?;
        let updated = filter.and_then(|f| f.updated_after).map(to_ns);
        let created = filter.and_then(|f| f.created_after).map(to_ns);
        let schema = filter.and_then(|f| f.schema_version.clone());
        let rows = client
            .query(&stmt, &[&updated, &created, &schema])
            .await
            .map_err(&err)?;
        rows.iter()
            .map(|r| {
                let mut rec = SessionRecord::new(
                    r.try_get::<_, String>(0).map_err(&err)?,
                    r.try_get::<_, String>(1).map_err(&err)?,
                    serde_json::Value::Null,
                );
                rec.version = to_u64(r.try_get(2).map_err(&err)?);
                rec.created_at = from_ns(r.try_get(3).map_err(&err)?);
                rec.updated_at = from_ns(r.try_get(4).map_err(&err)?);
                Ok(SessionSummary::of(&rec))
            })
            .collect()
    }
}

fn boxed<T>(r: Result<T, PostgresError>) -> Result<T, BoxError> {
    r.map_err(|e| Box::new(e) as BoxError)
}

impl SessionStore for PostgresSessionStore {
    fn load<'a>(
        &'a self,
        session_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<SessionRecord>, BoxError>> {
        Box::pin(async move { boxed(self.load_record(session_id).await) })
    }

    fn save<'a>(
        &'a self,
        session_id: &'a str,
        record: SessionRecord,
        expected_version: Option<u64>,
    ) -> BoxFuture<'a, Result<u64, BoxError>> {
        Box::pin(async move {
            match self
                .save_record(session_id, &record, expected_version)
                .await
            {
                Ok(Ok(version)) => Ok(version),
                Ok(Err(conflict)) => Err(Box::new(conflict) as BoxError),
                Err(e) => Err(Box::new(e) as BoxError),
            }
        })
    }

    fn delete<'a>(&'a self, session_id: &'a str) -> BoxFuture<'a, Result<(), BoxError>> {
        Box::pin(async move { boxed(self.delete_record(session_id).await) })
    }

    fn list<'a>(
        &'a self,
        filter: Option<&'a SessionFilter>,
    ) -> BoxFuture<'a, Result<Vec<SessionSummary>, BoxError>> {
        Box::pin(async move { boxed(self.list_records(filter).await) })
    }
}
