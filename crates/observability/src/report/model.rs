//! The waterfall's data: one [`Row`] per node attempt, LLM wire attempt, wait and
//! degradation, plus the run's totals.

use std::time::Duration;

/// What a row shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RowKind {
    /// One node attempt (its `started` to its `completed` event).
    Node,
    /// One LLM wire attempt (an `LlmAttemptEvent`: its latency, ending at its `at`).
    Llm,
    /// A wait before a retry: between two wire attempts of one call (`backoff` or
    /// `retry-after`) or between two attempts of one node (`node-retry`).
    Wait,
    /// A failure-isolation middleware caught the node's error and degraded it.
    Degraded,
}

impl RowKind {
    /// `node` / `llm` / `wait` / `degraded` (the HTML's `data-kind`).
    pub fn as_str(self) -> &'static str {
        match self {
            RowKind::Node => "node",
            RowKind::Llm => "llm",
            RowKind::Wait => "wait",
            RowKind::Degraded => "degraded",
        }
    }
}

/// A wait's reason when the failed wire attempt carried the provider's `Retry-After`.
pub const WAIT_RETRY_AFTER: &str = "retry-after";
/// A wait's reason between wire attempts otherwise (the call-level backoff).
pub const WAIT_BACKOFF: &str = "backoff";
/// A wait's reason between two attempts of a node (the node-level retry's backoff).
pub const WAIT_NODE_RETRY: &str = "node-retry";

/// One row of the waterfall.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Row {
    /// What the row shows.
    pub kind: RowKind,
    /// The node's path with fan-out indices, e.g. `extract_all[3]/extract`.
    pub node: String,
    /// Nesting depth of the node (0 at the top level).
    pub depth: usize,
    /// The node attempt the row belongs to (0-based).
    pub node_attempt: u32,
    /// The row's own attempt index: the node attempt for `node` and `degraded` rows,
    /// the call-level attempt for `llm` rows, the attempt waited for on `wait` rows.
    pub attempt: u32,
    /// `llm`: why the attempt was scheduled (`transient` / `reask`, `None` on attempt
    /// 0); `wait`: [`WAIT_BACKOFF`], [`WAIT_RETRY_AFTER`] or [`WAIT_NODE_RETRY`];
    /// `degraded`: the failure-isolation event name.
    pub reason: Option<String>,
    /// `ok`, an error category (the derived one for node failures), `running` (no
    /// terminal event seen) or, on `wait` / `degraded` rows, what was caught or waited
    /// for.
    pub status: String,
    /// When the row begins, from the start of the run.
    pub start: Duration,
    /// How long it lasted (zero for a `degraded` mark).
    pub duration: Duration,
    /// `llm`: the tokens the attempt was billed for (a reply's usage, including a
    /// reply that failed validation).
    pub tokens: Option<u64>,
    /// `llm` / `wait` between wire attempts: the call's id.
    pub call_id: Option<String>,
    /// A short human-readable description (error message, asked `Retry-After`).
    pub detail: String,
}

/// Token use per node path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NodeTokens {
    /// The node's path with fan-out indices.
    pub node: String,
    /// LLM wire attempts the node made.
    pub llm_attempts: usize,
    /// Tokens billed over every attempt.
    pub billed: u64,
    /// Tokens of the calls' final replies.
    pub final_tokens: u64,
}

/// The run's totals.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Summary {
    /// From the first event to the last.
    pub duration: Duration,
    /// Invocations seen.
    pub invocations: usize,
    /// Node attempts (`node` rows).
    pub node_attempts: usize,
    /// LLM `complete()` calls (distinct call ids).
    pub llm_calls: usize,
    /// LLM wire attempts (`llm` rows).
    pub llm_attempts: usize,
    /// Wire attempts scheduled by a retry (a retry reason set).
    pub llm_retries: usize,
    /// Of those, reasks.
    pub reasks: usize,
    /// Waits that followed a `Retry-After`.
    pub retry_after_waits: usize,
    /// Time spent in waits (every `wait` row).
    pub waited: Duration,
    /// Degradations (`degraded` rows).
    pub degraded: usize,
    /// Tokens billed over every wire attempt.
    pub tokens_billed: u64,
    /// Tokens of the calls' final replies.
    pub tokens_final: u64,
}

/// A run as rows in time order, each node attempt followed by what happened inside
/// it (its LLM attempts, the waits between them, its degradation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Waterfall {
    /// The rows.
    pub rows: Vec<Row>,
    /// Token use per node, most billed first.
    pub tokens: Vec<NodeTokens>,
    /// The totals.
    pub summary: Summary,
}

impl Waterfall {
    /// The rows of one kind.
    pub fn rows_of(&self, kind: RowKind) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(move |r| r.kind == kind)
    }
}
