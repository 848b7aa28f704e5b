//! The shipped migrations: applied once, concurrently safe, and a schema migrated by
//! a newer release is refused.

use openarmature_graph::checkpoint::{
    CheckpointRecord, Checkpointer, FanOutProgress, InstanceState, NodePosition,
};
use openarmature_postgres::{PgBackend, PgConfig, PostgresError};
use openarmature_testkit::services::unique_name;
use serde_json::json;

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
    assert_eq!(b.schema_version(), 4);
    let applied = count(
        b,
        &format!("SELECT count(*) FROM {schema}.openarmature_migrations"),
    )
    .await;
    assert_eq!(applied, 4, "each migration recorded once");
    // A reconnect applies nothing new.
    let again = PgBackend::connect(PgConfig::new(&url).schema(&schema))
        .await
        .unwrap();
    let applied = count(
        &again,
        &format!("SELECT count(*) FROM {schema}.openarmature_migrations"),
    )
    .await;
    assert_eq!(applied, 4);

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
                known: 4,
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

/// What a release shipping migrations 1 and 2 left: a record with its positions and
/// fan-out instances inline. Upgrading adds the paused table and the row tables, and
/// the old record loads as it was, then saves incrementally.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_of_an_older_release_upgrades_and_its_records_load() {
    let Some(url) = crate::server("a_schema_of_an_older_release_upgrades_and_its_records_load")
    else {
        return;
    };
    let schema = unique_name("oa_migr");
    let backend = PgBackend::connect(PgConfig::new(&url).schema(&schema))
        .await
        .unwrap();
    let client = backend.pool().get().await.unwrap();
    client
        .batch_execute(&format!(
            "DROP TABLE {schema}.openarmature_paused_invocations;
             DROP TABLE {schema}.openarmature_checkpoint_positions;
             DROP TABLE {schema}.openarmature_checkpoint_fan_outs;
             DROP TABLE {schema}.openarmature_checkpoint_instances;
             DELETE FROM {schema}.openarmature_migrations WHERE version >= 3;"
        ))
        .await
        .unwrap();
    let positions = (0..3)
        .map(|s| NodePosition::new(vec![], format!("n{s}"), s, 0, None))
        .collect::<Vec<_>>();
    let mut legacy = CheckpointRecord::new("old", "c", json!({"k": 1}), positions, "1")
        .with_fan_out_progress(vec![FanOutProgress::new(vec![], "fan", vec![], 4)]);
    legacy.fan_out_progress[0].instances[2].state = InstanceState::Completed;
    legacy.fan_out_progress[0].instances[2].result = json!("two");
    client
        .execute(
            &format!(
                "INSERT INTO {schema}.openarmature_checkpoints
                   (invocation_id, correlation_id, last_saved_at_ns, completed_node_count, record)
                 VALUES ('old', 'c', 1, 3, $1)"
            ),
            &[&serde_json::to_string(&legacy).unwrap()],
        )
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
    assert_eq!(versions, 4);
    let rows = count(
        &upgraded,
        &format!("SELECT count(*) FROM {schema}.openarmature_paused_invocations"),
    )
    .await;
    assert_eq!(rows, 0, "the table exists and is empty");
    let store = upgraded.checkpointer();
    let mut back = store.load("old").await.unwrap().unwrap();
    assert_eq!(back, legacy);
    back.completed_positions
        .push(NodePosition::new(vec![], "n3", 3, 0, None));
    back.fan_out_progress[0].instances[0].state = InstanceState::InFlight;
    store.save("old", back.clone()).await.unwrap();
    assert_eq!(store.load("old").await.unwrap(), Some(back));
    let stored = count(
        &upgraded,
        &format!("SELECT count(*) FROM {schema}.openarmature_checkpoint_positions"),
    )
    .await;
    assert_eq!(stored, 4, "the legacy positions moved into rows");
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}
