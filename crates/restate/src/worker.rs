//! The worker: a Restate endpoint (HTTP/2, what the Restate server pushes
//! invocations to) serving one harness's graph as the [`crate::SERVICE_NAME`]
//! workflow, and the fan-out instances a [`crate::RestateDispatcher`] sends as the
//! [`crate::INSTANCE_SERVICE_NAME`] service.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use openarmature_graph::{CompiledGraph, State};
use openarmature_harness::Harness;
use restate_sdk::endpoint::{Endpoint, ServiceOptions};
use restate_sdk::http_server::HttpServer;
use restate_sdk::service::IntoServiceDefinition;
use tokio::net::TcpListener;

use crate::error::RestateError;
use crate::instance::{runner, InstanceRunner, InstanceService};
use crate::workflow::{default_options, GraphWorkflow};

/// A harness served to Restate. Every replica of a deployment builds the same one
/// over the same durable Checkpointer (and paused-record store), so any of them can
/// continue any invocation.
pub struct Worker {
    workflow: GraphWorkflow,
    options: Option<ServiceOptions>,
    fan_outs: HashMap<String, InstanceRunner>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker").finish_non_exhaustive()
    }
}

impl Worker {
    /// Serves `harness`.
    ///
    /// # Errors
    /// [`RestateError::NoCheckpointer`] when its graph registers no Checkpointer: a
    /// durable invocation must be able to resume where it stopped.
    pub fn new<S: State>(harness: Harness<S>) -> Result<Worker, RestateError> {
        if harness.graph().checkpointer().is_none() {
            return Err(RestateError::NoCheckpointer);
        }
        Ok(Worker {
            workflow: GraphWorkflow {
                graph: Arc::new(harness),
            },
            options: None,
            fan_outs: HashMap::new(),
        })
    }

    /// Also serves the instances of the fan-out at `path` (the fan-out node's path,
    /// [`InstanceKey::fan_out`](openarmature_pipeline::dispatch::InstanceKey::fan_out):
    /// its name for a top-level node) that a [`crate::RestateDispatcher`] sends, running
    /// `subgraph` — the same subgraph the fan-out node was built with.
    #[must_use]
    pub fn fan_out<C: State>(
        mut self,
        path: impl Into<String>,
        subgraph: CompiledGraph<C>,
    ) -> Self {
        self.fan_outs.insert(path.into(), runner(subgraph));
        self
    }

    /// Options applied on top of the workflow's registered defaults (what is set here
    /// wins: timeouts, retention, the invocation retry policy; see the crate docs for
    /// the defaults and the retry rule).
    #[must_use]
    pub fn options(mut self, options: ServiceOptions) -> Self {
        self.options = Some(options);
        self
    }

    /// The Restate endpoint (to serve with another server, e.g. behind a gateway).
    pub fn endpoint(self) -> Endpoint {
        let mut definition = self
            .workflow
            .into_service_definition()
            .options(default_options());
        if let Some(options) = self.options {
            definition = definition.options(options);
        }
        let instances = InstanceService {
            fan_outs: Arc::new(self.fan_outs),
        };
        Endpoint::builder()
            .bind(definition)
            .bind(
                instances
                    .into_service_definition()
                    .options(default_options()),
            )
            .build()
    }

    /// Serves the endpoint on `listener` (HTTP/1.1 and HTTP/2 cleartext) until the
    /// process receives SIGINT / SIGTERM.
    pub async fn serve(self, listener: TcpListener) {
        HttpServer::new(self.endpoint()).serve(listener).await;
    }

    /// Like [`Worker::serve`], stopping (gracefully) when `stop` completes.
    pub async fn serve_until(self, listener: TcpListener, stop: impl Future) {
        HttpServer::new(self.endpoint())
            .serve_with_cancel(listener, stop)
            .await;
    }
}
