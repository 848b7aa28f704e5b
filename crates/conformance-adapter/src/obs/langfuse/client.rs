//! Spec: observability §8.9 *Client ownership* and conformance-adapter §6.4 (the
//! provider-faithful Langfuse fake, fixture 157) — the two client modes of
//! `langfuse_client`.
//!
//! - `mode: supplied`: [`FaithfulFake`], a caller-owned client bound to a tracer
//!   provider (the global one by default) that emits each recorded observation as a
//!   `langfuse.observation.<type>` span through it, as a Langfuse v4 client would.
//! - `mode: credentials`: the observer builds its own ingestion client against
//!   [`IngestionMock`], a 127.0.0.1 stand-in for the Langfuse ingestion API; the runner
//!   flushes after the run and checks the batch arrived.

use std::sync::Arc;

use openarmature_observability::langfuse::{LangfuseClient, LangfuseTrace, Observation};
use opentelemetry::global::BoxedTracer;
use opentelemetry::trace::{Span, Tracer};
use serde_json::{json, Value};

use crate::failure::{Check, Failure};
use crate::http_mock::{MockServer, Reply};
use crate::yaml::Y;

/// A Langfuse client that emits every observation as an OTel span on its provider.
pub(crate) struct FaithfulFake {
    tracer: BoxedTracer,
}

impl LangfuseClient for FaithfulFake {
    fn record(&self, trace: &LangfuseTrace) {
        fn emit(tracer: &BoxedTracer, list: &[Observation]) {
            for o in list {
                let mut span = tracer.start(format!("langfuse.observation.{}", o.kind.as_str()));
                span.end();
                emit(tracer, &o.children);
            }
        }
        emit(&self.tracer, &trace.observations);
    }
}

/// The mock Langfuse ingestion API (answers every batch `207`).
pub(crate) struct IngestionMock {
    server: MockServer,
}

impl IngestionMock {
    /// The ingestion batches received, as JSON.
    pub(crate) fn batches(&self) -> Vec<Value> {
        self.server
            .captured()
            .into_iter()
            .filter(|c| c.path == "/api/public/ingestion")
            .filter_map(|c| c.json)
            .collect()
    }

    /// The host to configure the credentials with.
    pub(crate) fn host(&self) -> String {
        self.server.base_url().trim_end_matches("/v1").to_owned()
    }
}

/// What `langfuse_client` configured.
pub(crate) enum ClientMode {
    Supplied(Arc<FaithfulFake>),
    Credentials(IngestionMock),
}

/// Reads `langfuse_client: {mode, provider?}`.
pub(crate) async fn client_mode(case: &Y<'_>) -> Check<Option<ClientMode>> {
    let Some(c) = case.get("langfuse_client") else {
        return Ok(None);
    };
    c.check_keys(&["mode", "provider"])?;
    match c.req("mode").and_then(|m| m.str())? {
        "supplied" => {
            let provider = c.opt_str("provider")?;
            if provider.is_some_and(|p| p != "global") {
                return Err(Failure::from(
                    c.invalid("only `provider: global` is supported"),
                ));
            }
            Ok(Some(ClientMode::Supplied(Arc::new(FaithfulFake {
                tracer: opentelemetry::global::tracer("langfuse"),
            }))))
        }
        "credentials" => {
            let replies = (0..16)
                .map(|_| Reply::Http {
                    status: 207,
                    headers: Vec::new(),
                    body: Some(json!({"successes": [], "errors": []})),
                })
                .collect();
            let server = MockServer::start(replies, None)
                .await
                .map_err(|e| format!("cannot start the ingestion mock: {e}"))?;
            Ok(Some(ClientMode::Credentials(IngestionMock { server })))
        }
        other => Err(Failure::from(
            c.invalid(format!("unknown langfuse_client mode `{other}`")),
        )),
    }
}
