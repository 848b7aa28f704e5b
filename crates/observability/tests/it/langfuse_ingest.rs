//! The Langfuse observer end to end (observability §8, §8.9 mode b): a graph run
//! through `LangfuseObserver` with credentials, flushed to a 127.0.0.1 stand-in for the
//! Langfuse public ingestion API.

use std::sync::Arc;

use openarmature_graph::{state, GraphBuilder, InvokeOptions, NodeCtx, END};
use openarmature_observability::langfuse::{
    IngestionClient, LangfuseClient, LangfuseCredentials, LangfuseError, LangfuseObserver,
};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
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

/// Serves every request with `status`, forwarding what it received.
async fn ingestion_api(status: u16) -> (String, mpsc::UnboundedReceiver<Request>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let host = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 8192];
                loop {
                    let n = stream.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let mut headers = [httparse::EMPTY_HEADER; 32];
                    let mut req = httparse::Request::new(&mut headers);
                    let Ok(httparse::Status::Complete(head)) = req.parse(&buf) else {
                        continue;
                    };
                    let header = |name: &str| {
                        req.headers
                            .iter()
                            .find(|h| h.name.eq_ignore_ascii_case(name))
                            .map(|h| String::from_utf8_lossy(h.value).into_owned())
                            .unwrap_or_default()
                    };
                    let len: usize = header("content-length").trim().parse().unwrap_or(0);
                    if buf.len() < head + len {
                        continue;
                    }
                    let body = serde_json::from_slice(&buf[head..head + len]).unwrap_or_default();
                    let _ = tx.send((
                        req.path.unwrap_or_default().to_owned(),
                        header("authorization"),
                        body,
                    ));
                    let reply = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{{}}"
                    );
                    let _ = stream.write_all(reply.as_bytes()).await;
                    return;
                }
            });
        }
    });
    (host, rx)
}

fn graph() -> openarmature_graph::CompiledGraph<Count> {
    GraphBuilder::new(Count::default())
        .add_node("inc", |s: Arc<Count>, _: NodeCtx| async move {
            Ok(CountUpdate::default().n(s.n + 1))
        })
        .add_edge("inc", END)
        .entry("inc")
        .compile()
        .unwrap()
}

#[tokio::test]
async fn a_finished_trace_is_posted_as_one_ingestion_batch_with_basic_auth() {
    let (host, mut rx) = ingestion_api(207).await;
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
    let (host, mut rx) = ingestion_api(500).await;
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
