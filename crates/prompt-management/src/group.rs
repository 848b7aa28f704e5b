//! Spec: prompt-management §10 — `PromptGroup`: two or more rendered prompts traced as
//! one logical unit under a shared `group_name`.
//!
//! The group does not run anything. Scope the calls of the group with
//! [`PromptGroup::scope`] (every LLM call inside carries
//! `openarmature.prompt.group_name`) and each member's call with
//! [`PromptResult::scope`], or both at once with [`PromptGroup::scope_member`].

use std::future::Future;

use crate::prompt_context::{scope_prompt, scope_prompt_group, PromptGroupIdentity};

use crate::error::PromptError;
use crate::result::PromptResult;

/// An ordered group of at least two rendered prompts (§10).
#[derive(Debug, Clone, PartialEq)]
pub struct PromptGroup {
    group_name: String,
    members: Vec<PromptResult>,
}

impl PromptGroup {
    /// A group named `group_name` over `members` (in intended call order).
    ///
    /// # Errors
    /// `prompt_group_invalid` when `members` has fewer than two elements.
    pub fn new(
        group_name: impl Into<String>,
        members: Vec<PromptResult>,
    ) -> Result<Self, PromptError> {
        let group_name = group_name.into();
        if members.len() < 2 {
            let message = format!(
                "prompt group {group_name:?} needs at least two members, got {}",
                members.len()
            );
            return Err(PromptError::group_invalid(group_name, message));
        }
        Ok(PromptGroup {
            group_name,
            members,
        })
    }

    /// The group's name.
    pub fn group_name(&self) -> &str {
        &self.group_name
    }

    /// The members, in order.
    pub fn members(&self) -> &[PromptResult] {
        &self.members
    }

    /// The member at `index`, if any.
    pub fn member(&self, index: usize) -> Option<&PromptResult> {
        self.members.get(index)
    }

    /// How many members the group has (always at least two).
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Always `false` (a group has at least two members); present for API symmetry.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The identity record the engine puts on typed LLM events and spans.
    pub fn identity(&self) -> PromptGroupIdentity {
        PromptGroupIdentity::new(self.group_name.clone())
    }

    /// Runs `fut` with this group active (keeping any active prompt). The returned
    /// future does not borrow `self`.
    pub fn scope<F: Future>(&self, fut: F) -> impl Future<Output = F::Output> {
        scope_prompt_group(self.identity(), fut)
    }

    /// Runs `fut` with this group and its member `index` active: the usual way to make
    /// one member's LLM call.
    ///
    /// # Errors
    /// `invalid_argument` (without running `fut`) when `index` is out of range.
    ///
    /// ```
    /// # use openarmature_prompt::{render_prompt, Prompt, PromptGroup, RenderOptions};
    /// # use openarmature_prompt::prompt_context::current;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), openarmature_prompt::PromptError> {
    /// # let r = |n: &str| render_prompt(&Prompt::text(n, "v1", "production", "x"), &(), None,
    /// #     RenderOptions::default());
    /// let group = PromptGroup::new("triage", vec![r("classify")?, r("answer")?])?;
    /// let (group_name, prompt) = group
    ///     .scope_member(1, async {
    ///         let ctx = current();
    ///         (ctx.group().map(|g| g.group_name.clone()), ctx.prompt().map(|p| p.name.clone()))
    ///     })
    ///     .await?;
    /// assert_eq!(group_name.as_deref(), Some("triage"));
    /// assert_eq!(prompt.as_deref(), Some("answer"));
    /// # Ok(()) }
    /// ```
    pub fn scope_member<F: Future>(
        &self,
        index: usize,
        fut: F,
    ) -> impl Future<Output = Result<F::Output, PromptError>> {
        let group = self.identity();
        let member = self
            .members
            .get(index)
            .map(|m| (m.identity(), m.token_budget()));
        let count = self.members.len();
        async move {
            let (identity, budget) = member.ok_or_else(|| {
                PromptError::invalid_argument(format!(
                    "member index {index} is out of range for a group of {count}"
                ))
            })?;
            Ok(scope_prompt_group(group, scope_prompt(identity, budget, fut)).await)
        }
    }
}
