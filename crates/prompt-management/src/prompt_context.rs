//! Spec: prompt-management §12 (the prompt-context binding that drives the
//! `openarmature.prompt.*` span attributes and the typed LLM events'
//! `active_prompt` / `active_prompt_group` / `token_budget`).
//!
//! The binding is task-scoped: [`scope_prompt`] and [`scope_prompt_group`] run a future
//! with a prompt (or a prompt group) active, and [`current`] reads what is active at the
//! point an LLM call is made. Bindings nest: a prompt bound inside a group keeps the
//! group, and an inner binding shadows an outer one of the same kind until its future
//! ends. The binding follows the future, not the thread: a task spawned with
//! `tokio::spawn` starts with nothing bound; carry the context over with [`scope`].
//!
//! The types live in `openarmature_core::vocab::prompt` (the typed LLM events carry
//! them) and the task-local in `openarmature_graph::ambient`; [`PromptResult::scope`]
//! and [`PromptGroup::scope`] are the usual way in.
//!
//! [`PromptResult::scope`]: crate::PromptResult::scope
//! [`PromptGroup::scope`]: crate::PromptGroup::scope

use std::future::Future;

use openarmature_graph::ambient;

pub use openarmature_core::vocab::prompt::{
    BoundKind, BudgetBound, BudgetEvaluation, PromptContext, PromptGroupIdentity, PromptIdentity,
    TokenBudget,
};

/// What is bound in the current task (empty outside any binding).
pub fn current() -> PromptContext {
    ambient::get_or_default::<PromptContext>()
}

/// Runs `fut` with `context` bound (e.g. to carry the caller's binding into a spawned
/// task).
pub async fn scope<F: Future>(context: PromptContext, fut: F) -> F::Output {
    ambient::scope(context, fut).await
}

/// Runs `fut` with `prompt` (and its declared `token_budget`) as the active prompt,
/// keeping any active group. LLM calls made inside carry the identity on their typed
/// events and spans.
pub async fn scope_prompt<F: Future>(
    prompt: PromptIdentity,
    token_budget: Option<TokenBudget>,
    fut: F,
) -> F::Output {
    scope(current().with_prompt(prompt, token_budget), fut).await
}

/// Runs `fut` with `group` as the active prompt group, keeping any active prompt.
pub async fn scope_prompt_group<F: Future>(group: PromptGroupIdentity, fut: F) -> F::Output {
    scope(current().with_group(group), fut).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(name: &str) -> PromptIdentity {
        PromptIdentity::new(name, "v1", "production", "t", "r")
    }

    #[tokio::test]
    async fn bindings_nest_and_unwind() {
        assert!(current().is_empty());
        scope_prompt_group(PromptGroupIdentity::new("g"), async {
            assert_eq!(current().group().map(|g| g.group_name.as_str()), Some("g"));
            assert!(current().prompt().is_none());
            scope_prompt(id("a"), None, async {
                let ctx = current();
                assert_eq!(ctx.prompt().map(|p| p.name.as_str()), Some("a"));
                assert_eq!(ctx.group().map(|g| g.group_name.as_str()), Some("g"));
                scope_prompt(id("b"), Some(TokenBudget::new(Some(1), None)), async {
                    assert_eq!(current().prompt().map(|p| p.name.as_str()), Some("b"));
                    assert!(current().token_budget().is_some());
                })
                .await;
                assert_eq!(current().prompt().map(|p| p.name.as_str()), Some("a"));
                assert!(current().token_budget().is_none());
            })
            .await;
            assert!(current().prompt().is_none());
        })
        .await;
        assert!(current().is_empty());
    }

    #[tokio::test]
    async fn spawned_tasks_start_unbound_unless_carried() {
        scope_prompt(id("a"), None, async {
            let bare = tokio::spawn(async { current().is_empty() }).await;
            assert_eq!(bare.ok(), Some(true));
            let carried = tokio::spawn(scope(current(), async { current().prompt().cloned() }))
                .await
                .ok()
                .flatten();
            assert_eq!(carried.map(|p| p.name), Some("a".to_owned()));
        })
        .await;
    }
}
