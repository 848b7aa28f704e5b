//! Spec: llm-provider §5 — the provider interface: `ready()` and `complete()`.
//!
//! A [`Provider`] is bound to one model and is stateless. Implementations supply
//! [`Provider::send`], exactly **one** wire attempt that never retries; the provided
//! [`Provider::complete`] runs the §7.1 call-level loop around it (when the request
//! carries a retry config), reports every attempt, and dispatches the typed
//! graph-engine events when the call runs inside a node.

use std::sync::Arc;

use futures::future::BoxFuture;
use openarmature_graph::NodeCtx;
use serde_json::Value;

use crate::call::AttemptObserver;
use crate::config::RuntimeConfig;
use crate::error::LlmError;
use crate::message::Message;
use crate::response::Response;
use crate::retry::LlmRetryConfig;
use crate::stream::{DeltaSink, ResponseStream};
use crate::tool::{Tool, ToolChoice};

/// What the bound model is statically known to support (§5 / §7 pre-send checks,
/// §8.1.5.1 structured-output path selection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ModelCapabilities {
    /// Image blocks are accepted (otherwise they fail pre-send with
    /// `provider_unsupported_content_block`). Default `true`.
    pub supports_image_input: bool,
    /// The model honours the mapping's native structured output (OpenAI
    /// `response_format`, Anthropic `output_config.format`, Gemini
    /// `responseJsonSchema`); otherwise structured output uses the mapping's
    /// fallback. Default `true`.
    pub supports_native_response_format: bool,
}

impl Default for ModelCapabilities {
    fn default() -> Self {
        ModelCapabilities {
            supports_image_input: true,
            supports_native_response_format: true,
        }
    }
}

impl ModelCapabilities {
    /// Sets [`ModelCapabilities::supports_image_input`].
    pub fn image_input(mut self, supported: bool) -> Self {
        self.supports_image_input = supported;
        self
    }

    /// Sets [`ModelCapabilities::supports_native_response_format`].
    pub fn native_response_format(mut self, supported: bool) -> Self {
        self.supports_native_response_format = supported;
        self
    }
}

/// One wire attempt's inputs: the §5 `complete()` arguments minus `retry`, borrowed.
/// The call-level loop builds one per attempt (its working transcript and its
/// effective config).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct WireRequest<'a> {
    /// The message list.
    pub messages: &'a [Message],
    /// The tools (empty: none).
    pub tools: &'a [Tool],
    /// The effective runtime config.
    pub config: &'a RuntimeConfig,
    /// The structured-output schema, if any.
    pub response_schema: Option<&'a Value>,
    /// The tool-choice constraint, if any.
    pub tool_choice: Option<&'a ToolChoice>,
    /// Whether the call streams.
    pub stream: bool,
}

impl<'a> WireRequest<'a> {
    /// The attempt view of `request`, with `messages` and `config` replaced.
    pub fn of(
        request: &'a CompletionRequest,
        messages: &'a [Message],
        config: &'a RuntimeConfig,
    ) -> Self {
        WireRequest {
            messages,
            tools: &request.tools,
            config,
            response_schema: request.response_schema.as_ref(),
            tool_choice: request.tool_choice.as_ref(),
            stream: request.stream,
        }
    }
}

/// A `complete()` call (§5): the messages and the optional `tools`, `config`,
/// `response_schema`, `tool_choice`, `retry` and `stream`, plus where to report it.
///
/// `complete()` takes the request by reference and never mutates it: a retry's
/// per-attempt config and a reask's working transcript are internal copies.
///
/// # Examples
/// ```
/// use openarmature_llm::{CompletionRequest, Message, RuntimeConfig};
/// use openarmature_pipeline::retry::RetryConfig;
/// let request = CompletionRequest::new(vec![Message::user("Hi")])
///     .config(RuntimeConfig::default().temperature(0.2))
///     .retry(RetryConfig::default().max_attempts(2));
/// assert_eq!(request.messages.len(), 1);
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CompletionRequest {
    /// The conversation (§3).
    pub messages: Vec<Message>,
    /// Tools the model may call (§4); empty for none.
    pub tools: Vec<Tool>,
    /// Sampling parameters (§6).
    pub config: RuntimeConfig,
    /// A JSON Schema constraining the output (§5).
    pub response_schema: Option<Value>,
    /// The tool-choice constraint (§5); `None` omits it from the wire.
    pub tool_choice: Option<ToolChoice>,
    /// Call-level retry (§7.1); `None` sends exactly once.
    pub retry: Option<LlmRetryConfig>,
    /// Streamed delivery (§5): the provider consumes the streaming wire response and,
    /// inside a node with observers, dispatches one `LlmTokenEvent` per content or
    /// reasoning delta; `complete()` still returns the assembled [`Response`]. A
    /// mapping without streaming ([`Provider::supports_streaming`] false) rejects the
    /// call pre-send with `provider_invalid_request`. See also [`Provider::stream`].
    pub stream: bool,
    /// Reported after every wire attempt (observe-only).
    pub attempt_observer: Option<Arc<dyn AttemptObserver>>,
    /// The calling node: when set, typed LLM events go to its observer queue.
    pub node: Option<NodeCtx>,
}

impl std::fmt::Debug for CompletionRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompletionRequest")
            .field("messages", &self.messages)
            .field("tools", &self.tools)
            .field("config", &self.config)
            .field("response_schema", &self.response_schema)
            .field("tool_choice", &self.tool_choice)
            .field("retry", &self.retry)
            .field("stream", &self.stream)
            .finish_non_exhaustive()
    }
}

impl CompletionRequest {
    /// A request for `messages` with every option unset.
    pub fn new(messages: Vec<Message>) -> Self {
        CompletionRequest {
            messages,
            ..CompletionRequest::default()
        }
    }

    /// Sets the tools.
    pub fn tools(mut self, tools: Vec<Tool>) -> Self {
        self.tools = tools;
        self
    }

    /// Sets the runtime config.
    pub fn config(mut self, config: RuntimeConfig) -> Self {
        self.config = config;
        self
    }

    /// Sets the structured-output schema.
    pub fn response_schema(mut self, schema: Value) -> Self {
        self.response_schema = Some(schema);
        self
    }

    /// Sets the tool-choice constraint.
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Enables call-level retry with a plain [`openarmature_pipeline::RetryConfig`]
    /// (the record `RetryMiddleware` takes) or an [`LlmRetryConfig`].
    pub fn retry(mut self, retry: impl Into<LlmRetryConfig>) -> Self {
        self.retry = Some(retry.into());
        self
    }

    /// Sets the stream flag.
    pub fn stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// Reports every wire attempt to `observer`.
    pub fn on_attempt(mut self, observer: impl AttemptObserver) -> Self {
        self.attempt_observer = Some(Arc::new(observer));
        self
    }

    /// Marks the call as issued by the node attempt `ctx`: typed LLM events (one
    /// per attempt, then the terminal completion or failure event) are dispatched on
    /// its observer queue. Only an override: a call made from a node body (or a
    /// middleware) without it reports to the running node (the engine's ambient
    /// context, `openarmature_graph::current_node`); pass it when the call runs
    /// elsewhere (a spawned task) on a node's behalf.
    pub fn in_node(mut self, ctx: &NodeCtx) -> Self {
        self.node = Some(ctx.clone());
        self
    }
}

/// An LLM provider bound to one model (§5).
///
/// Implement [`Provider::send`] (one attempt) and [`Provider::ready`]; use the
/// provided [`Provider::complete`]. Implementations must not retry inside `send`,
/// and must not serialize concurrent calls.
pub trait Provider: Send + Sync {
    /// The bound model identifier.
    fn model(&self) -> &str;

    /// The provider identifier reported on events (`gen_ai.system`, e.g. `openai`).
    fn provider_name(&self) -> &str;

    /// [`Provider::provider_name`] and [`Provider::model`] as the shared strings the
    /// typed LLM events hold. The default copies both (two allocations per call); the
    /// built-in providers keep them shared and clone them by reference count, and a
    /// wrapper should forward to its inner provider.
    fn event_names(&self) -> (Arc<str>, Arc<str>) {
        (Arc::from(self.provider_name()), Arc::from(self.model()))
    }

    /// Checks that the bound model is reachable and serving (§5 `ready()`).
    ///
    /// # Errors
    /// `provider_authentication`, `provider_invalid_model`,
    /// `provider_model_not_loaded` or `provider_unavailable` (or
    /// `provider_invalid_response` for an unreadable answer).
    fn ready(&self) -> BoxFuture<'_, Result<(), LlmError>>;

    /// One wire attempt: validate, map, send once, map the answer back. Never retries.
    ///
    /// # Errors
    /// Any §7 category.
    fn send<'a>(&'a self, request: WireRequest<'a>) -> BoxFuture<'a, Result<Response, LlmError>>;

    /// A `complete()` call (§5): [`Provider::send`], under the request's call-level
    /// retry loop (§7.1) when it has one, with every attempt reported.
    ///
    /// # Errors
    /// The final attempt's error.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the call at once (mid-request or mid-backoff); no
    /// further attempt is made.
    fn complete<'a>(
        &'a self,
        request: &'a CompletionRequest,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        Box::pin(crate::call::complete(self, request))
    }

    /// Whether this mapping implements streaming (§5 *Provider streaming support*).
    /// Default `false`.
    fn supports_streaming(&self) -> bool {
        false
    }

    /// One **streamed** wire attempt: like [`Provider::send`], but consumes the
    /// streaming wire response, reports every content / reasoning delta to `sink` as it
    /// arrives, and returns the response assembled from the stream (§6 *Streaming
    /// assembly*). Never retries.
    ///
    /// The default, for mappings without streaming, sends nothing and fails with
    /// [`crate::streaming_unsupported`].
    ///
    /// # Errors
    /// Any §7 category; `provider_invalid_request` pre-send when the mapping does not
    /// stream.
    fn send_stream<'a>(
        &'a self,
        request: WireRequest<'a>,
        sink: &'a dyn DeltaSink,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        let _ = (request, sink);
        let error = crate::stream::streaming_unsupported(self.provider_name());
        Box::pin(std::future::ready(Err(error)))
    }

    /// A streamed `complete()` call whose deltas the caller consumes directly: a
    /// [`ResponseStream`] of deltas, ending with the assembled [`Response`]. Streaming
    /// is on whatever `request.stream` says; the call-level retry loop, attempt
    /// reporting and (with [`CompletionRequest::in_node`]) the typed events work as for
    /// [`Provider::complete`].
    ///
    /// # Examples
    /// ```no_run
    /// use futures::StreamExt;
    /// use openarmature_llm::{CompletionRequest, Message, OpenAiProvider, Provider, StreamEvent};
    /// # async fn demo() -> Result<(), openarmature_llm::LlmError> {
    /// let provider = OpenAiProvider::builder("http://localhost:8000/v1", "my-model").build()?;
    /// let request = CompletionRequest::new(vec![Message::user("Tell me a story")]);
    /// let mut stream = provider.stream(&request);
    /// while let Some(event) = stream.next().await {
    ///     match event? {
    ///         StreamEvent::Delta(delta) => print!("{}", delta.text),
    ///         StreamEvent::Retry { .. } => println!("\n[retrying]"),
    ///         StreamEvent::Completed(response) => println!("\n{:?}", response.usage),
    ///         _ => {}
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    fn stream<'a>(&'a self, request: &'a CompletionRequest) -> ResponseStream<'a> {
        ResponseStream::start(self, request)
    }
}
