//! The pipeline: `split` → `extract_all` (a fan-out over chunks; each instance runs
//! the `extract` node) → `summarize`.
//!
//! `extract` makes one LLM call with **call-level** retry (transients re-sent with
//! backoff that honours `Retry-After`; schema failures re-asked), and is wrapped in
//! the **three-piece pattern**: failure isolation (outer) → node-level retry (inner)
//! → the node body. `split` and `summarize` are pure and cannot fail on input.
//!
//! The request comes from a managed **Chat prompt** (`extract_chunk`, rendered strictly
//! per chunk), and the call runs inside the prompt's context (`PromptResult::scope`), so
//! its typed LLM events carry `active_prompt` and its spans `openarmature.prompt.*`.

use std::collections::{BTreeMap, HashMap};
use std::error::Error as StdError;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use openarmature::graph::checkpoint::Checkpointer;
use openarmature::graph::{
    state, CompileError, CompiledGraph, GraphBuilder, NodeCtx, NodeError, END,
};
use openarmature::llm::{
    CompletionRequest, HonorRetryAfter, LlmError, LlmRetryConfig, OpenAiProvider, Provider,
    RuntimeConfig, StructuredOutputInvalid,
};
use openarmature::pipeline::dispatch::FanOutDispatcher;
use openarmature::pipeline::retry::{Backoff, BackoffDecision, Constant, Exponential, RetryConfig};
use openarmature::pipeline::{
    ErrorPolicy, FailureIsolationMiddleware, FanOutNode, RetryMiddleware,
};
use openarmature::prompt::{render_prompt, ChatSegment, Prompt, RenderOptions};
use serde_json::{json, Value};

state! {
    /// The whole run.
    #[derive(Default)]
    pub struct Doc => DocUpdate {
        /// The input document.
        pub text: String,
        /// Its chunks (one paragraph each), written by `split`.
        pub chunks: Vec<String>,
        /// One result per chunk, in chunk order (an extraction or a degraded marker).
        pub results: Vec<Value> => append,
        /// Fan-out instances that failed outright (none: isolation degrades them).
        pub errors: Vec<Value> => append,
        /// Written by `summarize`.
        pub summary: String,
    }
}

state! {
    /// One fan-out instance.
    #[derive(Default)]
    pub struct Chunk => ChunkUpdate {
        /// The chunk's text.
        pub chunk: String,
        /// The extraction, or `{"degraded": true, ...}`.
        pub result: Value,
    }
}

/// The JSON Schema every extraction must satisfy.
pub fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "topic": {"type": "string"},
            "entities": {"type": "array", "items": {"type": "string"}},
            "severity": {"type": "string", "enum": ["info", "warning", "incident"]}
        },
        "required": ["topic", "entities", "severity"],
        "additionalProperties": false
    })
}

const SYSTEM: &str = "You extract facts from one chunk of an incident report. Reply with a \
JSON object only: {\"topic\": a short noun phrase, \"entities\": the people, places, \
systems and teams named, \"severity\": \"info\", \"warning\" or \"incident\"}.";

/// The managed prompt every `extract` call renders: a fixed system segment and a user
/// segment with the chunk's index and text.
pub fn prompt() -> Prompt {
    Prompt::chat(
        "extract_chunk",
        "v1",
        "production",
        vec![
            ChatSegment::system(SYSTEM),
            ChatSegment::user("Chunk {{ index }}:\n{{ chunk }}"),
        ],
    )
}

/// Retry budgets and delays; `--short` shrinks the delays (never the Retry-After).
#[derive(Debug, Clone, Copy)]
pub struct Tuning {
    /// Call-level attempts per `complete()` call.
    pub call_attempts: u32,
    /// Node-level attempts of `extract`.
    pub node_attempts: u32,
    /// First call-level backoff (doubles per retry).
    pub call_backoff: Duration,
    /// Node-level backoff.
    pub node_backoff: Duration,
    /// Fan-out concurrency bound (0: unbounded).
    pub concurrency: usize,
}

impl Tuning {
    /// The full run's settings, or the short run's.
    pub fn new(short: bool) -> Tuning {
        Tuning {
            call_attempts: 3,
            node_attempts: 2,
            call_backoff: Duration::from_millis(if short { 20 } else { 200 }),
            node_backoff: Duration::from_millis(if short { 50 } else { 300 }),
            concurrency: 4,
        }
    }
}

/// One call-level backoff decision: how long the retry loop waited after a failed
/// attempt, and the `Retry-After` the provider asked for, if any.
#[derive(Debug, Clone, Copy)]
pub struct Wait {
    /// The delay the backoff returned (and the loop slept).
    pub delay: Duration,
    /// The provider's `Retry-After`, read from the typed error.
    pub retry_after: Option<Duration>,
}

/// Backoff decisions keyed by (fan-out index, node attempt, call attempt). The LLM
/// events say *that* an attempt was retried and why; they do not carry the delay,
/// so the example records it where the retry loop asks for it.
#[derive(Default)]
pub struct Waits(Mutex<HashMap<WaitKey, Wait>>);

/// (fan-out index, node attempt, call attempt).
type WaitKey = (Option<usize>, u32, u32);

impl Waits {
    /// The decision made after call attempt `call_attempt` of the call issued by
    /// node attempt `node_attempt` of instance `fan_out_index`.
    pub fn get(
        &self,
        fan_out_index: Option<usize>,
        node_attempt: u32,
        call_attempt: u32,
    ) -> Option<Wait> {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(&(fan_out_index, node_attempt, call_attempt))
            .copied()
    }
}

/// Wraps a backoff and records each decision in [`Waits`].
struct Recorded<B> {
    inner: B,
    key: (Option<usize>, u32),
    waits: Arc<Waits>,
}

impl<B> Recorded<B> {
    fn record(&self, attempt_index: u32, delay: Duration, error: &(dyn StdError + 'static)) {
        let retry_after = LlmError::find_in(error).and_then(LlmError::retry_after);
        let wait = Wait { delay, retry_after };
        let mut map = self.waits.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.insert((self.key.0, self.key.1, attempt_index), wait);
    }
}

impl<B: Backoff> Backoff for Recorded<B> {
    fn delay(&self, attempt_index: u32) -> Duration {
        self.inner.delay(attempt_index)
    }

    fn delay_for(&self, attempt_index: u32, error: &(dyn StdError + 'static)) -> Duration {
        let delay = self.inner.delay_for(attempt_index, error);
        self.record(attempt_index, delay, error);
        delay
    }

    // Forwarded so `HonorRetryAfter` can still give up on a wait above its cap.
    fn decide(&self, attempt_index: u32, error: &(dyn StdError + 'static)) -> BackoffDecision {
        let decision = self.inner.decide(attempt_index, error);
        if let BackoffDecision::Wait(delay) = &decision {
            self.record(attempt_index, *delay, error);
        }
        decision
    }
}

/// The `extract` node body: one structured-output call for the chunk.
async fn extract(
    provider: Arc<OpenAiProvider>,
    prompt: Arc<Prompt>,
    tuning: Tuning,
    waits: Arc<Waits>,
    state: Arc<Chunk>,
    ctx: NodeCtx,
) -> Result<ChunkUpdate, NodeError> {
    let index = chunk_index(&ctx);
    let backoff = Recorded {
        inner: HonorRetryAfter {
            inner: Exponential {
                base: tuning.call_backoff,
                cap: Duration::from_secs(5),
            },
            cap: Duration::from_secs(10),
        },
        key: (index, ctx.attempt_index()),
        waits,
    };
    let retry = LlmRetryConfig::from(
        RetryConfig::default()
            .max_attempts(tuning.call_attempts)
            .backoff(backoff),
    )
    .reask(|failure: &StructuredOutputInvalid| {
        format!(
            "That reply did not match the schema ({}). Reply with the corrected JSON object only.",
            failure.error_message
        )
    });
    let variables = json!({"index": index.unwrap_or(0), "chunk": state.chunk});
    let rendered = render_prompt(&prompt, &variables, None, RenderOptions::strict())?;
    let request = CompletionRequest::new(rendered.messages().to_vec())
        .config(RuntimeConfig::default().temperature(0.0).max_tokens(300))
        .response_schema(schema())
        .retry(retry)
        .in_node(&ctx); // typed LLM events go to this node's observer queue
                        // Inside the prompt's context: the call's events and spans name the prompt.
    let response = rendered.scope(provider.complete(&request)).await?;
    Ok(ChunkUpdate::default().result(response.parsed.unwrap_or(Value::Null)))
}

/// The chunk's index: the fan-out index in process; on a remote worker (the Restate
/// fleet example) the instance runs as its own invocation, whose id is the instance key
/// `{invocation}/{fan-out}/{index}` (`openarmature_pipeline::dispatch::run_job`).
fn chunk_index(ctx: &NodeCtx) -> Option<usize> {
    ctx.fan_out_index()
        .or_else(|| ctx.invocation_id().rsplit('/').next()?.parse().ok())
}

/// Builds the graph (the fan-out runs its instances in this process).
pub fn build(
    provider: Arc<OpenAiProvider>,
    tuning: Tuning,
    waits: Arc<Waits>,
) -> Result<CompiledGraph<Doc>, CompileError> {
    build_over(per_chunk(provider, tuning, waits)?, tuning, None)
}

/// What makes the pipeline durable across worker processes (the Restate fleet
/// example): where the fan-out's instances run, and the Checkpointer every worker
/// shares.
pub struct Durable {
    /// Sends each fan-out instance to a worker.
    pub dispatcher: Arc<dyn FanOutDispatcher<Chunk>>,
    /// The shared Checkpointer (PostgreSQL in the fleet).
    pub checkpointer: Arc<dyn Checkpointer>,
}

/// The per-chunk subgraph every fan-out instance runs: `extract` in the three-piece
/// pattern.
pub fn per_chunk(
    provider: Arc<OpenAiProvider>,
    tuning: Tuning,
    waits: Arc<Waits>,
) -> Result<CompiledGraph<Chunk>, CompileError> {
    let prompt = Arc::new(prompt());
    let node = move |state: Arc<Chunk>, ctx: NodeCtx| {
        extract(
            Arc::clone(&provider),
            Arc::clone(&prompt),
            tuning,
            Arc::clone(&waits),
            state,
            ctx,
        )
    };
    GraphBuilder::new(Chunk::default())
        .add_node("extract", node)
        // The three-piece pattern, outermost first: isolation, then retry.
        .node_middleware(
            "extract",
            Arc::new(FailureIsolationMiddleware::<Chunk>::new(
                "extract_degraded",
                |s: &Chunk| {
                    ChunkUpdate::default().result(json!({"degraded": true, "chunk": s.chunk}))
                },
            )),
        )
        .node_middleware(
            "extract",
            Arc::new(RetryMiddleware::new(
                RetryConfig::default()
                    .max_attempts(tuning.node_attempts)
                    .backoff(Constant(tuning.node_backoff)),
            )),
        )
        .add_edge("extract", END)
        .entry("extract")
        .compile()
}

/// The pipeline over `per_chunk`: `split` → `extract_all` (the fan-out) →
/// `summarize`; in this process, or `durable`.
pub fn build_over(
    per_chunk: CompiledGraph<Chunk>,
    tuning: Tuning,
    durable: Option<Durable>,
) -> Result<CompiledGraph<Doc>, CompileError> {
    let mut fan_out =
        FanOutNode::<Doc, Chunk>::over_items(per_chunk, "chunks", "chunk", "result", "results")
            .concurrency(NonZeroUsize::new(tuning.concurrency))
            .error_policy(ErrorPolicy::Collect)
            .errors_field("errors");
    let mut checkpointer = None;
    if let Some(durable) = durable {
        fan_out = fan_out.dispatcher(durable.dispatcher);
        checkpointer = Some(durable.checkpointer);
    }

    let mut builder = GraphBuilder::new(Doc::default());
    if let Some(checkpointer) = checkpointer {
        builder = builder.checkpointer(checkpointer);
    }
    builder
        .add_node("split", |doc: Arc<Doc>, _: NodeCtx| async move {
            let chunks = doc
                .text
                .split("\n\n")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(str::to_owned)
                .collect();
            Ok(DocUpdate::default().chunks(chunks))
        })
        .add_node("extract_all", fan_out)
        .add_node("summarize", |doc: Arc<Doc>, _: NodeCtx| async move {
            Ok(DocUpdate::default().summary(summarize(&doc.results)))
        })
        .add_edge("split", "extract_all")
        .add_edge("extract_all", "summarize")
        .add_edge("summarize", END)
        .entry("split")
        .compile()
}

/// Aggregates the per-chunk results into one line.
fn summarize(results: &[Value]) -> String {
    let degraded = results.iter().filter(|r| r["degraded"] == true).count();
    let mut severities: BTreeMap<&str, usize> = BTreeMap::new();
    let mut entities: Vec<&str> = Vec::new();
    for r in results.iter().filter(|r| r["degraded"] != true) {
        if let Some(s) = r["severity"].as_str() {
            *severities.entry(s).or_default() += 1;
        }
        for e in r["entities"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            if !entities.contains(&e) {
                entities.push(e);
            }
        }
    }
    let severities: Vec<String> = severities.iter().map(|(s, n)| format!("{s} {n}")).collect();
    format!(
        "{} of {} chunks extracted, {degraded} degraded; severity: {}; entities: {}",
        results.len() - degraded,
        results.len(),
        severities.join(", "),
        entities.join(", ")
    )
}

/// The sample document: an incident report, one paragraph per chunk.
pub fn document(short: bool) -> String {
    let paragraphs = [
        "At 09:02 UTC the Berlin cluster paged the on-call engineer, Priya Raman, for elevated checkout latency.",
        "Grafana showed p99 latency above 4 seconds on the Payments API while Stripe webhooks were queueing.",
        "Priya failed over the primary Postgres database to the Frankfurt replica at 09:17 UTC.",
        "The failover succeeded, but the Redis session cache in Berlin kept serving stale tokens.",
        "Customers in Madrid and Lisbon reported double charges, and Support opened ticket INC-4471.",
        "Marco Bianchi rolled back release 2.14.3 of the Checkout service at 09:41 UTC.",
        "Latency returned to normal by 09:55 UTC and the incident was downgraded to monitoring.",
        "A postmortem is scheduled for Thursday with the Payments and SRE teams.",
    ];
    let take = if short { 5 } else { paragraphs.len() };
    paragraphs[..take].join("\n\n")
}
