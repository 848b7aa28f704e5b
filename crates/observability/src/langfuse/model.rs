//! Spec: observability §8.2 / §8.3 — the Langfuse data model this mapping produces: a
//! [`LangfuseTrace`] per invocation (and per detached child trace, §8.5) holding a tree
//! of [`Observation`]s (Span and Generation).

use std::time::SystemTime;

use serde_json::{Map, Value};

/// One Langfuse Trace: the container of one invocation (§8.3 row 1), or of one
/// detached subgraph / fan-out instance (§8.5).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LangfuseTrace {
    /// `trace.id`: 32 lowercase hex characters (§8.4.1 *`trace.id` derivation*).
    pub id: String,
    /// `trace.name` (§8.6): the caller's invocation label, else the entry node.
    pub name: String,
    /// `trace.userId`: the promoted `userId` caller-metadata key (§8.4.1).
    pub user_id: Option<String>,
    /// `trace.sessionId`: the invocation's session id (§8.4.1).
    pub session_id: Option<String>,
    /// `trace.metadata`: OA-emitted keys and caller metadata, all top level.
    pub metadata: Map<String, Value>,
    /// `trace.input` (§8.4.1 *Trace input/output sourcing*).
    pub input: Option<Value>,
    /// `trace.output` (§8.4.1 *Trace input/output sourcing*).
    pub output: Option<Value>,
    /// When the invocation (or detached unit) started.
    pub start_time: SystemTime,
    /// When it ended.
    pub end_time: SystemTime,
    /// The top-level observations, in start order.
    pub observations: Vec<Observation>,
}

impl LangfuseTrace {
    /// Every observation of the trace, depth first (parents before children).
    pub fn all_observations(&self) -> Vec<&Observation> {
        fn walk<'a>(list: &'a [Observation], out: &mut Vec<&'a Observation>) {
            for o in list {
                out.push(o);
                walk(&o.children, out);
            }
        }
        let mut out = Vec::new();
        walk(&self.observations, &mut out);
        out
    }
}

/// The Langfuse observation types this mapping emits (§8.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ObservationType {
    /// Timed work: node, subgraph, fan-out and branch dispatch (§8.3).
    Span,
    /// One LLM `complete()` call (§8.3, §8.4.3).
    Generation,
    /// A point-in-time signal (reserved by §8.2; not emitted by this mapping).
    Event,
    /// One instrumented tool execution (§8.4.6), Langfuse's dedicated `Tool` type.
    Tool,
    /// One `embed()` call (§8.4.5), Langfuse's dedicated `Embedding` type.
    Embedding,
    /// One `rerank()` call (§8.4.7), Langfuse's dedicated `Retriever` type.
    Retriever,
}

impl ObservationType {
    /// `"span"` / `"generation"` / `"event"` / `"tool"` / `"embedding"` / `"retriever"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ObservationType::Span => "span",
            ObservationType::Generation => "generation",
            ObservationType::Event => "event",
            ObservationType::Tool => "tool",
            ObservationType::Embedding => "embedding",
            ObservationType::Retriever => "retriever",
        }
    }
}

/// `observation.level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Level {
    /// `DEBUG`.
    Debug,
    /// `DEFAULT`: the level of every successful observation.
    #[default]
    Default,
    /// `WARNING`: an exceeded token budget (§8.4.3).
    Warning,
    /// `ERROR`: the observation carries `openarmature.error.category` (§8.4.2).
    Error,
}

impl Level {
    /// `"DEBUG"` / `"DEFAULT"` / `"WARNING"` / `"ERROR"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Debug => "DEBUG",
            Level::Default => "DEFAULT",
            Level::Warning => "WARNING",
            Level::Error => "ERROR",
        }
    }
}

/// A Generation's `usage` record (§8.4.3): only the counters the provider reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Usage {
    /// `usage.input` (prompt tokens).
    pub input: Option<u64>,
    /// `usage.output` (completion tokens).
    pub output: Option<u64>,
    /// `usage.total`.
    pub total: Option<u64>,
}

impl Usage {
    /// The record as a JSON object with the reported counters only.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        for (k, v) in [
            ("input", self.input),
            ("output", self.output),
            ("total", self.total),
        ] {
            if let Some(v) = v {
                m.insert(k.to_owned(), Value::from(v));
            }
        }
        Value::Object(m)
    }
}

/// One Langfuse observation and its children.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Observation {
    /// The observation id (16 lowercase hex characters).
    pub id: String,
    /// Span or Generation.
    pub kind: ObservationType,
    /// `observation.name` (§8.4.2): the node name, the branch name of a branch
    /// dispatch span, `openarmature.llm.complete` for a Generation.
    pub name: String,
    /// When the work started.
    pub start_time: SystemTime,
    /// When it ended.
    pub end_time: SystemTime,
    /// `observation.level`.
    pub level: Level,
    /// `observation.statusMessage`: the error category, or the exceeded budget bound.
    pub status_message: Option<String>,
    /// `observation.metadata` (§8.4.2 / §8.4.3 / §8.4.4), all keys top level.
    pub metadata: Map<String, Value>,
    /// `generation.input` (payload-gated, §8.7).
    pub input: Option<Value>,
    /// `generation.output` (payload-gated, §8.7).
    pub output: Option<Value>,
    /// `generation.model`.
    pub model: Option<String>,
    /// `generation.modelParameters` (§5.5.2 request parameters).
    pub model_parameters: Map<String, Value>,
    /// `generation.usage`.
    pub usage: Option<Usage>,
    /// The Langfuse Prompt entity the Generation links to (§8.4.4 case 1).
    pub prompt_link: Option<Value>,
    /// `usageDetails` of an Embedding / Retriever observation (§8.4.5 / §8.4.7): only
    /// the figures the provider reported (`input`, `searchUnits`), possibly empty.
    pub usage_details: Option<Map<String, Value>>,
    /// The nested observations, in start order.
    pub children: Vec<Observation>,
}

impl Observation {
    /// An empty observation of `kind` named `name`.
    pub fn new(kind: ObservationType, id: String, name: String, at: SystemTime) -> Self {
        Observation {
            id,
            kind,
            name,
            start_time: at,
            end_time: at,
            level: Level::Default,
            status_message: None,
            metadata: Map::new(),
            input: None,
            output: None,
            model: None,
            model_parameters: Map::new(),
            usage: None,
            prompt_link: None,
            usage_details: None,
            children: Vec::new(),
        }
    }
}
