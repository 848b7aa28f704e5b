//! OTLP export: a private [`SdkTracerProvider`] (and, for §7, an
//! [`SdkLoggerProvider`]; for the §11 metrics, an [`SdkMeterProvider`]) with a batch
//! processor (a periodic reader for metrics) and an OTLP exporter over HTTP/protobuf
//! or gRPC.
//!
//! Configuration comes from the standard `OTEL_EXPORTER_OTLP_*` environment variables
//! (endpoint, protocol, headers, timeout, compression — signal-specific variables such
//! as `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`
//! first; the metric export interval from `OTEL_METRIC_EXPORT_INTERVAL`), and the
//! builder overrides any of them. Export runs on the batch processor's (or periodic
//! reader's) own thread, off the graph's hot path; [`SdkTracerProvider::shutdown`]
//! (and [`SdkMeterProvider::shutdown`]) flushes what is still queued.
//!
//! The providers are returned to the caller and never registered globally
//! (observability §6 *TracerProvider isolation*, §11.1).
//!
//! # Examples
//! ```no_run
//! use openarmature_observability::export::{OtlpExport, Protocol};
//! use openarmature_observability::OtelObserver;
//!
//! # fn main() -> Result<(), openarmature_observability::export::ExportError> {
//! let provider = OtlpExport::from_env()
//!     .protocol(Protocol::HttpProtobuf)
//!     .endpoint("http://collector:4318")
//!     .service_name("checkout-pipeline")
//!     .tracer_provider()?;
//! let otel = OtelObserver::builder(&provider).build();
//! // ... otel.invoke(&graph, state, options).await ...
//! provider.shutdown().ok(); // flushes queued spans
//! # let _ = otel;
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;
use std::time::Duration;

#[cfg(feature = "otlp-http")]
mod client;

#[cfg(feature = "otlp-http")]
pub use client::ReqwestBlockingClient;

#[cfg(feature = "otlp-http")]
use std::sync::Arc;

use opentelemetry_otlp::{ExporterBuildError, WithExportConfig};
use opentelemetry_sdk::logs::SdkLoggerProvider;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use opentelemetry_sdk::Resource;

/// An OTLP transport.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Protocol {
    /// Protobuf over HTTP (`http/protobuf`, port 4318 by convention).
    HttpProtobuf,
    /// gRPC (`grpc`, port 4317 by convention). The exporter must be built inside a
    /// Tokio runtime.
    Grpc,
}

impl Protocol {
    /// Parses an `OTEL_EXPORTER_OTLP_PROTOCOL` value.
    pub fn parse(value: &str) -> Option<Protocol> {
        match value.trim() {
            "http/protobuf" => Some(Protocol::HttpProtobuf),
            "grpc" => Some(Protocol::Grpc),
            _ => None,
        }
    }
}

/// Exporter construction failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The protocol named in the environment is not supported (or not compiled in).
    #[error("unsupported OTLP protocol `{0}` (expected `http/protobuf` or `grpc`)")]
    UnsupportedProtocol(String),
    /// The OTLP exporter rejected its configuration.
    #[error("cannot build the OTLP exporter: {0}")]
    Build(#[from] ExporterBuildError),
}

/// Configuration for OTLP export. Unset fields fall back to the `OTEL_EXPORTER_OTLP_*`
/// environment variables, then to the OpenTelemetry defaults.
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct OtlpExport {
    protocol: Option<Protocol>,
    endpoint: Option<String>,
    headers: HashMap<String, String>,
    timeout: Option<Duration>,
    service_name: Option<String>,
    /// The caller's OTLP/HTTP client (else a [`ReqwestBlockingClient`] per exporter).
    #[cfg(feature = "otlp-http")]
    http_client: Option<Arc<dyn opentelemetry_http::HttpClient>>,
}

const SIGNAL_PROTOCOL_VARS: [(&str, &str); 3] = [
    ("traces", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
    ("logs", "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL"),
    ("metrics", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"),
];

impl OtlpExport {
    /// Everything from the environment (what [`Default`] gives too).
    pub fn from_env() -> Self {
        OtlpExport::default()
    }

    /// The transport (else `OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL`, then
    /// `OTEL_EXPORTER_OTLP_PROTOCOL`, then HTTP/protobuf).
    pub fn protocol(mut self, protocol: Protocol) -> Self {
        self.protocol = Some(protocol);
        self
    }

    /// The collector's base URL, like `OTEL_EXPORTER_OTLP_ENDPOINT`: for HTTP the
    /// signal path (`/v1/traces`, `/v1/logs`, `/v1/metrics`) is appended.
    pub fn endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }

    /// Adds a request header (HTTP only; for gRPC use `OTEL_EXPORTER_OTLP_HEADERS`).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// The per-export timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sends OTLP/HTTP export through `client` (any OpenTelemetry
    /// [`HttpClient`](opentelemetry_http::HttpClient): your own transport, proxy or
    /// middleware) instead of a default [`ReqwestBlockingClient`]. The exporters call
    /// it from their own export threads, where no async runtime runs. The
    /// [`OtlpExport::timeout`] then applies only as far as `client` honours it.
    #[cfg(feature = "otlp-http")]
    pub fn http_client(mut self, client: impl opentelemetry_http::HttpClient + 'static) -> Self {
        self.http_client = Some(Arc::new(client));
        self
    }

    /// Sends OTLP/HTTP export through a caller-configured
    /// `reqwest::blocking::Client` (TLS roots, proxy, default headers), the reqwest
    /// version the providers use.
    #[cfg(feature = "otlp-http")]
    pub fn reqwest_client(self, client: reqwest::blocking::Client) -> Self {
        self.http_client(ReqwestBlockingClient::new(client))
    }

    /// The `service.name` resource attribute (else `OTEL_SERVICE_NAME`, …).
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into());
        self
    }

    fn resolve_protocol(&self, signal: &str) -> Result<Protocol, ExportError> {
        if let Some(p) = self.protocol {
            return Ok(p);
        }
        let signal_var = SIGNAL_PROTOCOL_VARS
            .iter()
            .find(|(s, _)| *s == signal)
            .map(|(_, v)| *v);
        for var in signal_var
            .into_iter()
            .chain(["OTEL_EXPORTER_OTLP_PROTOCOL"])
        {
            if let Ok(value) = std::env::var(var) {
                if value.trim().is_empty() {
                    continue;
                }
                return Protocol::parse(&value).ok_or(ExportError::UnsupportedProtocol(value));
            }
        }
        Ok(Protocol::HttpProtobuf)
    }

    fn resource(&self) -> Resource {
        let builder = Resource::builder();
        match &self.service_name {
            Some(name) => builder.with_service_name(name.clone()).build(),
            None => builder.build(),
        }
    }

    fn endpoint_for(&self, protocol: Protocol, path: &str) -> Option<String> {
        self.endpoint.as_ref().map(|e| match protocol {
            Protocol::HttpProtobuf => format!("{}{path}", e.trim_end_matches('/')),
            Protocol::Grpc => e.clone(),
        })
    }

    /// A private tracer provider exporting spans in batches over OTLP.
    ///
    /// # Errors
    /// [`ExportError`] when the protocol or the exporter configuration is invalid.
    pub fn tracer_provider(&self) -> Result<SdkTracerProvider, ExportError> {
        let exporter = self.span_exporter()?;
        Ok(SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(self.resource())
            .build())
    }

    /// The OTLP span exporter alone (to combine with your own processors).
    ///
    /// # Errors
    /// [`ExportError`] when the protocol or the exporter configuration is invalid.
    pub fn span_exporter(&self) -> Result<opentelemetry_otlp::SpanExporter, ExportError> {
        let protocol = self.resolve_protocol("traces")?;
        let endpoint = self.endpoint_for(protocol, "/v1/traces");
        let builder = opentelemetry_otlp::SpanExporter::builder();
        Ok(match protocol {
            #[cfg(feature = "otlp-http")]
            Protocol::HttpProtobuf => self.http(builder.with_http(), endpoint)?.build()?,
            #[cfg(feature = "otlp-grpc")]
            Protocol::Grpc => self.grpc(builder.with_tonic(), endpoint)?.build()?,
            #[allow(unreachable_patterns)]
            other => return Err(compiled_out(other)),
        })
    }

    /// A private logger provider exporting log records in batches over OTLP (§7).
    ///
    /// # Errors
    /// [`ExportError`] when the protocol or the exporter configuration is invalid.
    pub fn logger_provider(&self) -> Result<SdkLoggerProvider, ExportError> {
        let protocol = self.resolve_protocol("logs")?;
        let endpoint = self.endpoint_for(protocol, "/v1/logs");
        let builder = opentelemetry_otlp::LogExporter::builder();
        let exporter = match protocol {
            #[cfg(feature = "otlp-http")]
            Protocol::HttpProtobuf => self.http(builder.with_http(), endpoint)?.build()?,
            #[cfg(feature = "otlp-grpc")]
            Protocol::Grpc => self.grpc(builder.with_tonic(), endpoint)?.build()?,
            #[allow(unreachable_patterns)]
            other => return Err(compiled_out(other)),
        };
        Ok(SdkLoggerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(self.resource())
            .build())
    }

    /// A private meter provider exporting the §11 metrics over OTLP on a periodic
    /// reader (interval from `OTEL_METRIC_EXPORT_INTERVAL`, default 60 s; cumulative
    /// temporality). Hand it to
    /// [`OtelObserverBuilder::meter_provider`](crate::OtelObserverBuilder::meter_provider)
    /// together with `enable_metrics(true)`.
    ///
    /// # Errors
    /// [`ExportError`] when the protocol or the exporter configuration is invalid.
    pub fn meter_provider(&self) -> Result<SdkMeterProvider, ExportError> {
        let exporter = self.metric_exporter()?;
        Ok(SdkMeterProvider::builder()
            .with_periodic_exporter(exporter)
            .with_resource(self.resource())
            .build())
    }

    /// The OTLP metric exporter alone (to combine with your own reader).
    ///
    /// # Errors
    /// [`ExportError`] when the protocol or the exporter configuration is invalid.
    pub fn metric_exporter(&self) -> Result<opentelemetry_otlp::MetricExporter, ExportError> {
        let protocol = self.resolve_protocol("metrics")?;
        let endpoint = self.endpoint_for(protocol, "/v1/metrics");
        let builder = opentelemetry_otlp::MetricExporter::builder();
        Ok(match protocol {
            #[cfg(feature = "otlp-http")]
            Protocol::HttpProtobuf => self.http(builder.with_http(), endpoint)?.build()?,
            #[cfg(feature = "otlp-grpc")]
            Protocol::Grpc => self.grpc(builder.with_tonic(), endpoint)?.build()?,
            #[allow(unreachable_patterns)]
            other => return Err(compiled_out(other)),
        })
    }

    #[cfg(feature = "otlp-http")]
    fn http<B>(&self, mut builder: B, endpoint: Option<String>) -> Result<B, ExportError>
    where
        B: WithExportConfig + opentelemetry_otlp::WithHttpConfig,
    {
        builder = builder.with_protocol(opentelemetry_otlp::Protocol::HttpBinary);
        if let Some(e) = endpoint {
            builder = builder.with_endpoint(e);
        }
        if let Some(t) = self.timeout {
            builder = builder.with_timeout(t);
        }
        if !self.headers.is_empty() {
            builder = builder.with_headers(self.headers.clone());
        }
        let client = match &self.http_client {
            Some(client) => Arc::clone(client),
            None => {
                // Else `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds), else the 10 s default.
                let timeout = self
                    .timeout
                    .or_else(|| {
                        let ms = std::env::var("OTEL_EXPORTER_OTLP_TIMEOUT").ok()?;
                        ms.trim().parse().ok().map(Duration::from_millis)
                    })
                    .unwrap_or(Duration::from_secs(10));
                let client = ReqwestBlockingClient::with_timeout(timeout)
                    .map_err(|e| ExportError::Build(ExporterBuildError::InternalFailure(e)))?;
                Arc::new(client)
            }
        };
        Ok(builder.with_shared_http_client(client))
    }

    #[cfg(feature = "otlp-grpc")]
    fn grpc<B>(&self, mut builder: B, endpoint: Option<String>) -> Result<B, ExportError>
    where
        B: WithExportConfig,
    {
        builder = builder.with_protocol(opentelemetry_otlp::Protocol::Grpc);
        if let Some(e) = endpoint {
            builder = builder.with_endpoint(e);
        }
        if let Some(t) = self.timeout {
            builder = builder.with_timeout(t);
        }
        Ok(builder)
    }
}

/// The error for a protocol whose feature is off.
fn compiled_out(protocol: Protocol) -> ExportError {
    ExportError::UnsupportedProtocol(match protocol {
        Protocol::HttpProtobuf => "http/protobuf (feature `otlp-http` is off)".into(),
        Protocol::Grpc => "grpc (feature `otlp-grpc` is off)".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_protocols() {
        assert_eq!(Protocol::parse("grpc"), Some(Protocol::Grpc));
        assert_eq!(
            Protocol::parse("http/protobuf"),
            Some(Protocol::HttpProtobuf)
        );
        assert_eq!(Protocol::parse("http/json"), None);
    }

    #[test]
    fn http_endpoints_get_the_signal_path() {
        let e = OtlpExport::from_env().endpoint("http://127.0.0.1:4318/");
        assert_eq!(
            e.endpoint_for(Protocol::HttpProtobuf, "/v1/traces")
                .as_deref(),
            Some("http://127.0.0.1:4318/v1/traces")
        );
        assert_eq!(
            e.endpoint_for(Protocol::Grpc, "/v1/traces").as_deref(),
            Some("http://127.0.0.1:4318/")
        );
    }

    #[cfg(feature = "otlp-http")]
    #[test]
    fn builds_an_http_meter_provider_without_a_runtime() {
        let provider = OtlpExport::from_env()
            .protocol(Protocol::HttpProtobuf)
            .endpoint("http://127.0.0.1:9")
            .meter_provider();
        assert!(provider.is_ok());
        if let Ok(p) = provider {
            let _ = p.shutdown();
        }
    }

    #[cfg(feature = "otlp-http")]
    #[test]
    fn builds_an_http_provider_without_a_runtime() {
        let provider = OtlpExport::from_env()
            .protocol(Protocol::HttpProtobuf)
            .endpoint("http://127.0.0.1:9")
            .tracer_provider();
        assert!(provider.is_ok());
        if let Ok(p) = provider {
            let _ = p.shutdown();
        }
    }
}
