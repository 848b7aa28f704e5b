//! Spec: pipeline-utilities §10.13 — the versioned schema migrations this crate ships
//! (`migrations/NNNN_name.sql`), applied in order, each once, in one transaction
//! under an advisory lock so concurrent processes never race.

use crate::error::{db, PostgresError, StoreKind};

/// One shipped migration.
struct Migration {
    version: i32,
    name: &'static str,
    /// SQL with `{schema}` where the schema name goes.
    sql: &'static str,
}

const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "checkpoints",
        sql: include_str!("../migrations/0001_checkpoints.sql"),
    },
    Migration {
        version: 2,
        name: "sessions",
        sql: include_str!("../migrations/0002_sessions.sql"),
    },
    Migration {
        version: 3,
        name: "paused_invocations",
        sql: include_str!("../migrations/0003_paused_invocations.sql"),
    },
    Migration {
        version: 4,
        name: "checkpoint_rows",
        sql: include_str!("../migrations/0004_checkpoint_rows.sql"),
    },
];

/// The newest version shipped.
pub(crate) fn latest() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// Brings `schema` (an already checked identifier) up to [`latest`].
pub(crate) async fn run(
    client: &mut deadpool_postgres::Object,
    schema: &str,
) -> Result<(), PostgresError> {
    let err = db(StoreKind::Setup, "migrate");
    let tx = client.transaction().await.map_err(&err)?;
    // Serializes migrators of this schema until the transaction ends.
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext($1))",
        &[&format!("openarmature:{schema}")],
    )
    .await
    .map_err(&err)?;
    tx.batch_execute(&format!(
        "CREATE SCHEMA IF NOT EXISTS {schema};
         CREATE TABLE IF NOT EXISTS {schema}.openarmature_migrations (
             version    INTEGER PRIMARY KEY,
             name       TEXT NOT NULL,
             applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
         );"
    ))
    .await
    .map_err(&err)?;
    let row = tx
        .query_one(
            &format!("SELECT COALESCE(MAX(version), 0) FROM {schema}.openarmature_migrations"),
            &[],
        )
        .await
        .map_err(&err)?;
    let current: i32 = row.try_get(0).map_err(&err)?;
    if current > latest() {
        return Err(PostgresError::SchemaTooNew {
            schema: schema.to_owned(),
            found: current,
            known: latest(),
        });
    }
    for m in MIGRATIONS.iter().filter(|m| m.version > current) {
        let failed = |source| PostgresError::Migration {
            version: m.version,
            name: m.name,
            source,
        };
        tx.batch_execute(&m.sql.replace("{schema}", schema))
            .await
            .map_err(failed)?;
        tx.execute(
            &format!(
                "INSERT INTO {schema}.openarmature_migrations (version, name) VALUES ($1, $2)"
            ),
            &[&m.version, &m.name],
        )
        .await
        .map_err(failed)?;
    }
    tx.commit().await.map_err(&err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_dense_and_every_statement_is_schema_qualified() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(usize::try_from(m.version).ok(), Some(i + 1), "{}", m.name);
            for statement in m.sql.split(';').filter(|s| s.contains("CREATE TABLE")) {
                assert!(statement.contains("{schema}."), "{}: {statement}", m.name);
            }
        }
        assert_eq!(latest(), 4);
    }
}
