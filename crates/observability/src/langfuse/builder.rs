//! Spec: observability §8.4.1 (`disable_state_payload`, the trace input/output hooks),
//! §8.7 / §8.9 (the Langfuse observer's own `disable_llm_spans` /
//! `disable_provider_payload` flags, client ownership) and §4.4 (detached mode) — the
//! configuration surface of [`LangfuseObserver`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openarmature_graph::StateView;
use serde_json::Value;

use super::capture::private_provider;
use super::client::LangfuseClient;
#[cfg(feature = "langfuse-ingest")]
use super::client::LangfuseError;
#[cfg(feature = "langfuse-ingest")]
use super::ingest::{IngestionClient, LangfuseCredentials};
use super::io::IoConfig;
use super::{Inner, LangfuseObserver, Shared};
use crate::attributes as attr;
use crate::{OtelObserver, OtelObserverBuilder, PayloadCapTooSmall};

/// Builds a [`LangfuseObserver`].
#[must_use]
pub struct LangfuseObserverBuilder {
    otel: OtelObserverBuilder,
    provider: opentelemetry_sdk::trace::SdkTracerProvider,
    captured: super::capture::Captured,
    io: IoConfig,
    client: Option<Arc<dyn LangfuseClient>>,
    close_timeout: Duration,
    fan_out_subgraphs: HashMap<String, String>,
}

impl std::fmt::Debug for LangfuseObserverBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LangfuseObserverBuilder")
            .finish_non_exhaustive()
    }
}

impl Default for LangfuseObserverBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl LangfuseObserverBuilder {
    /// A builder with the defaults: provider payload and state payload off
    /// (§5.5.4 / §8.4.1), Generations on, no client (traces stay in memory).
    pub fn new() -> Self {
        let (provider, captured) = private_provider();
        LangfuseObserverBuilder {
            otel: OtelObserver::builder(&provider)
                .langfuse_prompt_reference()
                .langfuse_outputs(),
            provider,
            captured,
            io: IoConfig {
                disable_state_payload: true,
                input_hook: None,
                output_hook: None,
                payload_byte_cap: attr::DEFAULT_PAYLOAD_BYTE_CAP,
            },
            client: None,
            close_timeout: Duration::from_secs(5),
            fan_out_subgraphs: HashMap::new(),
        }
    }

    /// Detached mode (§4.4 / §8.5) for the subgraph run by node `node_name`: it
    /// becomes a Langfuse trace of its own.
    pub fn detach_subgraph(mut self, node_name: impl Into<String>) -> Self {
        self.otel = self.otel.detach_subgraph(node_name);
        self
    }

    /// Detached mode (§4.4 / §8.5) for fan-out node `node_name`: each instance becomes
    /// a Langfuse trace of its own.
    pub fn detach_fan_out(mut self, node_name: impl Into<String>) -> Self {
        self.otel = self.otel.detach_fan_out(node_name);
        self
    }

    /// The subgraph identity node `node_name` runs (`metadata.subgraph_name`).
    pub fn subgraph_name(
        mut self,
        node_name: impl Into<String>,
        subgraph: impl Into<String>,
    ) -> Self {
        self.otel = self.otel.subgraph_name(node_name, subgraph);
        self
    }

    /// The subgraph identity fan-out node `node_name` runs per instance (the instance
    /// observations' `metadata.subgraph_name`, §8.3).
    pub fn fan_out_subgraph(
        mut self,
        node_name: impl Into<String>,
        subgraph: impl Into<String>,
    ) -> Self {
        self.fan_out_subgraphs
            .insert(node_name.into(), subgraph.into());
        self
    }

    /// `disable_llm_spans` (§8.9): no Generation observations. Independent of any
    /// OTel observer's flag.
    pub fn disable_llm_spans(mut self, disable: bool) -> Self {
        self.otel = self.otel.disable_llm_spans(disable);
        self
    }

    /// `disable_provider_payload` (§8.7, default `true`): when `false`, Generations
    /// carry `input`, `output` and `metadata.request_extras`.
    pub fn disable_provider_payload(mut self, disable: bool) -> Self {
        self.otel = self.otel.disable_provider_payload(disable);
        self
    }

    /// The §5.5.5 payload byte cap for Generation payloads and trace input/output.
    ///
    /// # Errors
    /// [`PayloadCapTooSmall`] below the §5.5.5 minimum (256).
    pub fn payload_byte_cap(mut self, bytes: usize) -> Result<Self, PayloadCapTooSmall> {
        self.otel = self.otel.payload_byte_cap(bytes)?;
        self.io.payload_byte_cap = bytes;
        Ok(self)
    }

    /// `disable_state_payload` (§8.4.1, default `true`): when `false`, `trace.input` /
    /// `trace.output` are the initial / final state instead of the minimal stub.
    pub fn disable_state_payload(mut self, disable: bool) -> Self {
        self.io.disable_state_payload = disable;
        self
    }

    /// The `trace_input_from_state` hook (§8.4.1): called once per invocation with the
    /// state it starts from (on a resume, the restored checkpoint state); `None` falls
    /// through.
    pub fn trace_input_from_state<F>(mut self, hook: F) -> Self
    where
        F: Fn(&dyn StateView) -> Option<Value> + Send + Sync + 'static,
    {
        self.io.input_hook = Some(Arc::new(hook));
        self
    }

    /// The `trace_output_from_state` hook (§8.4.1): called once per invocation with
    /// the final state (also when the invocation failed); `None` falls through.
    pub fn trace_output_from_state<F>(mut self, hook: F) -> Self
    where
        F: Fn(&dyn StateView) -> Option<Value> + Send + Sync + 'static,
    {
        self.io.output_hook = Some(Arc::new(hook));
        self
    }

    /// §8.9 mode (a): a client the caller constructed and owns; the observer hands it
    /// every finished trace and never reconfigures it.
    pub fn client(mut self, client: Arc<dyn LangfuseClient>) -> Self {
        self.client = Some(client);
        self
    }

    /// §8.9 mode (b): the observer builds (and owns) an [`IngestionClient`] from
    /// `credentials` (feature `langfuse-ingest`).
    ///
    /// # Errors
    /// What [`IngestionClient::new`] reports.
    #[cfg(feature = "langfuse-ingest")]
    pub fn credentials(self, credentials: LangfuseCredentials) -> Result<Self, LangfuseError> {
        let client = IngestionClient::new(credentials)?;
        Ok(self.client(Arc::new(client)))
    }

    /// How long [`LangfuseObserver::invoke`] waits for the invocation's events after
    /// the run (default 5 s).
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.otel = self.otel.close_timeout(timeout);
        self.close_timeout = timeout;
        self
    }

    /// Builds the observer.
    pub fn build(self) -> LangfuseObserver {
        LangfuseObserver {
            shared: Arc::new(Shared {
                otel: self.otel.build(),
                _provider: self.provider,
                captured: self.captured,
                io: self.io,
                client: self.client,
                close_timeout: self.close_timeout,
                fan_out_subgraphs: self.fan_out_subgraphs,
                inner: Mutex::new(Inner::default()),
            }),
        }
    }
}
