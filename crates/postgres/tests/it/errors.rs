//! Bad input and unreachable servers are typed errors with the spec's categories.

use std::time::Duration;

use openarmature_graph::checkpoint::{CheckpointRecord, Checkpointer};
use openarmature_graph::session::{SessionRecord, SessionStore};
use openarmature_postgres::{PgBackend, PgConfig, PostgresError, CHECKPOINT_BACKEND_UNAVAILABLE};
use openarmature_testkit::services::unique_name;
use serde_json::json;

#[tokio::test]
async fn bad_configuration_is_refused_before_connecting() {
    let err =
        PgBackend::connect(PgConfig::new("postgres://u@127.0.0.1/db").schema("Robert'); DROP"))
            .await
            .unwrap_err();
    assert!(matches!(err, PostgresError::InvalidConfig { .. }), "{err}");
    let err = PgBackend::connect(PgConfig::new("postgres://u@127.0.0.1:notaport/db"))
        .await
        .unwrap_err();
    assert!(matches!(err, PostgresError::InvalidConfig { .. }), "{err}");
}

#[tokio::test]
async fn an_unreachable_server_is_a_typed_transient_error() {
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    let config = PgConfig::new("postgres://u@127.0.0.1:1/db").timeout(Duration::from_secs(2));
    let err = PgBackend::connect(config).await.unwrap_err();
    assert!(matches!(err, PostgresError::Pool { .. }), "{err}");
    assert_eq!(err.category(), CHECKPOINT_BACKEND_UNAVAILABLE);
    assert!(err.is_transient());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_rows_are_typed_errors() {
    let Some(url) = crate::server("unreadable_rows_are_typed_errors") else {
        return;
    };
    let schema = unique_name("oa_err");
    let backend = PgBackend::connect(PgConfig::new(&url).schema(&schema))
        .await
        .unwrap();
    let checkpoints = backend.checkpointer();
    let sessions = backend.session_store();
    checkpoints
        .save(
            "inv",
            CheckpointRecord::new("inv", "c", json!({}), Vec::new(), "1"),
        )
        .await
        .unwrap();
    sessions
        .save("s", SessionRecord::new("s", "v", json!({})), None)
        .await
        .unwrap();
    let client = backend.pool().get().await.unwrap();
    client
        .batch_execute(&format!(
            "UPDATE {schema}.openarmature_checkpoints SET record = '{{not json';
             UPDATE {schema}.openarmature_sessions SET state = 'nope';"
        ))
        .await
        .unwrap();
    let err = checkpoints.load("inv").await.unwrap_err();
    let typed = err.downcast_ref::<PostgresError>().unwrap();
    assert_eq!(typed.category().as_str(), "checkpoint_record_invalid");
    let err = sessions.load("s").await.unwrap_err();
    let typed = err.downcast_ref::<PostgresError>().unwrap();
    assert_eq!(typed.category().as_str(), "session_load_failed");
    // A paused row that is not a record: load, claim and list report it, typed.
    client
        .batch_execute(&format!(
            "INSERT INTO {schema}.openarmature_paused_invocations
               (invocation_id, signal_id, status, suspended_at_ns, record)
             VALUES ('p', 'sig', 'suspended', 1, '[1, 2]');"
        ))
        .await
        .unwrap();
    for err in [
        checkpoints.load_paused("p").await.unwrap_err(),
        checkpoints.list_paused(Some("sig")).await.unwrap_err(),
        checkpoints.claim_paused("p").await.unwrap_err(),
    ] {
        let typed = err.downcast_ref::<PostgresError>().unwrap();
        assert!(matches!(typed, PostgresError::Decode { .. }), "{typed}");
        assert_eq!(typed.category().as_str(), "checkpoint_record_invalid");
    }

    // A statement failing mid-save (the table is gone) is a save failure.
    client
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
    let err = checkpoints
        .save(
            "inv",
            CheckpointRecord::new("inv", "c", json!({}), Vec::new(), "1"),
        )
        .await
        .unwrap_err();
    let typed = err.downcast_ref::<PostgresError>().unwrap();
    assert_eq!(typed.category().as_str(), "checkpoint_save_failed");
    let err = sessions
        .save("s", SessionRecord::new("s", "v", json!({})), Some(1))
        .await
        .unwrap_err();
    let typed = err.downcast_ref::<PostgresError>().unwrap();
    assert_eq!(typed.category().as_str(), "session_save_failed");
}
