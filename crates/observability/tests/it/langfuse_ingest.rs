//! The Langfuse observer end to end (observability §8, §8.9 mode b): a graph run
//! through `LangfuseObserver` with credentials, flushed to a 127.0.0.1 stand-in for the
//! Langfuse public ingestion API.

use std::sync::Arc;

use crate::support::single_node;
use openarmature_graph::{state, InvokeOptions, NodeCtx};
use openarmature_observability::langfuse::{
    IngestionClient, LangfuseClient, LangfuseCredentials, LangfuseError, LangfuseObserver,
};
use openarmature_testkit::{MockServer, Reply, Script};
use serde_json::Value;
use tokio::sync::mpsc;

state! {
    /// A counter.
    #[derive(Default)]
    pub struct Count => CountUpdate {
        /// The count.
        pub n: i64,
    }
}

/// One request: path, `Authorization` header, JSON body.
type Request = (String, String, Value);

/// Serves every request with `status`, forwarding what it received. The API stops
/// when the server is dropped.
async fn ingestion_api(status: u16) -> (MockServer, mpsc::UnboundedReceiver<Request>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let server = Script::handler(move |r: &openarmature_testkit::Request| {
        let authorization = r.header("authorization").unwrap_or_default().to_owned();
        let body = r.json().unwrap_or_default();
        let _ = tx.send((r.path.clone(), authorization, body));
        Reply::body(status, b"{}")
    })
    .start()
    .await
    .unwrap();
    (server, rx)
}

fn graph() -> openarmature_graph::CompiledGraph<Count> {
    single_node::<Count>("inc", |s: Arc<Count>, _: NodeCtx| async move {
        Ok(CountUpdate::default().n(s.n + 1))
    })
}

#[tokio::test]
async fn a_finished_trace_is_posted_as_one_ingestion_batch_with_basic_auth() {
    let (api, mut rx) = ingestion_api(207).await;
    let host = api.origin();
    let observer = LangfuseObserver::builder()
        .credentials(LangfuseCredentials::new(host, "pk-1", "sk-1"))
        .unwrap()
        .build();
    let options = InvokeOptions::default().invocation_id("run_abc123");
    observer
        .invoke(&graph(), Count::default(), options)
        .await
        .unwrap();
    observer.flush().await.unwrap();

    let (path, auth, body) = rx.recv().await.unwrap();
    assert_eq!(path, "/api/public/ingestion");
    assert_eq!(auth, "Basic cGstMTpzay0x", "public:secret basic auth");
    let batch = body["batch"].as_array().cloned().unwrap_or_default();
    let kinds: Vec<&str> = batch.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(kinds, ["trace-create", "span-create"]);
    let trace = &batch[0]["body"];
    assert_eq!(trace["id"], "29b50a6c08dabfeaeb1696301f4fabe1");
    assert_eq!(trace["name"], "inc");
    assert_eq!(trace["metadata"]["invocation_id"], "run_abc123");
    assert_eq!(trace["output"]["status"], "completed");
    let span = &batch[1]["body"];
    assert_eq!(span["traceId"], trace["id"]);
    assert_eq!(span["name"], "inc");
    assert_eq!(span["level"], "DEFAULT");
    assert!(span.get("parentObservationId").is_none());
    // Nothing left to send: a second flush posts nothing.
    observer.flush().await.unwrap();
    assert!(rx.try_recv().is_err());
}

#[tokio::test]
async fn a_refused_batch_is_an_error_and_is_kept_for_the_next_flush() {
    let (api, mut rx) = ingestion_api(500).await;
    let host = api.origin();
    let client = IngestionClient::new(LangfuseCredentials::new(host, "pk", "sk")).unwrap();
    let observer = LangfuseObserver::builder().build();
    observer
        .invoke(&graph(), Count::default(), InvokeOptions::default())
        .await
        .unwrap();
    let trace = observer.traces().remove(0);
    client.record(&trace);
    let err = client.flush().await.unwrap_err();
    assert!(
        matches!(err, LangfuseError::Status { status: 500, .. }),
        "{err}"
    );
    assert_eq!(err.category(), "langfuse_status");
    assert_eq!(client.pending_events(), 2, "the batch is kept");
    assert!(rx.recv().await.is_some());
}

#[test]
fn a_host_that_is_not_an_http_url_is_refused() {
    let err = IngestionClient::new(LangfuseCredentials::new("ftp://x", "pk", "sk")).unwrap_err();
    assert_eq!(err.category(), "langfuse_invalid_host");
}

#[tokio::test]
async fn a_caller_supplied_http_client_sends_the_batch() {
    let (api, mut rx) = ingestion_api(200).await;
    let host = api.origin();
    // The caller's client carries its own default header; the observer keeps it.
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        "x-tenant",
        reqwest::header::HeaderValue::from_static("acme"),
    );
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .no_proxy()
        .build()
        .unwrap();
    let client =
        IngestionClient::with_http_client(LangfuseCredentials::new(host, "pk", "sk"), http)
            .unwrap();
    let observer = LangfuseObserver::builder().client(Arc::new(client)).build();
    observer
        .invoke(&graph(), Count::default(), InvokeOptions::default())
        .await
        .unwrap();
    observer.flush().await.unwrap();
    let (path, auth, _) = rx.recv().await.unwrap();
    assert_eq!(path, "/api/public/ingestion");
    assert_eq!(
        auth, "Basic cGs6c2s=",
        "basic auth is still set per request"
    );
    let heads = api.requests();
    assert!(
        heads.iter().any(|r| r.header("x-tenant") == Some("acme")),
        "the caller's client sent it"
    );
}
