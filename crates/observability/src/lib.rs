//! # openarmature-observability
//!
//! Spec: observability (OpenArmature specification, pinned release v0.109.0), §3–§8
//! and §11.
//!
//! Renders graph invocations as OpenTelemetry traces, correlates log records with them,
//! records opt-in GenAI metrics, and exports all three over OTLP.
//!
//! - [`OtelObserver`]: an observer that drives span lifecycle from the engine's event
//!   queue (§6 *observer-driven*): an `openarmature.invocation` span per invocation,
//!   a span per node attempt (`openarmature.node.attempt_index`), synthesized subgraph,
//!   fan-out instance and parallel-branch dispatch spans, one
//!   `openarmature.llm.complete` span per LLM wire attempt, §4.2 status mapping with
//!   `openarmature.error.category`, detached traces (§4.4), correlation id and caller
//!   metadata on every span (§5.6), log correlation (§7), and — opt-in through
//!   [`OtelObserverBuilder::enable_metrics`] and
//!   [`OtelObserverBuilder::meter_provider`] — the §11 token-usage, duration and
//!   token-budget instruments.
//! - [`langfuse`]: the §8 Langfuse mapping — [`langfuse::LangfuseObserver`] builds
//!   Langfuse traces and observations from the same events, keeps them in memory and
//!   hands them to a caller-owned client or an ingestion-API client built from
//!   credentials.
//! - [`attributes`]: every span name, attribute key, metric instrument name and
//!   metric dimension key, as constants.
//! - [`metadata`]: the §3.4 rules for caller-supplied invocation metadata.
//! - [`payload`]: the §5.5.1 canonical JSON and §5.5.5 truncation of payload
//!   attributes.
//! - [`progress`]: [`progress::ProgressCounter`], fan-out items done / degraded / in
//!   flight counted from the events, and (feature `progress`)
//!   `progress::ProgressObserver`, the same counts as terminal progress bars.
//! - [`report`]: [`report::RunReport`], a run's events as a waterfall of node
//!   attempts, LLM wire attempts, waits and degradations, rendered as one
//!   self-contained HTML page.
//! - `export` (features `otlp-http`, on by default, and `otlp-grpc`): private OTLP
//!   tracer / logger / meter providers (HTTP/protobuf or gRPC, batch or periodic
//!   export, `OTEL_EXPORTER_OTLP_*` configuration); OTLP/HTTP goes through the
//!   workspace's one reqwest, or the caller's client (`OtlpExport::http_client`).
//!
//! **TracerProvider isolation (§6).** Nothing in this crate reads or sets the global
//! OpenTelemetry providers (tracer, logger or meter): the observer emits through the
//! providers it is given, so auto-instrumentation that writes to the global provider
//! never duplicates its spans.
//!
//! **`tracing` instead.** The feature `tracing-spans` of the engine, pipeline and LLM
//! crates opens the same spans inline as `tracing` spans with these attribute keys
//! (and `otel.name` for `tracing-opentelemetry`). Use those or this observer for the
//! same spans, not both: each would export its own copy (see the crate README).
//!
//! Implementation status per fixture lives in the workspace `conformance.toml`.

pub mod attributes;
#[cfg(any(feature = "otlp-http", feature = "otlp-grpc"))]
pub mod export;
pub mod langfuse;
pub mod metadata;
mod node_path;
mod otel;
pub mod payload;
pub mod progress;
pub mod report;

pub use otel::{
    InvokeError, OtelObserver, OtelObserverBuilder, PayloadCapTooSmall, INSTRUMENTATION_SCOPE,
    REGISTRATION_NAME,
};

/// The OpenArmature capability this crate implements.
pub const SPEC_CAPABILITY: &str = "observability";

/// The OpenArmature specification release this crate targets.
pub const SPEC_VERSION: &str = "0.109.0";

#[cfg(test)]
mod tests {
    #[test]
    fn exposes_capability_and_pinned_version() {
        assert_eq!(super::SPEC_CAPABILITY, "observability");
        assert_eq!(super::SPEC_VERSION.split('.').count(), 3);
    }
}

/// The crate README's Rust code blocks, compiled as doc tests, so its example cannot
/// rot. Exists only while collecting doc tests.
#[cfg(all(doctest, feature = "otlp-http"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
