//! Spec: pipeline-utilities §10.3.1 / §10.11 — the growing parts of a PostgreSQL
//! checkpoint record, in rows of their own (migration 0004).
//!
//! A save reads what the invocation has stored (its newest position, the version of
//! each fan-out's instances), then writes only the positions added and the instances
//! changed since ([`PositionsWrite`], [`SplitInstances::writes`]); rows of fan-outs the
//! record no longer holds are deleted. Statements of one phase are pipelined on the
//! connection, so a save costs the same few round trips whatever the run's length or
//! the fan-out's width. A record saved before the migration keeps its positions and
//! instances inline; the tables then hold none of its rows and it loads as before.

use std::collections::HashMap;

use deadpool_postgres::Transaction;
use futures::future::try_join_all;
use openarmature_graph::checkpoint::{
    InstanceProgress, InstancesVersion, NodePosition, Positions, PositionsWrite, SplitInstances,
};
use tokio_postgres::types::ToSql;
use tokio_postgres::Statement;

use crate::backend::{upsert_sql, PgBackend};
use crate::error::{db, PostgresError, StoreKind};

const STORE: StoreKind = StoreKind::Checkpoint;

/// The statements, with the schema filled in.
#[derive(Debug, Clone)]
pub(crate) struct RowSql {
    newest_position: String,
    positions: String,
    insert_positions: String,
    versions: String,
    instances: String,
    upsert_instances: String,
    upsert_version: String,
    delete_positions: String,
    delete_fan_out: String,
}

fn to_db(v: u64) -> i64 {
    i64::from_ne_bytes(v.to_ne_bytes())
}

fn from_db(v: i64) -> u64 {
    u64::from_ne_bytes(v.to_ne_bytes())
}

fn encode<T: serde::Serialize>(id: &str, value: &T) -> Result<String, PostgresError> {
    serde_json::to_string(value).map_err(|source| PostgresError::Encode {
        store: STORE,
        operation: "save",
        key: id.to_owned(),
        source,
    })
}

fn decode<T: serde::de::DeserializeOwned>(id: &str, text: &str) -> Result<T, PostgresError> {
    serde_json::from_str(text).map_err(|e| PostgresError::Decode {
        store: STORE,
        operation: "load",
        key: id.to_owned(),
        reason: e.to_string(),
    })
}

/// What a save writes besides the record row, planned from what is stored.
pub(crate) struct Planned {
    positions: PositionsWrite,
    stored: HashMap<String, InstancesVersion>,
}

impl RowSql {
    pub(crate) fn new(backend: &PgBackend) -> Self {
        let p = backend.table("openarmature_checkpoint_positions");
        let f = backend.table("openarmature_checkpoint_fan_outs");
        let i = backend.table("openarmature_checkpoint_instances");
        RowSql {
            newest_position: format!(
                "SELECT seq, position FROM {p} WHERE invocation_id = $1 ORDER BY seq DESC LIMIT 1"
            ),
            positions: format!("SELECT position FROM {p} WHERE invocation_id = $1 ORDER BY seq"),
            insert_positions: format!(
                "INSERT INTO {p} (invocation_id, seq, position)
                 SELECT $1, s, t FROM UNNEST($2::bigint[], $3::text[]) AS r(s, t)"
            ),
            versions: format!(
                "SELECT fan_out_key, version_id, version_seq FROM {f} WHERE invocation_id = $1"
            ),
            instances: format!(
                "SELECT fan_out_key, idx, progress FROM {i} WHERE invocation_id = $1
                 ORDER BY fan_out_key, idx"
            ),
            upsert_instances: format!(
                "INSERT INTO {i} (invocation_id, fan_out_key, idx, progress)
                 SELECT $1, $2, x, t FROM UNNEST($3::bigint[], $4::text[]) AS r(x, t)
                 ON CONFLICT (invocation_id, fan_out_key, idx)
                 DO UPDATE SET progress = excluded.progress"
            ),
            upsert_version: upsert_sql(
                &f,
                &["invocation_id", "fan_out_key"],
                &["version_id", "version_seq"],
            ),
            delete_positions: format!("DELETE FROM {p} WHERE invocation_id = $1"),
            delete_fan_out: format!(
                "WITH gone AS (
                   DELETE FROM {f} WHERE invocation_id = $1
                     AND ($2::text IS NULL OR fan_out_key = $2))
                 DELETE FROM {i} WHERE invocation_id = $1
                   AND ($2::text IS NULL OR fan_out_key = $2)"
            ),
        }
    }

    /// Reads what `id` has stored (both queries in one round trip).
    pub(crate) async fn plan(
        &self,
        tx: &Transaction<'_>,
        id: &str,
        positions: &Positions,
    ) -> Result<Planned, PostgresError> {
        let err = db(STORE, "save");
        let (newest_stmt, versions_stmt) = futures::try_join!(
            tx.prepare_cached(&self.newest_position),
            tx.prepare_cached(&self.versions),
        )
        .map_err(&err)?;
        let by_id: [&(dyn ToSql + Sync); 1] = [&id];
        let (newest, versions) = futures::try_join!(
            tx.query_opt(&newest_stmt, &by_id),
            tx.query(&versions_stmt, &by_id),
        )
        .map_err(&err)?;
        let newest: Option<(usize, NodePosition)> = match newest {
            Some(row) => {
                let seq: i64 = row.try_get(0).map_err(&err)?;
                let text: String = row.try_get(1).map_err(&err)?;
                let count = usize::try_from(seq).unwrap_or(usize::MAX).saturating_add(1);
                Some((count, decode(id, &text)?))
            }
            None => None,
        };
        let mut stored = HashMap::new();
        for row in versions {
            let version = InstancesVersion::new(
                from_db(row.try_get(1).map_err(&err)?),
                from_db(row.try_get(2).map_err(&err)?),
            );
            stored.insert(row.try_get::<_, String>(0).map_err(&err)?, version);
        }
        Ok(Planned {
            positions: PositionsWrite::plan(positions, newest.as_ref().map(|(n, p)| (*n, p))),
            stored,
        })
    }

    /// Writes the planned rows (the deletes first, then every insert, pipelined).
    pub(crate) async fn write(
        &self,
        tx: &Transaction<'_>,
        id: &str,
        plan: &Planned,
        positions: &Positions,
        split: &SplitInstances,
    ) -> Result<(), PostgresError> {
        let err = db(STORE, "save");
        let writes = split.writes(&plan.stored);
        let (delete_positions, delete_fan_out, insert_positions, upsert_instances, upsert_version) =
            futures::try_join!(
                tx.prepare_cached(&self.delete_positions),
                tx.prepare_cached(&self.delete_fan_out),
                tx.prepare_cached(&self.insert_positions),
                tx.prepare_cached(&self.upsert_instances),
                tx.prepare_cached(&self.upsert_version),
            )
            .map_err(&err)?;
        let replaced = writes.iter().filter(|w| w.replace).map(|w| w.key);
        let gone: Vec<Option<&str>> = replaced
            .chain(split.removed(&plan.stored))
            .map(Some)
            .collect();
        let mut deletes: Vec<(&Statement, Vec<&(dyn ToSql + Sync)>)> = Vec::new();
        if plan.positions.replace {
            deletes.push((&delete_positions, vec![&id]));
        }
        for key in &gone {
            deletes.push((&delete_fan_out, vec![&id, key]));
        }
        pipelined(tx, deletes).await.map_err(&err)?;

        let new = positions.tail(plan.positions.from);
        let seqs: Vec<i64> = (0..new.len())
            .map(|k| i64::try_from(plan.positions.from + k).unwrap_or(i64::MAX))
            .collect();
        let texts = new
            .iter()
            .map(|p| encode(id, p))
            .collect::<Result<Vec<_>, _>>()?;
        let mut rows = Vec::with_capacity(writes.len());
        for w in &writes {
            let indices: Vec<i64> = w
                .instances
                .iter()
                .map(|(i, _)| i64::try_from(*i).unwrap_or(i64::MAX))
                .collect();
            let progress = w
                .instances
                .iter()
                .map(|(_, p)| encode(id, p))
                .collect::<Result<Vec<_>, _>>()?;
            rows.push((
                w.key,
                indices,
                progress,
                to_db(w.version.id),
                to_db(w.version.seq),
            ));
        }
        let mut inserts: Vec<(&Statement, Vec<&(dyn ToSql + Sync)>)> = Vec::new();
        if !seqs.is_empty() {
            inserts.push((&insert_positions, vec![&id, &seqs, &texts]));
        }
        for (key, indices, progress, vid, vseq) in &rows {
            if !indices.is_empty() {
                inserts.push((&upsert_instances, vec![&id, key, indices, progress]));
            }
            inserts.push((&upsert_version, vec![&id, key, vid, vseq]));
        }
        pipelined(tx, inserts).await.map_err(&err)?;
        Ok(())
    }

    /// The stored positions (`None` when there are none: a record saved before the
    /// migration carries its own) and instance rows per fan-out key with a stored
    /// version.
    pub(crate) async fn load(
        &self,
        tx: &Transaction<'_>,
        id: &str,
    ) -> Result<
        (
            Option<Positions>,
            HashMap<String, Vec<(usize, InstanceProgress)>>,
        ),
        PostgresError,
    > {
        let err = db(STORE, "load");
        let (p, v, i) = futures::try_join!(
            tx.prepare_cached(&self.positions),
            tx.prepare_cached(&self.versions),
            tx.prepare_cached(&self.instances),
        )
        .map_err(&err)?;
        let by_id: [&(dyn ToSql + Sync); 1] = [&id];
        let (positions, versions, instances) = futures::try_join!(
            tx.query(&p, &by_id),
            tx.query(&v, &by_id),
            tx.query(&i, &by_id),
        )
        .map_err(&err)?;
        let mut out = Positions::new();
        for row in positions {
            out.push(decode(id, &row.try_get::<_, String>(0).map_err(&err)?)?);
        }
        let mut by_key: HashMap<String, Vec<(usize, InstanceProgress)>> = HashMap::new();
        for row in versions {
            by_key.insert(row.try_get(0).map_err(&err)?, Vec::new());
        }
        for row in instances {
            let key: String = row.try_get(0).map_err(&err)?;
            let index =
                usize::try_from(row.try_get::<_, i64>(1).map_err(&err)?).unwrap_or(usize::MAX);
            let progress = decode(id, &row.try_get::<_, String>(2).map_err(&err)?)?;
            by_key.entry(key).or_default().push((index, progress));
        }
        Ok(((!out.is_empty()).then_some(out), by_key))
    }

    /// Deletes every row of `id`.
    pub(crate) async fn delete(&self, tx: &Transaction<'_>, id: &str) -> Result<(), PostgresError> {
        let err = db(STORE, "delete");
        let none: Option<&str> = None;
        let (p, f) = futures::try_join!(
            tx.prepare_cached(&self.delete_positions),
            tx.prepare_cached(&self.delete_fan_out),
        )
        .map_err(&err)?;
        let (by_id, all): ([&(dyn ToSql + Sync); 1], [&(dyn ToSql + Sync); 2]) =
            ([&id], [&id, &none]);
        futures::try_join!(tx.execute(&p, &by_id), tx.execute(&f, &all)).map_err(&err)?;
        Ok(())
    }
}

/// Runs the statements concurrently, so the driver pipelines them (one round trip).
async fn pipelined(
    tx: &Transaction<'_>,
    statements: Vec<(&Statement, Vec<&(dyn ToSql + Sync)>)>,
) -> Result<(), tokio_postgres::Error> {
    try_join_all(
        statements
            .into_iter()
            .map(|(stmt, params)| tx.execute_raw(stmt, params)),
    )
    .await
    .map(drop)
}
