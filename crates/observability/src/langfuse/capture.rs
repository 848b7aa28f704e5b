//! Spec: observability §8 (the mapping consumes the §6 event stream through the same
//! span lifecycle as §4–§6) and §6 *TracerProvider isolation* — the private tracer
//! provider the Langfuse observer renders spans on before mapping them.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, Span, SpanData, SpanProcessor};

/// Finished spans, waiting for their invocation to end.
#[derive(Debug, Default, Clone)]
pub(crate) struct Captured(Arc<Mutex<Vec<SpanData>>>);

impl Captured {
    pub(crate) fn lock(&self) -> MutexGuard<'_, Vec<SpanData>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[derive(Debug)]
struct Processor(Captured);

impl SpanProcessor for Processor {
    fn on_start(&self, _span: &mut Span, _cx: &Context) {}

    fn on_end(&self, span: SpanData) {
        self.0.lock().push(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        Ok(())
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        Ok(())
    }
}

/// A tracer provider of its own (never the global one, never the OTel observer's),
/// whose finished spans land in the returned buffer.
pub(crate) fn private_provider() -> (SdkTracerProvider, Captured) {
    let captured = Captured::default();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(Processor(captured.clone()))
        .build();
    (provider, captured)
}
