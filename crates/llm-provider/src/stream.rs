//! Spec: llm-provider §5 *Streaming* / *Provider streaming support* and graph-engine §6
//! *Typed LLM token event*.
//!
//! Streaming is a delivery concern: a streamed `complete()` call still returns the
//! atomic [`Response`] (§6 *Streaming assembly*), and, inside a node with observers,
//! additionally dispatches one [`openarmature_core::vocab::llm::LlmTokenEvent`] per content or
//! reasoning delta as it arrives. Outside a graph, [`Provider::stream`] hands the same
//! deltas to the caller as a [`ResponseStream`] ending with the assembled response.
//!
//! A mapping implements streaming by overriding [`Provider::send_stream`] (one wire
//! attempt that reports each delta to a [`DeltaSink`]) and
//! [`Provider::supports_streaming`]. A mapping that does not keeps the defaults: a
//! streamed call is then rejected before anything is sent, with
//! `provider_invalid_request` (never a silent atomic fallback).

use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::task::{Context, Poll};

use futures::channel::mpsc::{unbounded, UnboundedReceiver, UnboundedSender};
use futures::future::BoxFuture;
use futures::{Stream, StreamExt};
use openarmature_core::vocab::llm::{LlmTokenEvent, RetryReason};
use openarmature_graph::{CallSite, NodeCtx, ObserverEvent};

use crate::error::LlmError;
use crate::provider::{CompletionRequest, Provider};
use crate::response::Response;

/// What a streamed delta carries: answer text or reasoning text.
pub use openarmature_core::vocab::llm::LlmDeltaKind as DeltaKind;

/// Receives the text deltas of one streamed wire attempt, in arrival order.
///
/// Implemented for closures `Fn(DeltaKind, &str)`. Called on the task driving the
/// call: return quickly.
pub trait DeltaSink: Send + Sync {
    /// One delta of `kind`. Tool-call argument deltas are not reported (they are
    /// reassembled into [`Response::message`]'s tool calls).
    fn on_delta(&self, kind: DeltaKind, text: &str);
}

impl<F> DeltaSink for F
where
    F: Fn(DeltaKind, &str) + Send + Sync,
{
    fn on_delta(&self, kind: DeltaKind, text: &str) {
        self(kind, text)
    }
}

/// The error a mapping without streaming support raises for a streamed call
/// (§5 *Provider streaming support*): `provider_invalid_request`, pre-send.
pub fn streaming_unsupported(provider: &str) -> LlmError {
    LlmError::invalid_request(format!(
        "the `{provider}` wire mapping does not support streaming (llm-provider §5); \
         call without `stream`"
    ))
}

/// One delta of a streamed call, as a [`ResponseStream`] yields it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokenDelta {
    /// Monotonic per `complete()` call, from 0 (across call-level retries).
    pub chunk_index: u32,
    /// What the delta carries.
    pub kind: DeltaKind,
    /// The text.
    pub text: String,
}

/// An item of a [`ResponseStream`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StreamEvent {
    /// A content or reasoning delta of the current wire attempt.
    Delta(TokenDelta),
    /// The previous wire attempt failed and the call-level retry loop (§7.1) is
    /// starting attempt `attempt_index`: discard the text received so far.
    Retry {
        /// The attempt about to be sent (1 for the first retry).
        attempt_index: u32,
        /// Why it is retried.
        reason: RetryReason,
    },
    /// The call finished: the assembled response (the stream's last item).
    Completed(Box<Response>),
}

/// The per-call fan-out of deltas: token events on the calling node's queue and/or
/// the caller's [`ResponseStream`].
pub(crate) struct CallSink<'a> {
    pub(crate) node: Option<(&'a NodeCtx, &'a CallSite)>,
    pub(crate) provider: &'a str,
    pub(crate) model: &'a str,
    pub(crate) call_id: &'a str,
    pub(crate) next_chunk: AtomicU32,
    pub(crate) caller: Option<&'a UnboundedSender<StreamEvent>>,
}

impl DeltaSink for CallSink<'_> {
    fn on_delta(&self, kind: DeltaKind, text: &str) {
        let chunk_index = self.next_chunk.fetch_add(1, Ordering::Relaxed);
        if let Some((ctx, site)) = self.node {
            ctx.dispatch_event(ObserverEvent::LlmToken(LlmTokenEvent::new(
                site.clone(),
                self.provider,
                self.model,
                self.call_id,
                chunk_index,
                kind,
                text,
            )));
        }
        if let Some(caller) = self.caller {
            // A dropped stream only means nobody listens any more.
            let _ = caller.unbounded_send(StreamEvent::Delta(TokenDelta {
                chunk_index,
                kind,
                text: text.to_owned(),
            }));
        }
    }
}

/// A streamed `complete()` call as a [`Stream`] of [`StreamEvent`]s: the deltas as
/// they arrive, a [`StreamEvent::Retry`] before each call-level retry, then one
/// [`StreamEvent::Completed`] with the assembled response. An error ends the stream.
///
/// The stream drives the call itself (nothing is spawned): deltas arrive only while
/// it is polled.
///
/// # Cancel safety
/// Dropping the stream abandons the call at once.
#[must_use = "a ResponseStream does nothing unless polled"]
pub struct ResponseStream<'a> {
    call: Option<BoxFuture<'a, Result<Response, LlmError>>>,
    finished: Option<Result<Response, LlmError>>,
    events: UnboundedReceiver<StreamEvent>,
}

impl std::fmt::Debug for ResponseStream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseStream")
            .field("running", &self.call.is_some())
            .finish_non_exhaustive()
    }
}

impl<'a> ResponseStream<'a> {
    /// Starts `request` on `provider` with streaming on (whatever `request.stream` says).
    pub(crate) fn start<P: Provider + ?Sized>(
        provider: &'a P,
        request: &'a CompletionRequest,
    ) -> Self {
        ResponseStream::start_with(move |sender| {
            Box::pin(async move { crate::call::run(provider, request, true, Some(&sender)).await })
        })
    }

    /// A stream over the call `call` makes of the sending side of its delta channel.
    pub(crate) fn start_with(
        call: impl FnOnce(UnboundedSender<StreamEvent>) -> BoxFuture<'a, Result<Response, LlmError>>,
    ) -> Self {
        let (sender, events) = unbounded();
        ResponseStream {
            call: Some(call(sender)),
            finished: None,
            events,
        }
    }

    /// Drives the call to its end, discarding the deltas.
    ///
    /// # Errors
    /// The call's error.
    pub async fn response(mut self) -> Result<Response, LlmError> {
        while let Some(item) = self.next().await {
            if let StreamEvent::Completed(response) = item? {
                return Ok(*response);
            }
        }
        Err(LlmError::invalid_response(
            "the stream ended without a response",
        ))
    }
}

impl Stream for ResponseStream<'_> {
    type Item = Result<StreamEvent, LlmError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Poll::Ready(Some(event)) = this.events.poll_next_unpin(cx) {
                return Poll::Ready(Some(Ok(event)));
            }
            let Some(call) = this.call.as_mut() else {
                return Poll::Ready(
                    this.finished
                        .take()
                        .map(|r| r.map(|response| StreamEvent::Completed(Box::new(response)))),
                );
            };
            match call.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(result) => {
                    this.call = None;
                    this.finished = Some(result);
                }
            }
        }
    }
}
