//! The usage report: per logical call and per invocation, `final` (the successful
//! attempt) and `billed` (every attempt that reported usage).

use openarmature_core::vocab::llm::LlmUsage;

/// Token counts (unreported counters add nothing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub struct TokenCounts {
    /// Input (prompt) tokens.
    pub input: u64,
    /// Output (completion) tokens.
    pub output: u64,
    /// Total tokens (the reported total, else input + output).
    pub total: u64,
}

impl TokenCounts {
    /// The counts of one usage record; `None` when it reported nothing.
    pub fn of(usage: &LlmUsage) -> Option<TokenCounts> {
        if usage.prompt_tokens.is_none()
            && usage.completion_tokens.is_none()
            && usage.total_tokens.is_none()
        {
            return None;
        }
        let input = usage.prompt_tokens.unwrap_or(0);
        let output = usage.completion_tokens.unwrap_or(0);
        Some(TokenCounts {
            input,
            output,
            total: usage.total_tokens.unwrap_or(input.saturating_add(output)),
        })
    }

    /// Adds `other` (saturating).
    pub fn add(&mut self, other: &TokenCounts) {
        self.input = self.input.saturating_add(other.input);
        self.output = self.output.saturating_add(other.output);
        self.total = self.total.saturating_add(other.total);
    }
}

/// One attempt as accounted.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AttemptUsage {
    /// The `complete()` call it belongs to (empty when the event carried none).
    pub call_id: String,
    /// The node-level attempt index (`None` outside a graph).
    pub node_attempt_index: Option<u32>,
    /// The call-level attempt index.
    pub attempt_index: u32,
    /// Whether the attempt returned a response.
    pub succeeded: bool,
    /// The error category of a failed attempt.
    pub error_category: Option<String>,
    /// The usage it reported (`None`: none).
    pub usage: Option<TokenCounts>,
}

impl AttemptUsage {
    /// Whether the attempt reached the provider (a breaker refusal did not).
    pub fn sent(&self) -> bool {
        self.error_category.as_deref() != Some("provider_circuit_open")
    }
}

/// One logical call: every attempt of one call site in one node execution, across
/// both retry lanes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CallUsage {
    /// Stable across the call-level and node-level retries of the call (see the
    /// module docs for its form).
    pub logical_call_id: String,
    /// The `complete()` call ids, one per node-level attempt that made the call.
    pub call_ids: Vec<String>,
    /// The calling node, when known.
    pub node_name: Option<String>,
    /// Every attempt, in arrival order.
    pub attempts: Vec<AttemptUsage>,
}

impl CallUsage {
    /// The successful attempt's usage (the latest success; `None` if none
    /// succeeded or it reported no usage).
    pub fn final_usage(&self) -> Option<TokenCounts> {
        self.attempts
            .iter()
            .rev()
            .find(|a| a.succeeded)
            .and_then(|a| a.usage)
    }

    /// The sum over every attempt that reported usage (failed and reask attempts
    /// included).
    pub fn billed(&self) -> TokenCounts {
        let mut sum = TokenCounts::default();
        for u in self.attempts.iter().filter_map(|a| a.usage.as_ref()) {
            sum.add(u);
        }
        sum
    }

    /// Whether some attempt succeeded.
    pub fn succeeded(&self) -> bool {
        self.attempts.iter().any(|a| a.succeeded)
    }

    /// Requests that reached the provider.
    pub fn wire_requests(&self) -> usize {
        self.attempts.iter().filter(|a| a.sent()).count()
    }
}

/// One invocation's usage (calls outside a graph are under invocation id `""`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct InvocationUsage {
    /// The invocation id.
    pub invocation_id: String,
    /// Its logical calls, in order of first attempt.
    pub calls: Vec<CallUsage>,
    /// Attempts whose event carried no call id: billed, never dropped.
    pub unattributed: Vec<AttemptUsage>,
}

impl InvocationUsage {
    /// The sum of the calls' final usage.
    pub fn final_usage(&self) -> TokenCounts {
        let mut sum = TokenCounts::default();
        for u in self.calls.iter().filter_map(CallUsage::final_usage) {
            sum.add(&u);
        }
        sum
    }

    /// Everything billed: every call's attempts and the unattributed ones.
    pub fn billed(&self) -> TokenCounts {
        let mut sum = TokenCounts::default();
        for c in &self.calls {
            sum.add(&c.billed());
        }
        for u in self.unattributed.iter().filter_map(|a| a.usage.as_ref()) {
            sum.add(u);
        }
        sum
    }

    /// The logical call with `call_id` among its call ids.
    pub fn call(&self, call_id: &str) -> Option<&CallUsage> {
        self.calls
            .iter()
            .find(|c| c.call_ids.iter().any(|id| id == call_id))
    }
}
