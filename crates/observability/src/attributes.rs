//! Spec: observability §4.5 (span names), §5 (attribute namespace) and §11.2 / §11.3
//! (metric instruments and their dimensions).
//!
//! Every span name, attribute key, metric instrument name and metric dimension key the
//! OpenTelemetry mapping emits, as constants, so backends, tests and dashboards can
//! refer to them without retyping strings.

/// The invocation span's name (§4.5), also the root of every detached trace (§4.4).
pub const INVOCATION_SPAN: &str = "openarmature.invocation";
/// The LLM provider span's name (§4.5).
pub const LLM_SPAN: &str = "openarmature.llm.complete";
/// The tool-execution span's name (§5.5.11).
pub const TOOL_SPAN: &str = "openarmature.tool.call";

// §5.5.11 Tool-execution span (the OA-namespace mirror of `gen_ai.tool.*`).

/// `openarmature.tool.name` — string, the executed tool's name.
pub const TOOL_NAME: &str = "openarmature.tool.name";
/// `openarmature.tool.call.id` — string, the model's `ToolCall.id`; omitted when absent.
pub const TOOL_CALL_ID: &str = "openarmature.tool.call.id";
/// `openarmature.tool.call.arguments` — JSON string; payload (§5.5.4), truncated (§5.5.5).
pub const TOOL_CALL_ARGUMENTS: &str = "openarmature.tool.call.arguments";
/// `openarmature.tool.call.result` — JSON string; payload (§5.5.4), truncated (§5.5.5).
pub const TOOL_CALL_RESULT: &str = "openarmature.tool.call.result";

/// The value of [`IMPLEMENTATION_NAME`] for this port (§5.1: `openarmature-<language>`).
pub const IMPLEMENTATION: &str = "openarmature-rust";

// §5.1 Invocation span.

/// `openarmature.invocation_id` — string, caller-supplied or a minted UUIDv4.
pub const INVOCATION_ID: &str = "openarmature.invocation_id";
/// `openarmature.graph.entry_node` — string, the entry node of the trace's outermost graph.
pub const GRAPH_ENTRY_NODE: &str = "openarmature.graph.entry_node";
/// `openarmature.graph.spec_version` — string, the targeted spec release.
pub const GRAPH_SPEC_VERSION: &str = "openarmature.graph.spec_version";
/// `openarmature.implementation.name` — string, always emitted.
pub const IMPLEMENTATION_NAME: &str = "openarmature.implementation.name";
/// `openarmature.implementation.version` — string, always emitted.
pub const IMPLEMENTATION_VERSION: &str = "openarmature.implementation.version";

// §5.2 Node span.

/// `openarmature.node.name` — string, the node's name in its immediate graph.
pub const NODE_NAME: &str = "openarmature.node.name";
/// `openarmature.node.namespace` — string array, never joined.
pub const NODE_NAMESPACE: &str = "openarmature.node.namespace";
/// `openarmature.node.step` — int.
pub const NODE_STEP: &str = "openarmature.node.step";
/// `openarmature.node.attempt_index` — int, 0 unless a retry middleware re-attempts.
pub const NODE_ATTEMPT_INDEX: &str = "openarmature.node.attempt_index";
/// `openarmature.error.category` — string, the §4 category, on failed spans only.
pub const ERROR_CATEGORY: &str = "openarmature.error.category";

/// `openarmature.outcome` — string, `"suspended"` on the suspending node's span and the
/// invocation span of a suspended invocation (§4.2 *Suspended status mapping*: the
/// logical `SUSPENDED` status is OTel `OK` plus this attribute).
pub const OUTCOME: &str = "openarmature.outcome";
/// `openarmature.suspension.signal_id` — string, on a suspended node's span (§5.8).
pub const SUSPENSION_SIGNAL_ID: &str = "openarmature.suspension.signal_id";
/// `openarmature.suspension.metadata.` — prefix of the flattened descriptor metadata
/// (§5.8): nested objects flatten with dotted keys, arrays become canonical JSON.
pub const SUSPENSION_METADATA_PREFIX: &str = "openarmature.suspension.metadata.";

// §5.3 Subgraph span.

/// `openarmature.subgraph.name` — string, the compiled subgraph's name or `""`.
pub const SUBGRAPH_NAME: &str = "openarmature.subgraph.name";

// §5.4 Fan-out spans.

/// `openarmature.node.fan_out_index` — int, on instance spans and the nodes inside.
pub const NODE_FAN_OUT_INDEX: &str = "openarmature.node.fan_out_index";
/// `openarmature.fan_out.parent_node_name` — string, on instance spans.
pub const FAN_OUT_PARENT_NODE_NAME: &str = "openarmature.fan_out.parent_node_name";
/// `openarmature.fan_out.item_count` — int, on the fan-out node span.
pub const FAN_OUT_ITEM_COUNT: &str = "openarmature.fan_out.item_count";
/// `openarmature.fan_out.concurrency` — int, on the fan-out node span (0 = unbounded).
pub const FAN_OUT_CONCURRENCY: &str = "openarmature.fan_out.concurrency";
/// `openarmature.fan_out.error_policy` — `fail_fast` | `collect`, on the fan-out node span.
pub const FAN_OUT_ERROR_POLICY: &str = "openarmature.fan_out.error_policy";

// §5.7 Parallel-branches spans.

/// `openarmature.node.branch_name` — string, on dispatch spans and the nodes inside.
pub const NODE_BRANCH_NAME: &str = "openarmature.node.branch_name";
/// `openarmature.parallel_branches.parent_node_name` — string, on dispatch spans.
pub const PARALLEL_BRANCHES_PARENT_NODE_NAME: &str =
    "openarmature.parallel_branches.parent_node_name";
/// `openarmature.parallel_branches.branch_count` — int, dispatched branches.
pub const PARALLEL_BRANCHES_BRANCH_COUNT: &str = "openarmature.parallel_branches.branch_count";
/// `openarmature.parallel_branches.error_policy` — `fail_fast` | `collect`.
pub const PARALLEL_BRANCHES_ERROR_POLICY: &str = "openarmature.parallel_branches.error_policy";

// §5.6 Cross-cutting.

/// `openarmature.correlation_id` — string, on every span and log record.
pub const CORRELATION_ID: &str = "openarmature.correlation_id";
/// `openarmature.session_id` — string, on every span of a session-bound invocation.
pub const SESSION_ID: &str = "openarmature.session_id";
/// The prefix of caller-supplied invocation metadata attributes (`openarmature.user.<key>`).
pub const USER_PREFIX: &str = "openarmature.user.";

// §5.5 LLM provider span.

/// `openarmature.llm.model` — string, the bound model.
pub const LLM_MODEL: &str = "openarmature.llm.model";
/// `openarmature.llm.finish_reason` — string.
pub const LLM_FINISH_REASON: &str = "openarmature.llm.finish_reason";
/// `openarmature.llm.usage.prompt_tokens` — int, omitted when not reported.
pub const LLM_USAGE_PROMPT_TOKENS: &str = "openarmature.llm.usage.prompt_tokens";
/// `openarmature.llm.usage.completion_tokens` — int, omitted when not reported.
pub const LLM_USAGE_COMPLETION_TOKENS: &str = "openarmature.llm.usage.completion_tokens";
/// `openarmature.llm.usage.total_tokens` — int, omitted when not reported.
pub const LLM_USAGE_TOTAL_TOKENS: &str = "openarmature.llm.usage.total_tokens";
/// `openarmature.llm.attempt_index` — int, the call-level attempt (0 without retry).
pub const LLM_ATTEMPT_INDEX: &str = "openarmature.llm.attempt_index";
/// `openarmature.llm.retry_reason` — `transient` | `reask`, on attempts ≥ 1 only.
pub const LLM_RETRY_REASON: &str = "openarmature.llm.retry_reason";
/// `openarmature.llm.cache_read.input_tokens` — int, when the provider reported it.
pub const LLM_CACHE_READ_INPUT_TOKENS: &str = "openarmature.llm.cache_read.input_tokens";
/// `openarmature.llm.cache_creation.input_tokens` — int, when the provider reported it.
pub const LLM_CACHE_CREATION_INPUT_TOKENS: &str = "openarmature.llm.cache_creation.input_tokens";

// Project extensions (spec/extensions/): not in the pinned specification.

/// `openarmature.llm.logical_call_id` — string, on every `openarmature.llm.complete`
/// span (extension 0001, attempt accounting): the logical call the attempt belongs
/// to, `"<invocation_id>:<node path>[<lineage>]@<step>#<ordinal>"`. Every attempt of
/// one `complete()` call shares it, and so does the call a node-level retry re-issues
/// (same node execution, same ordinal), so `(logical_call_id,
/// openarmature.node.attempt_index of the parent, openarmature.llm.attempt_index)`
/// orders every wire attempt of the call. An emitter that derived none: the call is
/// its own logical call, `"<invocation_id>:<call_id>"`.
pub const LLM_LOGICAL_CALL_ID: &str = "openarmature.llm.logical_call_id";
/// `openarmature.prompt.name` — the active prompt's name (prompt-management §12).
pub const PROMPT_NAME: &str = "openarmature.prompt.name";
/// `openarmature.prompt.version` — the active prompt's version.
pub const PROMPT_VERSION: &str = "openarmature.prompt.version";
/// `openarmature.prompt.label` — the label the active prompt was fetched under.
pub const PROMPT_LABEL: &str = "openarmature.prompt.label";
/// `openarmature.prompt.template_hash` — the active prompt's template hash.
pub const PROMPT_TEMPLATE_HASH: &str = "openarmature.prompt.template_hash";
/// `openarmature.prompt.rendered_hash` — the active prompt's rendered hash.
pub const PROMPT_RENDERED_HASH: &str = "openarmature.prompt.rendered_hash";
/// `openarmature.prompt.group_name` — the active prompt group's name.
pub const PROMPT_GROUP_NAME: &str = "openarmature.prompt.group_name";
/// `openarmature.prompt.token_budget.input_max_tokens` — the declared input bound
/// (observability §5.5.15).
pub const PROMPT_TOKEN_BUDGET_INPUT_MAX: &str = "openarmature.prompt.token_budget.input_max_tokens";
/// `openarmature.prompt.token_budget.total_max_tokens` — the declared total bound.
pub const PROMPT_TOKEN_BUDGET_TOTAL_MAX: &str = "openarmature.prompt.token_budget.total_max_tokens";
/// `openarmature.llm.token_budget.exceeded` — whether reported usage crossed a declared
/// bound; emitted only when at least one bound could be evaluated.
pub const LLM_TOKEN_BUDGET_EXCEEDED: &str = "openarmature.llm.token_budget.exceeded";
/// The span event a circuit-breaker transition is recorded as (extension 0004), on
/// the span of the node attempt whose call caused it, at the transition's time.
pub const CIRCUIT_BREAKER_STATE_CHANGE_EVENT: &str = "openarmature.circuit_breaker.state_change";
/// `openarmature.circuit_breaker.endpoint` — string, the breaker's endpoint key (event
/// attribute).
pub const CIRCUIT_BREAKER_ENDPOINT: &str = "openarmature.circuit_breaker.endpoint";
/// `openarmature.circuit_breaker.from` — `closed` | `open` | `half_open` (event attribute).
pub const CIRCUIT_BREAKER_FROM: &str = "openarmature.circuit_breaker.from";
/// `openarmature.circuit_breaker.to` — `closed` | `open` | `half_open` (event attribute).
pub const CIRCUIT_BREAKER_TO: &str = "openarmature.circuit_breaker.to";
/// `openarmature.circuit_breaker.reason` — `consecutive_failures` | `failure_rate` |
/// `cooldown_elapsed` | `probe_failed` | `probe_succeeded` (event attribute).
pub const CIRCUIT_BREAKER_REASON: &str = "openarmature.circuit_breaker.reason";

// §5.5.1 Payload attributes (emitted only with `disable_provider_payload = false`;
// each capped per §5.5.5).

/// `openarmature.llm.input.messages` — string, the sent messages as canonical JSON
/// (sorted keys, no whitespace, inline image bytes redacted).
pub const LLM_INPUT_MESSAGES: &str = "openarmature.llm.input.messages";
/// `openarmature.llm.output.content` — string, the assistant's content verbatim
/// (only when non-empty).
pub const LLM_OUTPUT_CONTENT: &str = "openarmature.llm.output.content";
/// `openarmature.llm.output.tool_calls` — string, the output tool calls as canonical
/// JSON `[{id, name, arguments}]` (only when there are any).
pub const LLM_OUTPUT_TOOL_CALLS: &str = "openarmature.llm.output.tool_calls";
/// `openarmature.llm.request.extras` — string, the `RuntimeConfig` extras as
/// canonical JSON (only when non-empty).
pub const LLM_REQUEST_EXTRAS: &str = "openarmature.llm.request.extras";

/// The default per-attribute payload cap, in bytes (§5.5.5: 64 KiB).
pub const DEFAULT_PAYLOAD_BYTE_CAP: usize = 65_536;
/// The smallest payload cap an observer accepts, in bytes (§5.5.5).
pub const MIN_PAYLOAD_BYTE_CAP: usize = 256;

// §5.5.10 Tool-call identity projections (ungated).

/// `openarmature.llm.output.tool_calls.count` — int, on a tool-calling completion.
pub const LLM_OUTPUT_TOOL_CALLS_COUNT: &str = "openarmature.llm.output.tool_calls.count";
/// `openarmature.llm.output.tool_calls.names` — string array, in request order.
pub const LLM_OUTPUT_TOOL_CALLS_NAMES: &str = "openarmature.llm.output.tool_calls.names";
/// `openarmature.llm.output.tool_calls.ids` — string array, aligned with `.names`.
pub const LLM_OUTPUT_TOOL_CALLS_IDS: &str = "openarmature.llm.output.tool_calls.ids";

// §5.5.2 / §5.5.3 GenAI semantic conventions.

/// `gen_ai.system` — the provider identifier (`openai`, …).
pub const GEN_AI_SYSTEM: &str = "gen_ai.system";
/// `gen_ai.request.model` — the bound model.
pub const GEN_AI_REQUEST_MODEL: &str = "gen_ai.request.model";
/// The prefix of the request-parameter attributes (`gen_ai.request.temperature`, …).
pub const GEN_AI_REQUEST_PREFIX: &str = "gen_ai.request.";
/// `gen_ai.response.model` — the model the provider reported.
pub const GEN_AI_RESPONSE_MODEL: &str = "gen_ai.response.model";
/// `gen_ai.response.id` — the provider's response id.
pub const GEN_AI_RESPONSE_ID: &str = "gen_ai.response.id";
/// `gen_ai.response.finish_reasons` — a one-element string array.
pub const GEN_AI_RESPONSE_FINISH_REASONS: &str = "gen_ai.response.finish_reasons";
/// `gen_ai.usage.input_tokens` — int.
pub const GEN_AI_USAGE_INPUT_TOKENS: &str = "gen_ai.usage.input_tokens";
/// `gen_ai.usage.output_tokens` — int.
pub const GEN_AI_USAGE_OUTPUT_TOKENS: &str = "gen_ai.usage.output_tokens";

// OpenTelemetry exception event (§4.2: recorded on every ERROR span).

/// The OpenTelemetry exception event's name.
pub const EXCEPTION_EVENT: &str = "exception";
/// `exception.type` — here the §4 category (Rust errors carry no class name).
pub const EXCEPTION_TYPE: &str = "exception.type";
/// `exception.message` — the raised error's message.
pub const EXCEPTION_MESSAGE: &str = "exception.message";

// §11.2 Metric instruments (recorded only with `enable_metrics`).

/// Histogram (unit `{token}`) of the token counts a provider call reported, split by
/// [`METRIC_TOKEN_TYPE`].
pub const METRIC_TOKEN_USAGE: &str = "openarmature.gen_ai.client.token.usage";
/// Histogram (unit `s`) of provider-call durations, one observation per wire attempt.
pub const METRIC_OPERATION_DURATION: &str = "openarmature.gen_ai.client.operation.duration";
/// Counter (unit `{call}`) of declared token-budget bounds a call's usage exceeded,
/// split by [`METRIC_TOKEN_BUDGET_KIND`].
pub const METRIC_TOKEN_BUDGET_EXCEEDED: &str = "openarmature.gen_ai.client.token_budget.exceeded";
/// Histogram (unit `1`) of `actual / declared` per evaluated token-budget bound.
pub const METRIC_TOKEN_BUDGET_UTILIZATION: &str =
    "openarmature.gen_ai.client.token_budget.utilization";

/// Bucket boundaries of [`METRIC_TOKEN_USAGE`] (powers of four, 1 to 4^13).
pub const TOKEN_USAGE_BUCKETS: [f64; 14] = [
    1.0,
    4.0,
    16.0,
    64.0,
    256.0,
    1_024.0,
    4_096.0,
    16_384.0,
    65_536.0,
    262_144.0,
    1_048_576.0,
    4_194_304.0,
    16_777_216.0,
    67_108_864.0,
];
/// Bucket boundaries of [`METRIC_OPERATION_DURATION`], in seconds (doubling from 10 ms).
pub const OPERATION_DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
/// Bucket boundaries of [`METRIC_TOKEN_BUDGET_UTILIZATION`] (`> 1.0` is over budget).
pub const TOKEN_BUDGET_UTILIZATION_BUCKETS: [f64; 11] =
    [0.1, 0.25, 0.5, 0.75, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 4.0];

// §11.3 Metric dimensions (besides `gen_ai.request.model` and `gen_ai.system`).

/// `openarmature.gen_ai.operation` — the operation kind; `chat` for an LLM call.
pub const METRIC_OPERATION: &str = "openarmature.gen_ai.operation";
/// The [`METRIC_OPERATION`] value of an LLM completion call.
pub const OPERATION_CHAT: &str = "chat";
/// `openarmature.gen_ai.token.type` — `input` or `output` ([`METRIC_TOKEN_USAGE`]).
pub const METRIC_TOKEN_TYPE: &str = "openarmature.gen_ai.token.type";
/// `openarmature.gen_ai.token_budget.kind` — `input` or `total` (the token-budget
/// instruments).
pub const METRIC_TOKEN_BUDGET_KIND: &str = "openarmature.gen_ai.token_budget.kind";
/// `error.type` — the llm-provider §7 error category, on the duration of a failed
/// attempt only.
pub const ERROR_TYPE: &str = "error.type";

// §5.5.8 Embedding spans and §5.5.13 rerank spans (retrieval-provider).

/// The embedding provider span's name (§5.5.8).
pub const EMBEDDING_SPAN: &str = "openarmature.embedding.complete";
/// The rerank provider span's name (§5.5.13).
pub const RERANK_SPAN: &str = "openarmature.rerank.complete";
/// `openarmature.embedding.input_count` — int, the number of input strings.
pub const EMBEDDING_INPUT_COUNT: &str = "openarmature.embedding.input_count";
/// `openarmature.embedding.dimensions` — int, the output vector dimensionality.
pub const EMBEDDING_DIMENSIONS: &str = "openarmature.embedding.dimensions";
/// `openarmature.embedding.input_type` — string, when the caller set `input_type`.
pub const EMBEDDING_INPUT_TYPE: &str = "openarmature.embedding.input_type";
/// `openarmature.embedding.input.strings` — JSON string list (payload).
pub const EMBEDDING_INPUT_STRINGS: &str = "openarmature.embedding.input.strings";
/// `openarmature.embedding.request.extras` — JSON object (payload).
pub const EMBEDDING_REQUEST_EXTRAS: &str = "openarmature.embedding.request.extras";
/// `openarmature.rerank.query_length` — int, the query's UTF-8 byte length.
pub const RERANK_QUERY_LENGTH: &str = "openarmature.rerank.query_length";
/// `openarmature.rerank.document_count` — int, the number of input documents.
pub const RERANK_DOCUMENT_COUNT: &str = "openarmature.rerank.document_count";
/// `openarmature.rerank.top_k` — int, the caller's `top_k`; omitted when unset.
pub const RERANK_TOP_K: &str = "openarmature.rerank.top_k";
/// `openarmature.rerank.result_count` — int, the number of results returned.
pub const RERANK_RESULT_COUNT: &str = "openarmature.rerank.result_count";
/// `openarmature.rerank.search_units` — int, the billed search units, when reported.
pub const RERANK_SEARCH_UNITS: &str = "openarmature.rerank.search_units";
/// `openarmature.rerank.query` — string (payload).
pub const RERANK_QUERY: &str = "openarmature.rerank.query";
/// `openarmature.rerank.documents` — JSON string list (payload).
pub const RERANK_DOCUMENTS: &str = "openarmature.rerank.documents";
/// `openarmature.rerank.results` — JSON list of `{index, relevance_score, document?}`
/// (payload).
pub const RERANK_RESULTS: &str = "openarmature.rerank.results";
/// `openarmature.gen_ai.operation` value for embedding calls (§11.3).
pub const OPERATION_EMBEDDINGS: &str = "embeddings";
/// `openarmature.gen_ai.operation` value for rerank calls (§11.3).
pub const OPERATION_RERANK: &str = "rerank";
