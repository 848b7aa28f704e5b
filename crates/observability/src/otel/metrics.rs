//! Spec: observability §11 (metrics: §11.1 opt-in emission, §11.2 instruments and
//! call-level retry cadence, §11.3 dimensions) and §5.5.15 (the token-budget
//! instruments).
//!
//! A projection of the typed LLM events, independent of span emission:
//!
//! - every [`LlmAttemptEvent`] (one per wire attempt) records one duration sample
//!   (carrying `error.type` when the attempt failed) and, when the attempt received a
//!   response (a completion, or a `structured_output_invalid` failure), one token-usage
//!   sample per *reported* counter (`input`, `output`; never the total);
//! - the terminal [`LlmCompletionEvent`] / [`LlmFailedEvent`] of a call whose active
//!   prompt declared a token budget records, per declared bound whose actual counter was
//!   reported, the utilization ratio and (when over the bound) one exceeded increment.
//!   A failure without a response (any category but `structured_output_invalid`) has
//!   no usage, so nothing is evaluated.
//!
//! Embedding and rerank calls (§11.2) record one duration sample per call (with
//! `error.type` from a failure event) and one input-token sample when the usage
//! reports input tokens (rerank `search_units` are not tokens); operation
//! `embeddings` / `rerank`.
//!
//! Dimensions are bounded: the operation (`chat`, `embeddings`, `rerank`), the request model and the provider
//! identifier, plus the per-instrument split; never the attempt index or the response
//! model.

use openarmature_core::vocab::llm::{
    LlmAttemptEvent, LlmAttemptOutcome, LlmCompletionEvent, LlmFailedEvent, LlmRequestSummary,
    LlmResponseSummary, LlmUsage,
};
use openarmature_graph::ObserverEvent;
use opentelemetry::metrics::{Counter, Histogram, Meter};
use opentelemetry::KeyValue;

use crate::attributes as attr;

/// The four §11.2 instruments, created once from the observer's meter.
pub(crate) struct Metrics {
    token_usage: Histogram<u64>,
    duration: Histogram<f64>,
    budget_exceeded: Counter<u64>,
    budget_utilization: Histogram<f64>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// The dimensions every observation of an LLM call carries (§11.3).
fn base_dimensions(request: &LlmRequestSummary) -> Vec<KeyValue> {
    vec![
        KeyValue::new(attr::METRIC_OPERATION, attr::OPERATION_CHAT),
        KeyValue::new(attr::GEN_AI_REQUEST_MODEL, request.model.clone()),
        KeyValue::new(attr::GEN_AI_SYSTEM, request.provider.clone()),
    ]
}

/// The dimensions of an embedding / rerank observation (§11.3).
fn retrieval_dimensions(operation: &'static str, model: &str, provider: &str) -> Vec<KeyValue> {
    vec![
        KeyValue::new(attr::METRIC_OPERATION, operation),
        KeyValue::new(attr::GEN_AI_REQUEST_MODEL, model.to_owned()),
        KeyValue::new(attr::GEN_AI_SYSTEM, provider.to_owned()),
    ]
}

fn with(base: &[KeyValue], extra: KeyValue) -> Vec<KeyValue> {
    let mut dims = Vec::with_capacity(base.len() + 1);
    dims.extend_from_slice(base);
    dims.push(extra);
    dims
}

impl Metrics {
    /// Creates the instruments on `meter`, with the §11.2 units and bucket advice.
    pub(crate) fn new(meter: &Meter) -> Self {
        Metrics {
            token_usage: meter
                .u64_histogram(attr::METRIC_TOKEN_USAGE)
                .with_description("Tokens reported by a provider call, by token type")
                .with_unit("{token}")
                .with_boundaries(attr::TOKEN_USAGE_BUCKETS.to_vec())
                .build(),
            duration: meter
                .f64_histogram(attr::METRIC_OPERATION_DURATION)
                .with_description("Wall-clock duration of one provider call attempt")
                .with_unit("s")
                .with_boundaries(attr::OPERATION_DURATION_BUCKETS.to_vec())
                .build(),
            budget_exceeded: meter
                .u64_counter(attr::METRIC_TOKEN_BUDGET_EXCEEDED)
                .with_description("Declared prompt token-budget bounds a call exceeded")
                .with_unit("{call}")
                .build(),
            budget_utilization: meter
                .f64_histogram(attr::METRIC_TOKEN_BUDGET_UTILIZATION)
                .with_description("Actual over declared tokens, per prompt token-budget bound")
                .with_unit("1")
                .with_boundaries(attr::TOKEN_BUDGET_UTILIZATION_BUCKETS.to_vec())
                .build(),
        }
    }

    /// Records what `event` contributes (other event kinds contribute nothing).
    pub(crate) fn record(&self, event: &ObserverEvent) {
        match event {
            ObserverEvent::LlmAttempt(e) => self.on_attempt(e),
            ObserverEvent::LlmCompletion(e) => self.on_completion(e),
            ObserverEvent::LlmFailed(e) => self.on_failed(e),
            // Embedding / rerank calls (§11.2): a duration per call, input tokens when
            // reported, `error.type` on failure.
            ObserverEvent::Embedding(e) => {
                let r = &e.request;
                let base = retrieval_dimensions(attr::OPERATION_EMBEDDINGS, &r.model, &r.provider);
                self.retrieval(
                    &base,
                    e.latency_ms,
                    e.outcome.usage.map(|u| u.input_tokens),
                    None,
                );
            }
            ObserverEvent::EmbeddingFailed(e) => {
                let r = &e.request;
                let base = retrieval_dimensions(attr::OPERATION_EMBEDDINGS, &r.model, &r.provider);
                self.retrieval(&base, e.latency_ms, None, Some(&e.failure.error_category));
            }
            ObserverEvent::Rerank(e) => {
                let r = &e.request;
                let base = retrieval_dimensions(attr::OPERATION_RERANK, &r.model, &r.provider);
                let tokens = e.outcome.usage.and_then(|u| u.input_tokens);
                self.retrieval(&base, e.latency_ms, tokens, None);
            }
            ObserverEvent::RerankFailed(e) => {
                let r = &e.request;
                let base = retrieval_dimensions(attr::OPERATION_RERANK, &r.model, &r.provider);
                self.retrieval(&base, e.latency_ms, None, Some(&e.failure.error_category));
            }
            _ => {}
        }
    }

    /// One wire attempt: its duration, and the token counts of its response.
    fn on_attempt(&self, e: &LlmAttemptEvent) {
        let base = base_dimensions(&e.request);
        let (response, error_category) = match &e.outcome {
            LlmAttemptOutcome::Completed(r) => (Some(&**r), None),
            LlmAttemptOutcome::Failed { failure, response } => {
                (response.as_ref(), Some(failure.error_category.as_str()))
            }
            _ => (None, None),
        };
        if let Some(ms) = e.latency_ms.filter(|ms| ms.is_finite() && *ms >= 0.0) {
            let dims = match error_category {
                Some(category) => with(&base, KeyValue::new(attr::ERROR_TYPE, category.to_owned())),
                None => base.clone(),
            };
            self.duration.record(ms / 1000.0, &dims);
        }
        if let Some(r) = response {
            self.token_usage_of(r, &base);
        }
    }

    /// One embedding / rerank call: its duration and, when reported, its input tokens.
    fn retrieval(
        &self,
        base: &[KeyValue],
        latency_ms: Option<f64>,
        input_tokens: Option<u64>,
        error_category: Option<&str>,
    ) {
        if let Some(ms) = latency_ms.filter(|ms| ms.is_finite() && *ms >= 0.0) {
            let dims = match error_category {
                Some(category) => with(base, KeyValue::new(attr::ERROR_TYPE, category.to_owned())),
                None => base.to_vec(),
            };
            self.duration.record(ms / 1000.0, &dims);
        }
        if let Some(count) = input_tokens {
            let dims = with(base, KeyValue::new(attr::METRIC_TOKEN_TYPE, "input"));
            self.token_usage.record(count, &dims);
        }
    }

    fn token_usage_of(&self, r: &LlmResponseSummary, base: &[KeyValue]) {
        for (token_type, count) in [
            ("input", r.usage.prompt_tokens),
            ("output", r.usage.completion_tokens),
        ] {
            if let Some(count) = count {
                let dims = with(base, KeyValue::new(attr::METRIC_TOKEN_TYPE, token_type));
                self.token_usage.record(count, &dims);
            }
        }
    }

    fn on_completion(&self, e: &LlmCompletionEvent) {
        self.budget_of(&e.request, &e.response.usage);
    }

    fn on_failed(&self, e: &LlmFailedEvent) {
        // Only a failure that carries the response (structured_output_invalid) has
        // usage to compare against.
        if let Some(r) = &e.response {
            self.budget_of(&e.request, &r.usage);
        }
    }

    /// §5.5.15 / §11.2: per evaluable declared bound, the utilization ratio (skipped
    /// for a zero bound, where it is undefined) and an exceeded increment when the
    /// actual count is strictly over the bound.
    fn budget_of(&self, request: &LlmRequestSummary, usage: &LlmUsage) {
        let Some(budget) = request.token_budget() else {
            return;
        };
        let bounds = budget.bounds(usage);
        if bounds.is_empty() {
            return;
        }
        let base = base_dimensions(request);
        for b in bounds {
            let kind = b.kind.as_str();
            let dims = with(&base, KeyValue::new(attr::METRIC_TOKEN_BUDGET_KIND, kind));
            if b.max > 0 {
                self.budget_utilization
                    .record(b.actual as f64 / b.max as f64, &dims);
            }
            if b.exceeded() {
                self.budget_exceeded.add(1, &dims);
            }
        }
    }
}
