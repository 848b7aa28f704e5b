//! Spec: observability §4.4 (detached traces), §5.5.4 / §5.5.5 (LLM span opt-outs and
//! payload cap), §7 (the logger) and §11.1 (`enable_metrics` and the meter) — the
//! configuration surface of [`OtelObserver`].

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry::global::BoxedTracer;
use opentelemetry::logs::LoggerProvider;
use opentelemetry::metrics::{Meter, MeterProvider};
use opentelemetry::trace::Tracer;
use opentelemetry::InstrumentationScope;
use opentelemetry_sdk::logs::SdkLoggerProvider;

use super::metrics::Metrics;
use super::{Config, Inner, OtelObserver, Shared, INSTRUMENTATION_SCOPE};
use crate::attributes as attr;

/// Builds an [`OtelObserver`].
#[must_use]
pub struct OtelObserverBuilder {
    tracer: BoxedTracer,
    config: Config,
    enable_metrics: bool,
    meter: Option<Meter>,
}

impl std::fmt::Debug for OtelObserverBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtelObserverBuilder")
            .finish_non_exhaustive()
    }
}

impl OtelObserverBuilder {
    /// Starts a builder emitting through `tracer` (any tracer; prefer
    /// [`OtelObserver::builder`], which names the instrumentation scope).
    pub fn from_tracer<T>(tracer: T) -> Self
    where
        T: Tracer + Send + Sync + 'static,
        T::Span: Send + Sync + 'static,
    {
        OtelObserverBuilder {
            tracer: BoxedTracer::new(Box::new(tracer)),
            config: Config {
                detached_subgraphs: HashSet::new(),
                detached_fan_outs: HashSet::new(),
                subgraph_names: HashMap::new(),
                disable_llm_spans: false,
                disable_genai_semconv: false,
                disable_provider_payload: true,
                payload_byte_cap: attr::DEFAULT_PAYLOAD_BYTE_CAP,
                spec_version: crate::SPEC_VERSION.to_owned(),
                implementation_name: attr::IMPLEMENTATION.to_owned(),
                implementation_version: env!("CARGO_PKG_VERSION").to_owned(),
                close_timeout: Duration::from_secs(5),
                logger: None,
                langfuse_prompt_reference: false,
                langfuse_outputs: false,
            },
            enable_metrics: false,
            meter: None,
        }
    }

    /// Renders the subgraph node `node_name` (its name in the parent graph) in a
    /// trace of its own, linked from the parent trace's dispatch span (§4.4).
    pub fn detach_subgraph(mut self, node_name: impl Into<String>) -> Self {
        self.config.detached_subgraphs.insert(node_name.into());
        self
    }

    /// Renders each instance of the fan-out node `node_name` in a trace of its own,
    /// each linked from the fan-out node's span (§4.4).
    pub fn detach_fan_out(mut self, node_name: impl Into<String>) -> Self {
        self.config.detached_fan_outs.insert(node_name.into());
        self
    }

    /// Names the compiled subgraph the subgraph node `node_name` runs: reported as
    /// `openarmature.subgraph.name` (§5.3, otherwise `""`), and used as the name of
    /// the subgraph span at the root of a detached trace, whose outermost graph it is.
    pub fn subgraph_name(
        mut self,
        node_name: impl Into<String>,
        subgraph_name: impl Into<String>,
    ) -> Self {
        self.config
            .subgraph_names
            .insert(node_name.into(), subgraph_name.into());
        self
    }

    /// Skips `openarmature.llm.complete` spans (§5.5 opt-out); other spans are
    /// unaffected.
    pub fn disable_llm_spans(mut self, disable: bool) -> Self {
        self.config.disable_llm_spans = disable;
        self
    }

    /// Skips the `gen_ai.*` attributes and the cache attributes on LLM spans (§5.5.4).
    pub fn disable_genai_semconv(mut self, disable: bool) -> Self {
        self.config.disable_genai_semconv = disable;
        self
    }

    /// Whether provider payload stays off LLM spans (§5.5.4; default `true`). With
    /// `false`, spans carry `openarmature.llm.input.messages`,
    /// `openarmature.llm.output.content`, `openarmature.llm.output.tool_calls` and
    /// `openarmature.llm.request.extras` (canonical JSON, inline image bytes
    /// redacted, each capped per [`OtelObserverBuilder::payload_byte_cap`]).
    pub fn disable_provider_payload(mut self, disable: bool) -> Self {
        self.config.disable_provider_payload = disable;
        self
    }

    /// The per-attribute byte cap of the payload attributes (§5.5.5; default
    /// [`attr::DEFAULT_PAYLOAD_BYTE_CAP`], 64 KiB). Longer values are cut at a UTF-8
    /// boundary and end with `…[truncated, M bytes total]`.
    ///
    /// # Errors
    /// [`PayloadCapTooSmall`] below [`attr::MIN_PAYLOAD_BYTE_CAP`] (256 bytes).
    pub fn payload_byte_cap(mut self, bytes: usize) -> Result<Self, PayloadCapTooSmall> {
        if bytes < attr::MIN_PAYLOAD_BYTE_CAP {
            return Err(PayloadCapTooSmall { requested: bytes });
        }
        self.config.payload_byte_cap = bytes;
        Ok(self)
    }

    /// Correlates log records made through [`OtelObserver::log`] and emits them
    /// through a logger of `provider` (§7). Keep that provider private too.
    pub fn logger_provider(mut self, provider: &SdkLoggerProvider) -> Self {
        let scope = InstrumentationScope::builder(INSTRUMENTATION_SCOPE)
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        self.config.logger = Some(provider.logger_with_scope(scope));
        self
    }

    /// How long [`OtelObserver::invoke`] waits for the invocation's events to be
    /// delivered before closing its spans (default 5 s); spans of events delivered
    /// later still get exported, under the closed parents.
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.config.close_timeout = timeout;
        self
    }

    /// Records the §11 GenAI metrics (default `false`, the normative
    /// `enable_metrics` flag): per LLM wire attempt, an
    /// `openarmature.gen_ai.client.operation.duration` sample (with `error.type` when
    /// the attempt failed) and the reported input / output counts on
    /// `openarmature.gen_ai.client.token.usage`; per call whose active prompt declared
    /// a token budget, `openarmature.gen_ai.client.token_budget.utilization` and
    /// `.exceeded` for each bound its usage lets us evaluate (§5.5.15). Names, units
    /// and buckets are in [`attributes`](crate::attributes) (`METRIC_*`).
    ///
    /// Independent of the span flags: metrics are recorded with LLM spans disabled,
    /// and never carry payload. Measurements go to the meter of
    /// [`OtelObserverBuilder::meter_provider`]; without one (or with this flag off)
    /// no instrument is created and nothing is recorded.
    pub fn enable_metrics(mut self, enable: bool) -> Self {
        self.enable_metrics = enable;
        self
    }

    /// The meter provider the §11 instruments are created on (instrumentation scope
    /// [`INSTRUMENTATION_SCOPE`]) when [`OtelObserverBuilder::enable_metrics`] is on.
    /// Keep it private like the tracer provider: this crate never reads or sets the
    /// global meter provider.
    pub fn meter_provider<P: MeterProvider + ?Sized>(mut self, provider: &P) -> Self {
        let scope = InstrumentationScope::builder(INSTRUMENTATION_SCOPE)
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        self.meter = Some(provider.meter_with_scope(scope));
        self
    }

    /// Makes LLM spans carry the prompt's Langfuse reference (the Langfuse observer's
    /// private OTel observer only).
    pub(crate) fn langfuse_prompt_reference(mut self) -> Self {
        self.config.langfuse_prompt_reference = true;
        self
    }

    /// The Langfuse capture's private renderer: embedding spans also carry the output
    /// vectors (payload permitting), which §8.4.5 maps to the observation's `output`.
    pub(crate) fn langfuse_outputs(mut self) -> Self {
        self.config.langfuse_outputs = true;
        self
    }

    /// Builds the observer (creating the metric instruments when metrics are enabled).
    pub fn build(self) -> OtelObserver {
        let metrics = match (self.enable_metrics, &self.meter) {
            (true, Some(meter)) => Some(Metrics::new(meter)),
            _ => None,
        };
        OtelObserver {
            shared: Arc::new(Shared {
                tracer: self.tracer,
                config: self.config,
                metrics,
                inner: Mutex::new(Inner::default()),
            }),
        }
    }
}

/// A payload cap below the §5.5.5 minimum was requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("payload byte cap {requested} is below the minimum of 256 bytes (observability §5.5.5)")]
pub struct PayloadCapTooSmall {
    /// The rejected cap.
    pub requested: usize,
}
