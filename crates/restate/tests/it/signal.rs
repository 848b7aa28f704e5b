//! A suspended run resumed by a signal delivered through Restate: the worker that
//! ran it is SIGKILLed while it waits, the signal (addressed by signal id, resolved
//! through the paused records) resumes it on another worker.

use std::sync::Arc;
use std::time::{Duration, Instant};

use openarmature_graph::checkpoint::Checkpointer;
use openarmature_postgres::{PgBackend, PgConfig};
use openarmature_restate::{signal_coordinator, RestateClient, RestateError, Step};
use openarmature_testkit::services::unique_name;
use serde_json::json;

use crate::cluster::{Cluster, Fleet};
use crate::Servers;

pub async fn resumes_elsewhere(servers: Servers) {
    let schema = unique_name("oa_restate_signal");
    let backend = PgBackend::connect(PgConfig::new(&servers.postgres).schema(&schema))
        .await
        .unwrap();
    let store: Arc<dyn Checkpointer> = Arc::new(backend.checkpointer());
    let fleet = Fleet {
        graph: "approval",
        chunk: 1,
        concurrency: 1,
        ingress: servers.ingress.clone(),
        pg_url: servers.postgres.clone(),
        pg_schema: schema,
        mock_url: String::new(),
    };
    let mut cluster = Cluster::start(fleet, 2, &servers.haproxy, &servers.admin).await;
    let client = RestateClient::new(&servers.ingress);
    // The registered retry rule reached the server, for both services.
    for service in ["OpenArmatureGraph", "OpenArmatureInstance"] {
        let url = format!("{}/services/{service}", servers.admin);
        let registered: serde_json::Value = reqwest::get(&url).await.unwrap().json().await.unwrap();
        assert_eq!(registered["abort_timeout"], "30m", "{registered}");
        assert_eq!(registered["inactivity_timeout"], "1m", "{registered}");
        let policy = &registered["retry_policy"];
        assert_eq!(policy["initial_interval"], "100ms", "{registered}");
        assert_eq!(policy["max_interval"], "2s", "{registered}");
        assert_eq!(policy["max_attempts"], 200, "{registered}");
        assert_eq!(policy["on_max_attempts"], "Pause", "{registered}");
    }
    let key = unique_name("approval");
    let ticket = unique_name("t");
    client
        .submit(&key, &json!({ "ticket": ticket }))
        .await
        .unwrap();

    let deadline = Instant::now() + Duration::from_secs(30);
    let awaiting = loop {
        if let Some(a) = client.status(&key).await.unwrap() {
            break a;
        }
        assert!(Instant::now() < deadline, "the run never suspended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(awaiting.signal_id, format!("approve-{ticket}"));
    assert_eq!(awaiting.round, 1);

    // Who ran it: the paused record's state says.
    let graph = crate::graphs::approval(Arc::clone(&store));
    let record = graph
        .graph()
        .paused_record(&awaiting.invocation_id)
        .await
        .unwrap()
        .unwrap();
    let drafted_by = record.states[0]["drafted_by"].as_str().unwrap().to_owned();
    cluster.kill(Cluster::index(&drafted_by)).await;

    // An unknown signal id is a typed correlation failure.
    let coordinator = signal_coordinator(graph.graph().clone());
    let err = client
        .signal_id(&coordinator, "approve-nobody", &json!({"approved": true}))
        .await
        .unwrap_err();
    assert!(
        matches!(err, RestateError::NoPausedInvocation { .. }),
        "{err}"
    );

    // A payload that does not fit the state is refused; the run keeps waiting.
    let refused = client
        .signal_id(
            &coordinator,
            &awaiting.signal_id,
            &json!({"approved": "not a bool"}),
        )
        .await
        .unwrap();
    assert_eq!(refused, awaiting);
    let deadline = Instant::now() + Duration::from_secs(30);
    let awaiting = loop {
        match client.status(&key).await.unwrap() {
            Some(a) if a.round == 2 => break a,
            _ => {}
        }
        assert!(
            Instant::now() < deadline,
            "the run did not go back to waiting"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let rejected = awaiting.rejected.clone().expect("the refusal is reported");
    assert_eq!(
        rejected["category"], "suspension_resume_payload_invalid",
        "{rejected}"
    );

    let signalled = Instant::now();
    let delivered = client
        .signal_id(
            &coordinator,
            &awaiting.signal_id,
            &json!({"approved": true}),
        )
        .await
        .unwrap();
    assert_eq!(delivered, awaiting);
    assert_eq!(delivered.round, 2);
    let step = client.attach(&key).await.unwrap();
    let Step::CompletionResponse {
        state,
        invocation_id,
    } = &step
    else {
        panic!("the approval did not complete: {step:?}");
    };
    println!(
        "restate signal: suspended on {drafted_by} (killed), resumed and finished on {} {:.0} ms after the signal",
        state["finished_by"],
        signalled.elapsed().as_secs_f64() * 1000.0
    );
    assert_eq!(
        invocation_id, &awaiting.invocation_id,
        "a signal resume keeps the invocation id"
    );
    assert_eq!(state["approved"], true);
    assert_eq!(state["drafted_by"], drafted_by.as_str());
    assert_ne!(
        state["finished_by"],
        drafted_by.as_str(),
        "resumed on another worker"
    );
    assert!(client.status(&key).await.unwrap().is_none());
    // The workflow awaits nothing any more: a second signal is refused.
    let err = client
        .signal(&key, &json!({"approved": true}))
        .await
        .unwrap_err();
    assert!(matches!(err, RestateError::Rejected { .. }), "{err}");
}
