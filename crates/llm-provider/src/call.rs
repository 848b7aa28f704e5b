//! Spec: llm-provider §7.1 *Call-level retry* (the loop, the adaptive extensions,
//! per-attempt reporting) and graph-engine §6 (the typed LLM events).
//!
//! One `complete()` call mints a `call_id`, takes its logical call id (extension
//! 0001: the calling node execution's step and the call's ordinal in the node
//! attempt, so a node-level retry re-issuing it keeps the id) and runs attempts
//! `0..max_attempts`:
//!
//! 1. attempt *i* sends the working transcript (the caller's messages plus any reask
//!    pairs) with the effective config of attempt *i*;
//! 2. the attempt is reported: to the request's [`AttemptObserver`], and, inside a
//!    node, as an [`LlmAttemptEvent`] (attempt index, retry reason, outcome);
//! 3. success returns; an error is retried when attempts remain and either the
//!    request has a reask builder and the error is `structured_output_invalid`
//!    (reason `reask`: the pair is appended) or the classifier retries it (reason
//!    `transient`: nothing is appended). Otherwise it propagates.
//!
//! The decision sequence is the shared loop `openarmature_pipeline::retry::drive` (the one
//! `RetryMiddleware` runs): before each retry the backoff decides (it may give up), a
//! transient retry spends a budget token, `on_retry` fires, then the backoff sleep
//! (through the config's sleeper; a zero delay skips the timer). Classifier, backoff and `on_retry` see the error as the engine does: a
//! [`openarmature_graph::CategorizedError`] whose `source()` is the [`LlmError`]
//! (see [`LlmError::find_in`]); the classifier's state argument is `None` at call
//! level. Inside a node with observers, exactly one terminal [`LlmCompletionEvent`] or
//! [`LlmFailedEvent`] follows the attempt events.
//!
//! A streamed call (§5) sends every attempt through [`Provider::send_stream`]; its
//! deltas become [`openarmature_core::vocab::llm::LlmTokenEvent`]s carrying the call's one
//! `call_id` and the node-level attempt index, with `chunk_index` running on across
//! wire attempts, all before the terminal event.

use std::error::Error as StdError;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

use std::future::Future;

use futures::channel::mpsc::UnboundedSender;
use openarmature_pipeline::retry::{drive, Retry, RetryLane};

use openarmature_core::vocab::llm::{
    EventMap, EventMessages, LlmAttemptEvent, LlmAttemptOutcome, LlmCompletionEvent,
    LlmFailedEvent, LlmFailure, LlmRequestSummary, LlmResponseSummary, RetryReason,
};
use openarmature_core::vocab::prompt::PromptContext;
use openarmature_core::vocab::Deferred;
use openarmature_graph::ambient;
use openarmature_graph::{CallSite, CategorizedError, Category, NodeCtx, ObserverEvent};
use serde_json::{json, Map, Value};

use crate::config::RuntimeConfig;
use crate::error::{ErrorCategory, LlmError, StructuredOutputInvalid};
use crate::message::{AssistantMessage, Content, ContentBlock, ImageSource, Message};
use crate::provider::{CompletionRequest, Provider, WireRequest};
use crate::response::Response;
use crate::stream::{CallSink, StreamEvent};
use crate::typed::same_bound_after_truncation;

/// One finished wire attempt, as reported to an [`AttemptObserver`].
#[derive(Debug)]
#[non_exhaustive]
pub struct AttemptRecord<'a> {
    /// Shared by every attempt of one `complete()` call.
    pub call_id: &'a str,
    /// Extension 0001: the logical call, stable across both retry lanes (see
    /// [`crate::resilience::accounting`]); outside a node `":<call_id>"`.
    pub logical_call_id: &'a str,
    /// 0-based call-level attempt index.
    pub attempt_index: u32,
    /// Why this attempt was scheduled (`None` on attempt 0).
    pub retry_reason: Option<RetryReason>,
    /// The transcript this attempt sent.
    pub messages: &'a [Message],
    /// The effective config this attempt sent.
    pub config: &'a RuntimeConfig,
    /// The attempt's result.
    pub outcome: Result<&'a Response, &'a LlmError>,
    /// How long the attempt took.
    pub latency: Duration,
}

/// Observes every wire attempt of a call (observe-only: it cannot change the
/// outcome, and should return quickly).
pub trait AttemptObserver: Send + Sync + 'static {
    /// Called once per attempt, after it finished.
    fn on_attempt(&self, record: &AttemptRecord<'_>);
}

impl<F> AttemptObserver for F
where
    F: Fn(&AttemptRecord<'_>) + Send + Sync + 'static,
{
    fn on_attempt(&self, record: &AttemptRecord<'_>) {
        self(record)
    }
}

/// The call-level loop behind [`Provider::complete`].
pub(crate) async fn complete<P: Provider + ?Sized>(
    provider: &P,
    request: &CompletionRequest,
) -> Result<Response, LlmError> {
    run(provider, request, request.stream, None).await
}

/// The call-level loop. `stream`: send every attempt through
/// [`Provider::send_stream`], dispatching token events (and forwarding the deltas to
/// `caller`, a [`crate::ResponseStream`]'s channel, when set). The decide / budget / stop
/// sequence is pipeline-utilities' [`drive`], the same loop `RetryMiddleware` runs; this
/// lane adds the per-attempt override, reask, the typed events and the attempt observer.
pub(crate) async fn run<P: Provider + ?Sized>(
    provider: &P,
    request: &CompletionRequest,
    stream: bool,
    caller: Option<&UnboundedSender<StreamEvent>>,
) -> Result<Response, LlmError> {
    // A v4 UUID from the thread-local CSPRNG (no `getrandom` syscall per call), written
    // on the stack and shared by every summary of the call (one allocation).
    let mut text = uuid::Uuid::encode_buffer();
    let call_id: Arc<str> = Arc::from(
        &*uuid::Builder::from_random_bytes(rand::random())
            .into_uuid()
            .hyphenated()
            .encode_lower(&mut text),
    );
    // The calling node: the request's explicit context, else the running node's
    // (graph-engine's ambient context), so a call made in a node body reports to it.
    let ambient = request
        .node
        .is_none()
        .then(openarmature_graph::current_node)
        .flatten();
    let node_ctx = request.node.as_ref().or(ambient.as_ref());
    // Extension 0001: the call's ordinal in its node attempt is claimed whether or
    // not anyone observes, so ordinals line up across node-level attempts.
    let ordinal = node_ctx.map(crate::resilience::accounting::next_call_ordinal);
    // Typed events are built only when an observer will receive them.
    let node = node_ctx.filter(|ctx| ctx.has_observers());
    let site = node.map(NodeCtx::call_site);
    let logical_call_id: Option<Arc<str>> = (site.is_some() || request.attempt_observer.is_some())
        .then(|| match (node_ctx, ordinal) {
            (Some(ctx), Some(ordinal)) => crate::resilience::accounting::logical_call_id(
                ctx.invocation_id(),
                &ctx.lineage(),
                ctx.step(),
                ordinal,
            )
            .into(),
            _ => format!(":{call_id}").into(),
        });
    let (provider_name, model) = provider.event_names();
    let retry = request.retry.as_ref();
    let mut lane = CallLane {
        provider,
        request,
        stream,
        caller,
        node_ctx,
        observed: node.zip(site.as_ref()),
        names: EventNames {
            provider: &provider_name,
            model: &model,
            call_id: &call_id,
            logical_call_id: logical_call_id.as_ref(),
        },
        call_started: Instant::now(),
        working: None,
        reason: None,
        pending: None,
        view: None,
        same_summary: None,
        latency: Duration::ZERO,
        sink: CallSink {
            node: node.zip(site.as_ref()),
            provider: provider.provider_name(),
            model: provider.model(),
            call_id: &call_id,
            next_chunk: AtomicU32::new(0),
            caller,
        },
    };
    drive(retry.map(|r| &r.base), &mut lane).await
}

/// The strings a call's request summaries share (cloned by reference count).
#[derive(Clone, Copy)]
struct EventNames<'a> {
    provider: &'a Arc<str>,
    model: &'a Arc<str>,
    call_id: &'a Arc<str>,
    logical_call_id: Option<&'a Arc<str>>,
}

/// The LLM call-level [`RetryLane`]: one value per `complete()` call.
struct CallLane<'a, P: ?Sized> {
    provider: &'a P,
    request: &'a CompletionRequest,
    stream: bool,
    caller: Option<&'a UnboundedSender<StreamEvent>>,
    /// The calling node's context (explicit or ambient), observed or not.
    node_ctx: Option<&'a NodeCtx>,
    /// The calling node and its call site, when an observer will receive events.
    observed: Option<(&'a NodeCtx, &'a CallSite)>,
    /// The shared strings every request summary of the call holds.
    names: EventNames<'a>,
    call_started: Instant,
    /// The working transcript: `None` until the first reask appends to a copy.
    working: Option<Vec<Message>>,
    /// Why the running attempt was scheduled (`None` on attempt 0).
    reason: Option<RetryReason>,
    /// The reason of the retry `retry` admitted, until it starts.
    pending: Option<RetryReason>,
    /// The failed attempt's error as classifier, backoff and `on_retry` see it.
    view: Option<CategorizedError>,
    /// The latest attempt's request summary when it equals the call's own (the caller's
    /// messages and config): the terminal event shares it instead of building another.
    same_summary: Option<Arc<LlmRequestSummary>>,
    /// The latest attempt's latency.
    latency: Duration,
    /// Token events and caller deltas: chunk indices run on across call-level attempts.
    sink: CallSink<'a>,
}

impl<P: Provider + ?Sized> CallLane<'_, P> {
    /// The request summary of the call itself (the caller's messages and config).
    fn call_summary(&mut self) -> Arc<LlmRequestSummary> {
        self.same_summary.take().unwrap_or_else(|| {
            Arc::new(request_summary(
                self.names,
                &self.request.messages,
                &self.request.config,
            ))
        })
    }

    /// Sends attempt `index` and reports it (attempt observer, attempt event, and the
    /// terminal completion event on success).
    async fn send(&mut self, index: u32) -> Result<Response, LlmError> {
        let request = self.request;
        let config = match &request.retry {
            Some(r) => r.config_for_attempt(&request.config, index),
            None => request.config.clone(),
        };
        let messages: &[Message] = self.working.as_deref().unwrap_or(&request.messages);
        let started = Instant::now();
        let mut wire = WireRequest::of(request, messages, &config);
        wire.stream = self.stream;
        let attempt = if self.stream {
            self.provider.send_stream(wire, &self.sink)
        } else {
            self.provider.send(wire)
        };
        #[cfg(feature = "tracing-spans")]
        let attempt = crate::spans::wire_attempt(
            self.provider.provider_name(),
            self.provider.model(),
            index,
            self.reason,
            attempt,
        );
        let result = attempt.await;
        self.latency = started.elapsed();
        crate::resilience::hooks::deposit(request, self.node_ctx, index, &result).await;

        if let Some(observer) = &request.attempt_observer {
            observer.on_attempt(&AttemptRecord {
                call_id: self.names.call_id,
                logical_call_id: self.names.logical_call_id.map_or("", |id| id),
                attempt_index: index,
                retry_reason: self.reason,
                messages,
                config: &config,
                outcome: result.as_ref(),
                latency: self.latency,
            });
        }
        if let Some((ctx, site)) = self.observed {
            // The attempt's response summary is the completion event's too.
            let mut completed = None;
            let outcome = match &result {
                Ok(response) => LlmAttemptOutcome::Completed(Arc::clone(
                    completed.insert(Arc::new(response_summary(response))),
                )),
                Err(error) => LlmAttemptOutcome::Failed {
                    failure: failure_of(error),
                    response: error.structured_output().map(failed_response_summary),
                },
            };
            let summary = Arc::new(request_summary(self.names, messages, &config));
            self.same_summary =
                (self.working.is_none() && config == request.config).then(|| Arc::clone(&summary));
            ctx.dispatch_event(ObserverEvent::LlmAttempt(LlmAttemptEvent::new(
                site.clone(),
                summary,
                index,
                self.reason,
                outcome,
                Some(millis(self.latency)),
            )));
            if let Some(response) = completed {
                let summary = self.call_summary();
                ctx.dispatch_event(ObserverEvent::LlmCompletion(LlmCompletionEvent::new(
                    site.clone(),
                    summary,
                    response,
                    Some(millis(self.call_started.elapsed())),
                )));
            }
        }
        result
    }
}

impl<P: Provider + ?Sized> RetryLane for CallLane<'_, P> {
    type Output = Response;
    type Error = LlmError;

    fn attempt(&mut self, index: u32) -> impl Future<Output = Result<Response, LlmError>> + Send {
        self.send(index)
    }

    fn retry(&mut self, error: &LlmError, index: u32) -> Option<Retry> {
        let r = self.request.retry.as_ref()?;
        let view = error.clone().into_categorized();
        let reason = match (&r.reask, error.structured_output()) {
            (_, Some(failure))
                if same_bound_after_truncation(r, &self.request.config, failure, index) =>
            {
                return None
            }
            (Some(builder), Some(failure)) => {
                let correction = builder.correction(failure);
                let transcript = self
                    .working
                    .get_or_insert_with(|| self.request.messages.clone());
                transcript.push(Message::Assistant(AssistantMessage {
                    content: Some(Content::Text(failure.output_content.clone())),
                    tool_calls: Vec::new(),
                }));
                transcript.push(Message::user(correction));
                RetryReason::Reask
            }
            _ if r.base.classifier.is_retryable(&view, None) => RetryReason::Transient,
            _ => return None,
        };
        self.view = Some(view);
        self.pending = Some(reason);
        // Reasks are not budgeted: they follow an answered request.
        Some(Retry {
            budgeted: reason == RetryReason::Transient,
        })
    }

    fn view<'s>(&'s self, error: &'s LlmError) -> &'s (dyn StdError + 'static) {
        match &self.view {
            Some(view) => view,
            None => error,
        }
    }

    fn shared(&mut self, error: LlmError) -> Arc<dyn StdError + Send + Sync> {
        match self.view.take() {
            Some(view) => Arc::new(view),
            None => Arc::new(error.into_categorized()),
        }
    }

    fn stop(&mut self, category: Category, reason: &str, last: LlmError) -> LlmError {
        let category = if category == Category::RETRY_BUDGET_EXHAUSTED {
            ErrorCategory::RetryBudgetExhausted
        } else {
            ErrorCategory::RetryAfterExceeded
        };
        crate::resilience::hooks::stopped(category, reason, last)
    }

    fn failed(&mut self, error: LlmError) -> LlmError {
        if let Some((ctx, site)) = self.observed {
            let summary = self.call_summary();
            ctx.dispatch_event(ObserverEvent::LlmFailed(LlmFailedEvent::new(
                site.clone(),
                summary,
                failure_of(&error),
                error.structured_output().map(failed_response_summary),
                Some(millis(self.latency)),
            )));
        }
        error
    }

    fn retrying(&mut self, next_index: u32) {
        let reason = self.pending.take();
        if let (Some(caller), Some(reason)) = (self.caller, reason) {
            let _ = caller.unbounded_send(StreamEvent::Retry {
                attempt_index: next_index,
                reason,
            });
        }
        self.reason = reason;
        self.view = None;
    }
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn request_summary(
    names: EventNames<'_>,
    messages: &[Message],
    config: &RuntimeConfig,
) -> LlmRequestSummary {
    // The event forms of the messages and the parameters are built when an observer
    // first reads them (on the delivery worker); the call keeps owned copies, both in
    // the one cell the two parts share.
    let (input_messages, request_params): (EventMessages, EventMap) = Deferred::lazy_pair(
        (messages.to_vec(), config.clone()),
        |(messages, _)| messages.iter().map(event_message).collect(),
        |(_, config)| config.declared_params(),
    );
    let mut summary = LlmRequestSummary::from_parts(
        Arc::clone(names.provider),
        Arc::clone(names.model),
        Arc::clone(names.call_id),
        input_messages,
        request_params,
        config.extras.clone(),
    )
    // The prompt bound where the call is made (prompt-management §12).
    .with_prompt_context(ambient::get_or_default::<PromptContext>());
    summary.logical_call_id = names.logical_call_id.cloned();
    summary
}

fn response_summary(response: &Response) -> LlmResponseSummary {
    let tool_calls = if response.message.tool_calls.is_empty() {
        None
    } else {
        Some(
            response
                .message
                .tool_calls
                .iter()
                .map(|c| json!({"id": c.id, "name": c.name, "arguments": c.arguments}))
                .collect(),
        )
    };
    LlmResponseSummary::new(
        response.response_model().map(str::to_owned),
        response.response_id().map(str::to_owned),
        response.usage,
        Some(response.finish_reason.as_str().into()),
        response.message.text(),
        tool_calls,
    )
}

fn failed_response_summary(failure: &StructuredOutputInvalid) -> LlmResponseSummary {
    LlmResponseSummary::new(
        failure.response_model.clone(),
        failure.response_id.clone(),
        failure.usage,
        Some(failure.finish_reason.as_str().into()),
        Some(failure.output_content.clone()),
        None,
    )
}

fn failure_of(error: &LlmError) -> LlmFailure {
    LlmFailure::new(
        error.category().as_str(),
        error.error_type().map(str::to_owned),
        error.to_string(),
    )
    .with_retry_after(error.retry_after())
}

/// A message in the typed-event form: the §3 JSON shape with inline image bytes
/// replaced by `{type: "inline_redacted", byte_count}` (observability §5.5.5).
pub(crate) fn event_message(message: &Message) -> Value {
    let mut value = message.to_json();
    let blocks = match message {
        Message::User(m) => match &m.content {
            Content::Blocks(b) => Some(b),
            Content::Text(_) => None,
        },
        _ => None,
    };
    if let (Some(blocks), Some(Value::Array(out))) = (blocks, value.get_mut("content")) {
        for (block, slot) in blocks.iter().zip(out.iter_mut()) {
            if let ContentBlock::Image(image) = block {
                if let ImageSource::Inline { base64_data } = &image.source {
                    if let Some(obj) = slot.as_object_mut() {
                        let mut source = Map::new();
                        source.insert("type".into(), Value::from("inline_redacted"));
                        source.insert("byte_count".into(), Value::from(base64_data.len()));
                        obj.insert("source".into(), Value::Object(source));
                    }
                }
            }
        }
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_images_are_redacted_in_events() {
        let m = Message::user_blocks(vec![
            ContentBlock::image_inline("image/png", "QUJD"),
            ContentBlock::text("t"),
        ]);
        let v = event_message(&m);
        assert_eq!(
            v["content"][0],
            json!({"type": "image", "media_type": "image/png",
                   "source": {"type": "inline_redacted", "byte_count": 4}})
        );
        assert_eq!(v["content"][1]["text"], "t");
    }
}
