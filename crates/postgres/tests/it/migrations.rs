//! The shipped migrations: applied once, concurrently safe, and a schema migrated by
//! a newer release is refused.

use openarmature_postgres::{PgBackend, PgConfig, PostgresError};
use openarmature_testkit::services::unique_name;

async fn count(backend: &PgBackend, sql: &str) -> i64 {
    let client = backend.pool().get().await.unwrap();
    client.query_one(sql, &[]).await.unwrap().get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_connects_migrate_a_fresh_schema_exactly_once() {
    let Some(url) = crate::server("concurrent_connects_migrate_a_fresh_schema_exactly_once") else {
        return;
    };
    let schema = unique_name("oa_migr");
    let connects: Vec<_> = (0..6)
        .map(|_| {
            let config = PgConfig::new(&url).schema(&schema).max_connections(2);
            tokio::spawn(PgBackend::connect(config))
        })
        .collect();
    let mut backends = Vec::new();
    for c in connects {
        backends.push(c.await.unwrap().unwrap());
    }
    let b = &backends[0];
    assert_eq!(b.schema_version(), 3);
    let applied = count(
        b,
        &format!("SELECT count(*) FROM {schema}.openarmature_migrations"),
    )
    .await;
    assert_eq!(applied, 3, "each migration recorded once");
    // A reconnect applies nothing new.
    let again = PgBackend::connect(PgConfig::new(&url).schema(&schema))
        .await
        .unwrap();
    let applied = count(
        &again,
        &format!("SELECT count(*) FROM {schema}.openarmature_migrations"),
    )
    .await;
    assert_eq!(applied, 3);

    // A newer release's migration: this one refuses the schema.
    let client = again.pool().get().await.unwrap();
    client
        .batch_execute(&format!(
            "INSERT INTO {schema}.openarmature_migrations (version, name) VALUES (99, 'future');"
        ))
        .await
        .unwrap();
    let err = PgBackend::connect(PgConfig::new(&url).schema(&schema))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            PostgresError::SchemaTooNew {
                found: 99,
                known: 3,
                ..
            }
        ),
        "{err}"
    );
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_of_the_previous_release_gains_the_paused_table() {
    let Some(url) = crate::server("a_schema_of_the_previous_release_gains_the_paused_table") else {
        return;
    };
    let schema = unique_name("oa_migr");
    let backend = PgBackend::connect(PgConfig::new(&url).schema(&schema))
        .await
        .unwrap();
    // Back to what a release shipping migrations 1 and 2 left.
    let client = backend.pool().get().await.unwrap();
    client
        .batch_execute(&format!(
            "DROP TABLE {schema}.openarmature_paused_invocations;
             DELETE FROM {schema}.openarmature_migrations WHERE version = 3;"
        ))
        .await
        .unwrap();
    let upgraded = PgBackend::connect(PgConfig::new(&url).schema(&schema))
        .await
        .unwrap();
    let versions = count(
        &upgraded,
        &format!("SELECT max(version)::bigint FROM {schema}.openarmature_migrations"),
    )
    .await;
    assert_eq!(versions, 3);
    let rows = count(
        &upgraded,
        &format!("SELECT count(*) FROM {schema}.openarmature_paused_invocations"),
    )
    .await;
    assert_eq!(rows, 0, "the table exists and is empty");
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}
