//! A collector stand-in for the OTLP/HTTP tests: the workspace's scripted mock server
//! (`openarmature_testkit`, keep-alive) decodes each protobuf body as `M` (e.g.
//! `ExportTraceServiceRequest`, `ExportMetricsServiceRequest`) and forwards it with
//! its path, answering `200` with an empty body.

use openarmature_testkit::{MockServer, Reply, Request, Script};
use tokio::sync::mpsc;

/// Starts a collector; every request body that decodes as `M` arrives on the
/// receiver with its path. The collector stops when the server is dropped.
pub async fn collector<M>() -> (MockServer, mpsc::UnboundedReceiver<(String, M)>)
where
    M: prost::Message + Default + Send + 'static,
{
    let (tx, rx) = mpsc::unbounded_channel();
    let server = Script::handler(move |request: &Request| {
        if let Ok(message) = M::decode(request.body.as_slice()) {
            let _ = tx.send((request.path.clone(), message));
        }
        Reply::body(200, b"").header("Content-Type", "application/x-protobuf")
    })
    .keep_alive()
    .start()
    .await
    .expect("collector");
    (server, rx)
}
