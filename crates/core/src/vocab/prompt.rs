//! Spec: graph-engine §6 (`LlmCompletionEvent.active_prompt` / `active_prompt_group` /
//! `token_budget`), prompt-management §3 `token_budget`, §4, §10 and §12 (the prompt
//! context that drives the `openarmature.prompt.*` span attributes), observability
//! §5.5.15 (the budget evaluation).
//!
//! The identity records and the budget live here because they are fields of the typed
//! LLM events, which observability reads without depending on `openarmature-prompt`;
//! `openarmature-prompt` builds them from rendered prompts and binds them.

use std::sync::Arc;

use super::llm::LlmUsage;

/// The identity of a rendered prompt (prompt-management §4), as snapshotted on typed LLM
/// events and rendered as the `openarmature.prompt.*` span attributes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct PromptIdentity {
    /// `openarmature.prompt.name`.
    pub name: String,
    /// `openarmature.prompt.version`.
    pub version: String,
    /// `openarmature.prompt.label`.
    pub label: String,
    /// `openarmature.prompt.template_hash`.
    pub template_hash: String,
    /// `openarmature.prompt.rendered_hash`.
    pub rendered_hash: String,
    /// The Langfuse Prompt-entity reference the prompt's source exposes
    /// (prompt-management §3 `observability_entities["langfuse_prompt"]`), as JSON
    /// text; `None` when it exposes none. Observability §8.4.4 links the Langfuse
    /// Generation to it; no OTel attribute renders it.
    pub langfuse_prompt: Option<String>,
}

impl PromptIdentity {
    /// An identity record.
    pub fn new(
        name: impl Into<String>,
        version: impl Into<String>,
        label: impl Into<String>,
        template_hash: impl Into<String>,
        rendered_hash: impl Into<String>,
    ) -> Self {
        PromptIdentity {
            name: name.into(),
            version: version.into(),
            label: label.into(),
            template_hash: template_hash.into(),
            rendered_hash: rendered_hash.into(),
            langfuse_prompt: None,
        }
    }

    /// Attaches the Langfuse Prompt-entity reference (any JSON value; serialized to
    /// JSON text).
    pub fn with_langfuse_prompt(mut self, reference: &serde_json::Value) -> Self {
        self.langfuse_prompt = Some(reference.to_string());
        self
    }
}

/// The identity of a prompt group (prompt-management §10): its `group_name`, rendered as
/// `openarmature.prompt.group_name` on every member call's span.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct PromptGroupIdentity {
    /// `openarmature.prompt.group_name`.
    pub group_name: String,
}

impl PromptGroupIdentity {
    /// A group identity.
    pub fn new(group_name: impl Into<String>) -> Self {
        PromptGroupIdentity {
            group_name: group_name.into(),
        }
    }
}

/// A prompt's advisory token budget (prompt-management §3 `token_budget`): compared
/// against reported usage for observability only; it never changes the request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct TokenBudget {
    /// Ceiling on input (prompt) tokens.
    pub input_max_tokens: Option<u64>,
    /// Ceiling on input + output tokens.
    pub total_max_tokens: Option<u64>,
}

impl TokenBudget {
    /// A budget with the given bounds (`None` = not declared).
    pub fn new(input_max_tokens: Option<u64>, total_max_tokens: Option<u64>) -> Self {
        TokenBudget {
            input_max_tokens,
            total_max_tokens,
        }
    }

    /// The declared bounds `usage` lets us evaluate (observability §5.5.15), input
    /// first: `input` against `prompt_tokens`; `total` against `total_tokens`, else
    /// `prompt_tokens + completion_tokens` when both are reported. A bound whose actual
    /// count is not reported is left out (never treated as zero).
    pub fn bounds(&self, usage: &LlmUsage) -> Vec<BudgetBound> {
        let total = usage.total_tokens.or_else(|| {
            usage
                .prompt_tokens
                .zip(usage.completion_tokens)
                .map(|(p, c)| p.saturating_add(c))
        });
        [
            (BoundKind::Input, self.input_max_tokens, usage.prompt_tokens),
            (BoundKind::Total, self.total_max_tokens, total),
        ]
        .into_iter()
        .filter_map(|(kind, max, actual)| {
            Some(BudgetBound {
                kind,
                actual: actual?,
                max: max?,
            })
        })
        .collect()
    }

    /// Which declared bounds the reported usage crossed (observability §5.5.15), from
    /// [`TokenBudget::bounds`]. Returns `None` when no bound could be evaluated (so no
    /// `openarmature.llm.token_budget.exceeded` attribute is emitted).
    pub fn evaluate(&self, usage: &LlmUsage) -> Option<BudgetEvaluation> {
        let bounds = self.bounds(usage);
        if bounds.is_empty() {
            return None;
        }
        let verdict = |kind| {
            bounds
                .iter()
                .find(|b| b.kind == kind)
                .map(BudgetBound::exceeded)
        };
        Some(BudgetEvaluation {
            input_exceeded: verdict(BoundKind::Input),
            total_exceeded: verdict(BoundKind::Total),
        })
    }
}

/// Which budget bound a [`BudgetBound`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BoundKind {
    /// `input_max_tokens` against the input tokens.
    Input,
    /// `total_max_tokens` against input + output tokens.
    Total,
}

impl BoundKind {
    /// `"input"` / `"total"` (the `openarmature.gen_ai.token_budget.kind` value).
    pub fn as_str(self) -> &'static str {
        match self {
            BoundKind::Input => "input",
            BoundKind::Total => "total",
        }
    }
}

/// One declared bound with the actual count it is evaluated against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BudgetBound {
    /// Which bound.
    pub kind: BoundKind,
    /// The reported (or derived) token count.
    pub actual: u64,
    /// The declared ceiling.
    pub max: u64,
}

impl BudgetBound {
    /// Whether the actual count is strictly over the ceiling.
    pub fn exceeded(&self) -> bool {
        self.actual > self.max
    }
}

/// The outcome of [`TokenBudget::evaluate`]: per bound, `Some(exceeded)` when evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BudgetEvaluation {
    /// The input bound's verdict, when declared and evaluable.
    pub input_exceeded: Option<bool>,
    /// The total bound's verdict, when declared and evaluable.
    pub total_exceeded: Option<bool>,
}

impl BudgetEvaluation {
    /// Whether any evaluated bound was crossed.
    pub fn exceeded(&self) -> bool {
        self.input_exceeded == Some(true) || self.total_exceeded == Some(true)
    }
}

/// What is bound at a point in a task: the active prompt (with its token budget) and the
/// active prompt group. Cheap to clone. `openarmature-prompt` binds it for the duration
/// of a future (`PromptResult::scope`, `PromptGroup::scope`, its `prompt_context`
/// module) and the provider crates read it where a call is made; the binding is a
/// task-local of the engine's (`openarmature_graph::ambient`), keyed by this type.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptContext {
    prompt: Option<Arc<PromptIdentity>>,
    token_budget: Option<TokenBudget>,
    group: Option<Arc<PromptGroupIdentity>>,
}

impl PromptContext {
    /// The active prompt's identity, if a prompt is bound.
    pub fn prompt(&self) -> Option<&PromptIdentity> {
        self.prompt.as_deref()
    }

    /// The active prompt's token budget, if the bound prompt declared one.
    pub fn token_budget(&self) -> Option<TokenBudget> {
        self.token_budget
    }

    /// The active prompt group's identity, if a group is bound.
    pub fn group(&self) -> Option<&PromptGroupIdentity> {
        self.group.as_deref()
    }

    /// Whether nothing is bound.
    pub fn is_empty(&self) -> bool {
        self.prompt.is_none() && self.group.is_none()
    }

    /// This context with `prompt` (and its declared `token_budget`) as the active
    /// prompt; the group is kept.
    pub fn with_prompt(
        mut self,
        prompt: PromptIdentity,
        token_budget: Option<TokenBudget>,
    ) -> Self {
        self.prompt = Some(Arc::new(prompt));
        self.token_budget = token_budget;
        self
    }

    /// This context with `group` as the active prompt group; the prompt is kept.
    pub fn with_group(mut self, group: PromptGroupIdentity) -> Self {
        self.group = Some(Arc::new(group));
        self
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn usage(p: Option<u64>, c: Option<u64>, t: Option<u64>) -> LlmUsage {
        LlmUsage {
            prompt_tokens: p,
            completion_tokens: c,
            total_tokens: t,
            ..LlmUsage::default()
        }
    }

    #[test]
    fn budget_evaluation_skips_unreported_counters() {
        let b = TokenBudget::new(Some(10), Some(8));
        let e = b.evaluate(&usage(Some(20), Some(1), Some(21))).unwrap();
        assert_eq!(
            (e.input_exceeded, e.total_exceeded),
            (Some(true), Some(true))
        );
        // Total derived from the addends when total_tokens is missing.
        let e = b.evaluate(&usage(Some(5), Some(7), None)).unwrap();
        assert_eq!(
            (e.input_exceeded, e.total_exceeded),
            (Some(false), Some(true))
        );
        // Input counter unreported: only total is evaluated.
        let e = b.evaluate(&usage(None, Some(1), Some(4))).unwrap();
        assert_eq!((e.input_exceeded, e.total_exceeded), (None, Some(false)));
        assert!(!e.exceeded());
        // Nothing evaluable.
        let only_input = TokenBudget::new(Some(10), None);
        assert!(only_input
            .evaluate(&usage(None, Some(1), Some(3)))
            .is_none());
        // Equal to the bound is not over it.
        assert!(!only_input
            .evaluate(&usage(Some(10), None, None))
            .unwrap()
            .exceeded());
    }

    fn kinds(b: &[BudgetBound]) -> Vec<(&str, u64, u64)> {
        b.iter()
            .map(|s| (s.kind.as_str(), s.actual, s.max))
            .collect()
    }

    #[test]
    fn bounds_list_only_reported_counters() {
        let both = TokenBudget::new(Some(10), Some(8));
        assert_eq!(
            kinds(&both.bounds(&usage(Some(20), Some(1), Some(21)))),
            [("input", 20, 10), ("total", 21, 8)]
        );
        // Null prompt_tokens: the input bound drops out, the total one stays.
        assert_eq!(
            kinds(&both.bounds(&usage(None, Some(5), Some(12)))),
            [("total", 12, 8)]
        );
        // A total derived from both addends; no total when an addend is missing.
        assert_eq!(
            kinds(&both.bounds(&usage(Some(3), Some(4), None))),
            [("input", 3, 10), ("total", 7, 8)]
        );
        assert!(both.bounds(&usage(None, Some(4), None)).is_empty());
        // Undeclared bounds are never evaluated.
        let none = TokenBudget::new(None, None);
        assert!(none.bounds(&usage(Some(1), Some(1), Some(2))).is_empty());
    }
}
