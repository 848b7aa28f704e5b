//! Spec: observability conformance fixture 038 (FIXTURE-QUIRKS Q6) — the canned-reply
//! form `calls_llm: {response: <text>, model?}` (no `mock_llm`, `messages` or
//! `stores_response_in`), register O12.
//!
//! Each such directive gets its **own** mock provider, started on the node's first
//! call, that answers every chat-completion request with the same synthesized 200
//! body: `{id: canned-<n>, object: chat.completion, model: <bound model>, choices:
//! [{index: 0, message: {role: assistant, content: <text>}, finish_reason: stop}]}`
//! and no usage (038 asserts none). A server per directive keeps the reply with its
//! node: concurrent parallel branches share no FIFO queue whose order would hand one
//! branch the other's text. Without `messages` the call sends one user message,
//! [`DEFAULT_PROMPT`]; the reply is stored only when `stores_response_in` is given.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use openarmature_llm::{LlmError, OpenAiProvider};
use serde_json::{json, Value};
use tokio::sync::OnceCell;

use super::llm::LlmHarness;
use crate::http_mock::{MockServer, Reply};

/// The user message a canned call without `messages` sends.
pub(crate) const DEFAULT_PROMPT: &str = "(canned reply)";

/// The chat-completions path the OpenAI-compatible provider posts to.
const COMPLETIONS_PATH: &str = "/v1/chat/completions";

/// Numbers the canned replies' ids (`canned-<n>`), so each directive's is distinct.
static NEXT_ID: AtomicUsize = AtomicUsize::new(0);

/// The messages a canned call without `messages` sends.
pub(crate) fn default_messages() -> Value {
    json!([{"role": "user", "content": DEFAULT_PROMPT}])
}

/// One directive's canned reply and, once started, its server and provider.
pub(crate) struct Canned {
    body: Value,
    started: OnceCell<(MockServer, Arc<OpenAiProvider>)>,
}

impl Canned {
    /// The canned reply `text` from a provider bound to `model`.
    pub(crate) fn new(text: &str, model: &str) -> Canned {
        let n = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        Canned {
            body: json!({
                "id": format!("canned-{n}"),
                "object": "chat.completion",
                "model": model,
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }],
            }),
            started: OnceCell::new(),
        }
    }

    /// The provider bound to `model` on this directive's server (started on first
    /// use). A server that cannot start fails the call as `provider_unavailable`,
    /// which fails the case.
    pub(crate) async fn provider(
        &self,
        harness: &LlmHarness,
        model: &str,
    ) -> Result<Arc<OpenAiProvider>, LlmError> {
        let (_, provider) = self
            .started
            .get_or_try_init(|| async {
                // The health route answers every request to its path and is never
                // consumed: the same reply, however often the node calls.
                let reply = Reply::Http {
                    status: 200,
                    headers: Vec::new(),
                    body: Some(self.body.clone()),
                };
                let server = MockServer::start(Vec::new(), Some((COMPLETIONS_PATH.into(), reply)))
                    .await
                    .map_err(|e| LlmError::unavailable(format!("canned-reply server: {e}")))?;
                let provider = harness
                    .build_provider(&server.base_url(), model)
                    .map_err(|e| LlmError::unavailable(format!("canned-reply provider: {e}")))?;
                Ok::<_, LlmError>((server, Arc::new(provider)))
            })
            .await?;
        Ok(Arc::clone(provider))
    }
}
