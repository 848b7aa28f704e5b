//! Spec: prompt-management §11 — the four error categories (`prompt_not_found`,
//! `prompt_render_error`, `prompt_store_unavailable`, `prompt_group_invalid`).
//!
//! Every failure of a backend fetch, a render, a manager call or a group construction is
//! a [`PromptError`]. [`PromptError::category`] is the spec identifier and
//! [`PromptError::is_transient`] the retry classification (only
//! `prompt_store_unavailable` is transient). Underlying causes (an I/O error, a template
//! engine error, a vendor SDK error) stay reachable through `source()`.
//!
//! Like the llm-provider errors, a [`PromptError`] converts into the engine's
//! [`CategorizedError`] ([`PromptError::into_categorized`]) so node-level retry and
//! failure isolation see the category.

use std::error::Error as StdError;
use std::sync::Arc;

use openarmature_graph::{Categorized, CategorizedError, Category};
use serde_json::{Map, Value};

/// A shared underlying cause (an I/O error, a template error, a vendor SDK error, ...).
pub type Cause = Arc<dyn StdError + Send + Sync + 'static>;

/// `prompt_not_found`.
pub const PROMPT_NOT_FOUND: &str = "prompt_not_found";
/// `prompt_render_error`.
pub const PROMPT_RENDER_ERROR: &str = "prompt_render_error";
/// `prompt_store_unavailable`.
pub const PROMPT_STORE_UNAVAILABLE: &str = "prompt_store_unavailable";
/// `prompt_group_invalid`.
pub const PROMPT_GROUP_INVALID: &str = "prompt_group_invalid";
/// `invalid_argument`: a caller passed a value the API cannot accept (an empty backend
/// list, a malformed label-resolver source, an out-of-range group member index, an
/// unsafe filesystem prompt name). Not one of the four §11 categories; it is this
/// crate's idiom for the spec's "rejected as an invalid argument".
pub const INVALID_ARGUMENT: &str = "invalid_argument";

/// What a failed render exposes (§11): the prompt's identity, the variables that were
/// applied, and a description naming the segment / block / placeholder at fault.
///
/// Variables are recorded as passed; this crate does not redact. Callers holding
/// sensitive values should redact them before rendering (the keys must survive).
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot render prompt ({name:?}, version {version:?}, label {label:?}): {description}")]
#[non_exhaustive]
pub struct RenderFailure {
    /// The prompt's name.
    pub name: String,
    /// The prompt's version.
    pub version: String,
    /// The prompt's label.
    pub label: String,
    /// The variables the render was given.
    pub variables: Map<String, Value>,
    /// What went wrong, and where.
    pub description: String,
    /// The template engine's error, when there was one.
    #[source]
    pub source: Option<Cause>,
}

impl RenderFailure {
    /// A render-failure surface (for custom renderers and test harnesses).
    pub fn new(
        name: impl Into<String>,
        version: impl Into<String>,
        label: impl Into<String>,
        variables: Map<String, Value>,
        description: impl Into<String>,
    ) -> Self {
        RenderFailure {
            name: name.into(),
            version: version.into(),
            label: label.into(),
            variables,
            description: description.into(),
            source: None,
        }
    }
}

/// A prompt-management error: one variant per §11 category, plus
/// [`PromptError::InvalidArgument`].
///
/// `Display` is the message (for a render failure: identity plus description);
/// [`PromptError::category`] names the category.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum PromptError {
    /// `prompt_not_found`: no prompt matches `(name, label)`. Terminal for the
    /// manager's fallback chain.
    #[error("{message}")]
    NotFound {
        /// The requested name.
        name: String,
        /// The requested label.
        label: String,
        /// What the backend reported.
        message: String,
        /// The underlying cause, if any.
        #[source]
        source: Option<Cause>,
    },
    /// `prompt_render_error`.
    #[error(transparent)]
    Render(Box<RenderFailure>),
    /// `prompt_store_unavailable`: the backend (or, from the manager, every backend)
    /// could not be reached.
    #[error("{message}")]
    StoreUnavailable {
        /// The requested name.
        name: String,
        /// The requested label.
        label: String,
        /// What failed.
        message: String,
        /// For the manager's aggregate error: each backend's own error, in the order the
        /// backends were consulted. Empty for a single backend's error.
        causes: Vec<PromptError>,
        /// The underlying cause (for the aggregate: the last backend's error).
        #[source]
        source: Option<Cause>,
    },
    /// `prompt_group_invalid`: a [`crate::PromptGroup`] violated a §10 validity rule.
    #[error("{message}")]
    GroupInvalid {
        /// The group's name.
        group_name: String,
        /// Which rule was violated.
        message: String,
    },
    /// `invalid_argument` (see [`INVALID_ARGUMENT`]).
    #[error("{message}")]
    InvalidArgument {
        /// What was wrong with the argument.
        message: String,
    },
}

impl PromptError {
    /// A `prompt_not_found` for `(name, label)`.
    pub fn not_found(
        name: impl Into<String>,
        label: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        PromptError::NotFound {
            name: name.into(),
            label: label.into(),
            message: message.into(),
            source: None,
        }
    }

    /// A `prompt_store_unavailable` for `(name, label)`.
    pub fn store_unavailable(
        name: impl Into<String>,
        label: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        PromptError::StoreUnavailable {
            name: name.into(),
            label: label.into(),
            message: message.into(),
            causes: Vec::new(),
            source: None,
        }
    }

    /// A `prompt_group_invalid` for the group `group_name`.
    pub fn group_invalid(group_name: impl Into<String>, message: impl Into<String>) -> Self {
        PromptError::GroupInvalid {
            group_name: group_name.into(),
            message: message.into(),
        }
    }

    /// An `invalid_argument`.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        PromptError::InvalidArgument {
            message: message.into(),
        }
    }

    /// A `prompt_render_error` from its surface.
    pub fn render(failure: RenderFailure) -> Self {
        PromptError::Render(Box::new(failure))
    }

    /// Attaches the underlying cause (kept as `source()`); a no-op for the variants
    /// that carry none (`prompt_group_invalid`, `invalid_argument`).
    pub fn with_source(mut self, cause: impl StdError + Send + Sync + 'static) -> Self {
        match &mut self {
            PromptError::NotFound { source, .. } | PromptError::StoreUnavailable { source, .. } => {
                *source = Some(Arc::new(cause));
            }
            PromptError::Render(failure) => failure.source = Some(Arc::new(cause)),
            PromptError::GroupInvalid { .. } | PromptError::InvalidArgument { .. } => {}
        }
        self
    }

    /// The category identifier: exactly `prompt_not_found`, `prompt_render_error`,
    /// `prompt_store_unavailable`, `prompt_group_invalid` (or `invalid_argument`).
    pub fn category(&self) -> &'static str {
        match self {
            PromptError::NotFound { .. } => PROMPT_NOT_FOUND,
            PromptError::Render(_) => PROMPT_RENDER_ERROR,
            PromptError::StoreUnavailable { .. } => PROMPT_STORE_UNAVAILABLE,
            PromptError::GroupInvalid { .. } => PROMPT_GROUP_INVALID,
            PromptError::InvalidArgument { .. } => INVALID_ARGUMENT,
        }
    }

    /// The retry classification: only `prompt_store_unavailable` is transient.
    pub fn is_transient(&self) -> bool {
        matches!(self, PromptError::StoreUnavailable { .. })
    }

    /// The render-failure surface (name, version, label, variables, description), for
    /// `prompt_render_error`.
    pub fn render_failure(&self) -> Option<&RenderFailure> {
        match self {
            PromptError::Render(failure) => Some(failure),
            _ => None,
        }
    }

    /// For the manager's aggregate `prompt_store_unavailable`: each backend's error in
    /// consultation order (empty otherwise).
    pub fn causes(&self) -> &[PromptError] {
        match self {
            PromptError::StoreUnavailable { causes, .. } => causes,
            _ => &[],
        }
    }

    /// The error as the engine's classifiers see it: a [`CategorizedError`] with this
    /// category, transience and message, and this error as its `source()`.
    pub fn into_categorized(self) -> CategorizedError {
        CategorizedError::new(
            openarmature_graph::Category::from_name(self.category()),
            self.to_string(),
        )
        .transient(self.is_transient())
        .with_source(self)
    }
}

impl From<PromptError> for CategorizedError {
    fn from(error: PromptError) -> Self {
        error.into_categorized()
    }
}

/// `?` on a [`PromptError`] inside a node keeps its category and transience.
impl Categorized for PromptError {
    fn category(&self) -> Option<Category> {
        Some(Category::from_name(PromptError::category(self)))
    }

    fn is_transient(&self) -> bool {
        PromptError::is_transient(self)
    }
}
