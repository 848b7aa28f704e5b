//! Spec: retrieval-provider conformance headers (fixtures 001 / 006: `calls_embed`,
//! `mock_embedding`, `calls_rerank`, `mock_rerank`) as reused by the observability
//! fixtures 074–083 / 099–109 (081: `input_from_rendered_prompt`, 106:
//! `query_from_rendered_prompt`, 150 / 151: a mock entry's `raises`).
//!
//! Each suite gets a real HTTP mock on 127.0.0.1 replaying its entries in order; the
//! embedding provider is the OpenAI-compatible mapping (`gen_ai.system` `openai`),
//! the rerank provider the Cohere mapping (`cohere`) — the suite's stand-in bodies
//! are those wire shapes. A node's call runs after its other directives, inside the
//! node (`in_node`), so the typed events reach the observers; a failure is the node's
//! error. Adapter register O19: a `raises: {error_type, message}` entry is served as
//! an error body `{"error": {"type", "message"}}` with the entry's status; the bound
//! model is the directive's `model`, else the first 2xx body's `model`, else a
//! `gen_ai.request.model` the case's expected metrics name for the operation, else
//! `text-embedding-test` / `rerank-test`.

use std::sync::Arc;

use openarmature_graph::{DynState, DynUpdate, Node, NodeCtx, NodeError};
use openarmature_retrieval::{
    CohereRerank, EmbeddingConfig, EmbeddingProvider, EmbeddingRequest, EmbeddingResponse,
    OpenAiEmbeddings, RerankConfig, RerankProvider, RerankRequest, RerankResponse,
};
use serde_json::{json, Map, Value};

use super::prompts::{PromptHarness, PromptStep};
use crate::failure::{Check, Failure};
use crate::http_mock::{MockServer, Reply};
use crate::shared::{Around, AroundNode};
use crate::yaml::Y;
use crate::AdapterError;

/// The node directives.
pub(crate) const EMBED_KEY: &str = "calls_embed";
/// The node directives.
pub(crate) const RERANK_KEY: &str = "calls_rerank";

/// One suite's mock server and its default bound model.
struct Suite {
    server: MockServer,
    model: String,
}

/// The case's retrieval mocks.
pub(crate) struct RetrievalHarness {
    embed: Option<Suite>,
    rerank: Option<Suite>,
}

/// The replies of a `mock_embedding` / `mock_rerank` list and the first 2xx model.
fn replies(list: &Y<'_>) -> Check<(Vec<Reply>, Option<String>)> {
    let mut out = Vec::new();
    let mut model = None;
    for entry in list.seq()? {
        entry.check_keys(&["status", "body", "raises"])?;
        let status = match entry.get("status") {
            Some(s) => {
                u16::try_from(s.i64()?).map_err(|_| Failure::from(s.invalid("an HTTP status")))?
            }
            None => 200,
        };
        let mut body = entry.get("body").map(|b| b.json()).transpose()?;
        if let Some(r) = entry.get("raises") {
            r.check_keys(&["error_type", "message"])?;
            let error_type = r.req("error_type").and_then(|y| y.json())?;
            let message = r.req("message").and_then(|y| y.json())?;
            body = Some(json!({"error": {"type": error_type, "message": message}}));
        }
        if model.is_none() && (200..300).contains(&status) {
            model = body
                .as_ref()
                .and_then(|b| b.get("model"))
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        out.push(Reply::Http {
            status,
            headers: Vec::new(),
            body,
        });
    }
    Ok((out, model))
}

/// A `gen_ai.request.model` the case's expected metrics name for `operation`.
fn metrics_model(case: &Y<'_>, operation: &str) -> Option<String> {
    let metrics = case.get("expected")?.get("metrics")?.json().ok()?;
    metrics.as_array()?.iter().find_map(|m| {
        let dims = m.get("dimensions")?;
        (dims.get("openarmature.gen_ai.operation")?.as_str()? == operation)
            .then(|| {
                dims.get("gen_ai.request.model")?
                    .as_str()
                    .map(str::to_owned)
            })
            .flatten()
    })
}

async fn suite(case: &Y<'_>, key: &str, operation: &str, default: &str) -> Check<Option<Suite>> {
    let Some(list) = case.get(key) else {
        return Ok(None);
    };
    let (replies, body_model) = replies(&list)?;
    let server = MockServer::start(replies, None)
        .await
        .map_err(|e| format!("cannot start the {key} mock: {e}"))?;
    let model = body_model
        .or_else(|| metrics_model(case, operation))
        .unwrap_or_else(|| default.to_owned());
    Ok(Some(Suite { server, model }))
}

impl RetrievalHarness {
    /// Starts the mocks the case declares (`None` when it declares neither).
    pub(crate) async fn start(case: &Y<'_>) -> Check<Option<RetrievalHarness>> {
        let embed = suite(case, "mock_embedding", "embeddings", "text-embedding-test").await?;
        let rerank = suite(case, "mock_rerank", "rerank", "rerank-test").await?;
        if embed.is_none() && rerank.is_none() {
            return Ok(None);
        }
        Ok(Some(RetrievalHarness { embed, rerank }))
    }
}

fn origin(server: &MockServer) -> String {
    let base = server.base_url();
    base.strip_suffix("/v1").unwrap_or(&base).to_owned()
}

/// What a node calls.
enum Call {
    Embed {
        provider: OpenAiEmbeddings,
        input: Option<Vec<String>>,
        config: EmbeddingConfig,
    },
    Rerank {
        provider: CohereRerank,
        query: Option<String>,
        documents: Vec<String>,
        top_k: Option<u32>,
        config: RerankConfig,
    },
}

struct RetrievalNode {
    inner: Arc<dyn Node<DynState>>,
    call: Arc<Call>,
    prompt: Option<(PromptStep, Arc<PromptHarness>)>,
    stores_in: Option<String>,
}

fn strings(y: &Y<'_>) -> Result<Vec<String>, AdapterError> {
    y.strings()
}

fn model_of(call: &Y<'_>, suite: &Suite) -> Result<String, AdapterError> {
    Ok(match call.get("model") {
        Some(m) => m.str()?.to_owned(),
        None => suite.model.clone(),
    })
}

fn config_map(call: &Y<'_>) -> Result<Map<String, Value>, AdapterError> {
    match call.get("config").map(|c| c.json()).transpose()? {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(m)) => Ok(m),
        Some(_) => Err(call.invalid("config must be a mapping")),
    }
}

fn embed_call(call: &Y<'_>, suite: &Suite) -> Result<Call, AdapterError> {
    call.check_keys(&[
        "input",
        "input_from_rendered_prompt",
        "stores_response_in",
        "config",
        "model",
    ])?;
    let provider = OpenAiEmbeddings::builder(model_of(call, suite)?)
        .api_key("test-key")
        .base_url(origin(&suite.server))
        .build()
        .map_err(|e| call.invalid(e.to_string()))?;
    let from_prompt = match call.get("input_from_rendered_prompt") {
        Some(f) => f.bool()?,
        None => false,
    };
    let input = match call.get("input") {
        Some(i) if !from_prompt => Some(strings(&i)?),
        None if from_prompt => None,
        _ => return Err(call.invalid("exactly one of `input` / `input_from_rendered_prompt`")),
    };
    let mut config = EmbeddingConfig::new();
    for (k, v) in config_map(call)? {
        match (k.as_str(), &v) {
            ("dimensions", Value::Number(n)) => {
                let d = n.as_u64().and_then(|d| u32::try_from(d).ok());
                config.dimensions = Some(d.ok_or_else(|| call.invalid("dimensions"))?);
            }
            ("input_type", Value::String(t)) => config.input_type = Some(t.clone()),
            _ => config = config.extra(k, v),
        }
    }
    Ok(Call::Embed {
        provider,
        input,
        config,
    })
}

fn rerank_call(call: &Y<'_>, suite: &Suite) -> Result<Call, AdapterError> {
    call.check_keys(&[
        "query",
        "query_from_rendered_prompt",
        "documents",
        "top_k",
        "config",
        "stores_response_in",
        "model",
    ])?;
    let provider = CohereRerank::builder(model_of(call, suite)?)
        .api_key("test-key")
        .base_url(origin(&suite.server))
        .build()
        .map_err(|e| call.invalid(e.to_string()))?;
    let from_prompt = match call.get("query_from_rendered_prompt") {
        Some(f) => f.bool()?,
        None => false,
    };
    let query = match call.get("query") {
        Some(q) if !from_prompt => Some(q.str()?.to_owned()),
        None if from_prompt => None,
        _ => return Err(call.invalid("exactly one of `query` / `query_from_rendered_prompt`")),
    };
    let top_k = match call.get("top_k").filter(|y| !y.is_null()) {
        Some(k) => Some(u32::try_from(k.i64()?).map_err(|_| k.invalid("a top_k"))?),
        None => None,
    };
    let mut config = RerankConfig::new();
    for (k, v) in config_map(call)? {
        match (k.as_str(), &v) {
            ("return_documents", Value::Bool(b)) => config.return_documents = Some(*b),
            _ => config = config.extra(k, v),
        }
    }
    Ok(Call::Rerank {
        provider,
        query,
        documents: strings(&call.req("documents")?)?,
        top_k,
        config,
    })
}

/// Wraps `node` with its `calls_embed` / `calls_rerank` directive, if it has one.
pub(crate) fn wrap(
    spec: &Y<'_>,
    node: Arc<dyn Node<DynState>>,
    harness: Option<&Arc<RetrievalHarness>>,
    prompts: Option<&Arc<PromptHarness>>,
) -> Result<Arc<dyn Node<DynState>>, AdapterError> {
    let (call_y, call) = match (spec.get(EMBED_KEY), spec.get(RERANK_KEY)) {
        (None, None) => return Ok(node),
        (Some(c), None) => {
            let suite = harness.and_then(|h| h.embed.as_ref());
            let suite = suite.ok_or_else(|| c.invalid("calls_embed without mock_embedding"))?;
            let call = embed_call(&c, suite)?;
            (c, call)
        }
        (None, Some(c)) => {
            let suite = harness.and_then(|h| h.rerank.as_ref());
            let suite = suite.ok_or_else(|| c.invalid("calls_rerank without mock_rerank"))?;
            let call = rerank_call(&c, suite)?;
            (c, call)
        }
        (Some(c), Some(_)) => return Err(c.invalid("one retrieval call per node")),
    };
    let prompt = match PromptStep::parse(spec)? {
        Some(step) => match prompts {
            Some(h) => Some((step, Arc::clone(h))),
            None => return Err(spec.invalid("a rendered prompt without prompt_backend")),
        },
        None => None,
    };
    let needs_prompt = match &call {
        Call::Embed { input, .. } => input.is_none(),
        Call::Rerank { query, .. } => query.is_none(),
    };
    if needs_prompt && prompt.is_none() {
        return Err(call_y.invalid("a rendered-prompt input without renders_prompt"));
    }
    let stores_in = call_y
        .get("stores_response_in")
        .map(|y| y.str().map(str::to_owned))
        .transpose()?;
    Ok(Around::node(RetrievalNode {
        inner: node,
        call: Arc::new(call),
        prompt,
        stores_in,
    }))
}

/// The `stores_response_in` record of an embedding response.
fn embedding_record(r: &EmbeddingResponse) -> Value {
    json!({
        "vectors": r.vectors,
        "model": r.model,
        "usage": r.usage,
        "response_id": r.response_id,
        "dimensions": r.dimensions,
    })
}

/// The `stores_response_in` record of a rerank response.
fn rerank_record(r: &RerankResponse) -> Value {
    json!({
        "results": r.results,
        "model": r.model,
        "usage": r.usage,
        "response_id": r.response_id,
    })
}

impl RetrievalNode {
    async fn call(&self, ctx: &NodeCtx, rendered: Option<String>) -> Result<Value, NodeError> {
        match &*self.call {
            Call::Embed {
                provider,
                input,
                config,
            } => {
                let input = input
                    .clone()
                    .unwrap_or_else(|| rendered.into_iter().collect());
                let request = EmbeddingRequest::new(input)
                    .config(config.clone())
                    .in_node(ctx);
                let response = provider.embed(&request).await?;
                Ok(embedding_record(&response))
            }
            Call::Rerank {
                provider,
                query,
                documents,
                top_k,
                config,
            } => {
                let query = query.clone().or(rendered).unwrap_or_default();
                let mut request = RerankRequest::new(query, documents.clone())
                    .config(config.clone())
                    .in_node(ctx);
                request.top_k = *top_k;
                let response = provider.rerank(&request).await?;
                Ok(rerank_record(&response))
            }
        }
    }
}

impl AroundNode for RetrievalNode {
    fn inner(&self) -> &Arc<dyn Node<DynState>> {
        &self.inner
    }

    async fn run(&self, state: Arc<DynState>, ctx: NodeCtx) -> Result<DynUpdate, NodeError> {
        let mut update = self.inner.run(state, ctx.clone()).await?;
        let record = match &self.prompt {
            Some((step, prompts)) => {
                let rendered = step.render(prompts).await?;
                let text = rendered.text();
                rendered.scope(self.call(&ctx, Some(text))).await?
            }
            None => self.call(&ctx, None).await?,
        };
        if let Some(field) = &self.stores_in {
            update = update.set(field.as_str(), record);
        }
        Ok(update)
    }
}
