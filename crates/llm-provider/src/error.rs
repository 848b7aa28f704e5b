//! Spec: llm-provider §7 — the nine error categories and their retry classification.
//!
//! Every failure of `ready()` or `complete()` is an [`LlmError`]. Its
//! [`category`](LlmError::category) is the spec identifier and
//! [`is_transient`](LlmError::is_transient) the §7 retry classification.
//!
//! # In a node body
//!
//! [`LlmError`] implements [`Categorized`]: `?` inside a node converts it into the
//! engine's [`NodeError`](openarmature_graph::NodeError) with its category and
//! transience captured, so retry middleware, failure isolation and node events see the
//! category, and [`LlmError::find_in`] still recovers the typed error (its
//! `retry_after`, its structured-output surface) from any cause chain.
//!
//! ```
//! # use openarmature_llm::{ErrorCategory, LlmError};
//! # use openarmature_graph::{Category, NodeError};
//! fn node_step() -> Result<(), NodeError> {
//!     Err(LlmError::new(ErrorCategory::ProviderRateLimit, "slow down"))?
//! }
//! let err = node_step().unwrap_err();
//! assert_eq!(err.category(), Some(Category::PROVIDER_RATE_LIMIT));
//! assert!(err.is_transient());
//! assert!(LlmError::find_in(&*err).is_some());
//! ```

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use openarmature_graph::{Categorized, CategorizedError, Category};
#[cfg(feature = "providers")]
use openarmature_http::TransportError;
use serde_json::Value;

use crate::response::{FinishReason, Usage};

/// The error type every recognised context-window error carries (extension 0005;
/// see `openai::CONTEXT_LENGTH_EXCEEDED`).
pub const CONTEXT_LENGTH_EXCEEDED: &str = "context_length_exceeded";

/// A shared underlying cause (a transport error, a JSON error, ...).
pub type Cause = Arc<dyn StdError + Send + Sync + 'static>;

/// The llm-provider §7 error categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCategory {
    /// Authentication failed (invalid key, expired token, missing credentials).
    ProviderAuthentication,
    /// The provider is unreachable (network failure, 5xx, timeout).
    ProviderUnavailable,
    /// The bound model does not exist on this provider.
    ProviderInvalidModel,
    /// The bound model is known but not currently serving.
    ProviderModelNotLoaded,
    /// The provider rate-limited the request.
    ProviderRateLimit,
    /// A successful response could not be parsed into the §6 shape.
    ProviderInvalidResponse,
    /// The request was malformed (pre-send validation, or a 400).
    ProviderInvalidRequest,
    /// The bound model does not support a content block used in the request.
    ProviderUnsupportedContentBlock,
    /// The content did not parse as JSON or did not validate against `response_schema`.
    StructuredOutputInvalid,
    /// Extension 0004: the endpoint's circuit breaker is open; nothing was sent.
    ProviderCircuitOpen,
    /// Extension 0003: a retry was refused because the retry budget is empty.
    RetryBudgetExhausted,
    /// Extension 0002: the provider asked for a wait above the backoff's cap.
    RetryAfterExceeded,
}

impl ErrorCategory {
    /// The nine §7 categories, in §7 order (the extension categories are in
    /// [`ErrorCategory::EXTENSIONS`]).
    pub const ALL: [ErrorCategory; 9] = [
        ErrorCategory::ProviderAuthentication,
        ErrorCategory::ProviderUnavailable,
        ErrorCategory::ProviderInvalidModel,
        ErrorCategory::ProviderModelNotLoaded,
        ErrorCategory::ProviderRateLimit,
        ErrorCategory::ProviderInvalidResponse,
        ErrorCategory::ProviderInvalidRequest,
        ErrorCategory::ProviderUnsupportedContentBlock,
        ErrorCategory::StructuredOutputInvalid,
    ];

    /// The categories of the opt-in extensions (spec/extensions/ 0002–0004); all
    /// non-transient. They only occur when an extension is switched on.
    pub const EXTENSIONS: [ErrorCategory; 3] = [
        ErrorCategory::ProviderCircuitOpen,
        ErrorCategory::RetryBudgetExhausted,
        ErrorCategory::RetryAfterExceeded,
    ];

    /// The spec identifier, e.g. `provider_rate_limit` (the core category's).
    pub fn as_str(self) -> &'static str {
        self.as_category().as_str()
    }

    /// The §7 retry classification, the core category's: `provider_unavailable`,
    /// `provider_rate_limit` and `provider_model_not_loaded` are transient; the other
    /// provider categories are not.
    pub fn is_transient(self) -> bool {
        self.as_category().is_transient()
    }
}

impl fmt::Display for ErrorCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a provider (or the pre-send validation) reported: the message, the HTTP
/// status and vendor error type when there was a response, and the underlying cause.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct ProviderFailure {
    /// The human-readable message (the provider body's `error.message` when present).
    pub message: String,
    /// The HTTP status, when the provider answered.
    pub status: Option<u16>,
    /// The vendor error type or code (e.g. the body's `error.type`), if any.
    pub error_type: Option<String>,
    /// `Retry-After` / `retry-after-ms`, for rate limits.
    pub retry_after: Option<Duration>,
    /// The underlying error (transport, JSON, ...).
    #[source]
    pub source: Option<Cause>,
}

impl ProviderFailure {
    /// A failure with only a message.
    pub fn new(message: impl Into<String>) -> Self {
        ProviderFailure {
            message: message.into(),
            status: None,
            error_type: None,
            retry_after: None,
            source: None,
        }
    }
}

/// The `structured_output_invalid` surface (llm-provider §7, proposal 0082): the
/// requested schema, the verbatim content, the failure description, and the
/// response's finish reason and usage.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", self.describe())]
#[non_exhaustive]
pub struct StructuredOutputInvalid {
    /// The `response_schema` the call supplied.
    pub response_schema: Value,
    /// The content the model produced, verbatim.
    pub output_content: String,
    /// Why it failed: the JSON parse error, or the schema violations (with their
    /// JSON Pointers).
    pub error_message: String,
    /// The response's normalized finish reason.
    pub finish_reason: FinishReason,
    /// The response's token usage.
    pub usage: Usage,
    /// The provider's response id, if any.
    pub response_id: Option<String>,
    /// The model the provider reported, if any.
    pub response_model: Option<String>,
    /// The parsed provider response, verbatim.
    pub raw: Value,
}

/// An llm-provider error: one variant per §7 category.
///
/// `Display` is the message alone (for a provider error, the body's `error.message`
/// verbatim); [`LlmError::category`] names the category. `source()` is the
/// underlying cause, when there is one.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// `provider_authentication`.
    #[error(transparent)]
    Authentication(ProviderFailure),
    /// `provider_unavailable`.
    #[error(transparent)]
    Unavailable(ProviderFailure),
    /// `provider_invalid_model`.
    #[error(transparent)]
    InvalidModel(ProviderFailure),
    /// `provider_model_not_loaded`.
    #[error(transparent)]
    ModelNotLoaded(ProviderFailure),
    /// `provider_rate_limit`; see [`LlmError::retry_after`].
    #[error(transparent)]
    RateLimit(ProviderFailure),
    /// `provider_invalid_response`.
    #[error(transparent)]
    InvalidResponse(ProviderFailure),
    /// `provider_invalid_request`.
    #[error(transparent)]
    InvalidRequest(ProviderFailure),
    /// `provider_unsupported_content_block`.
    #[error(transparent)]
    UnsupportedContentBlock(ProviderFailure),
    /// `structured_output_invalid`.
    #[error(transparent)]
    StructuredOutputInvalid(Box<StructuredOutputInvalid>),
    /// `provider_circuit_open` (extension 0004).
    #[error(transparent)]
    CircuitOpen(ProviderFailure),
    /// `retry_budget_exhausted` (extension 0003); the source is the last error.
    #[error(transparent)]
    RetryBudgetExhausted(ProviderFailure),
    /// `retry_after_exceeded` (extension 0002); the source is the last error.
    #[error(transparent)]
    RetryAfterExceeded(ProviderFailure),
}

impl LlmError {
    /// An error of `category` with `message`. For `structured_output_invalid` the
    /// surface fields are left empty; build [`LlmError::StructuredOutputInvalid`]
    /// directly to carry them.
    pub fn new(category: ErrorCategory, message: impl Into<String>) -> Self {
        Self::from_failure(category, ProviderFailure::new(message))
    }

    /// An error of `category` carrying `failure`.
    pub fn from_failure(category: ErrorCategory, failure: ProviderFailure) -> Self {
        match category {
            ErrorCategory::ProviderAuthentication => LlmError::Authentication(failure),
            ErrorCategory::ProviderUnavailable => LlmError::Unavailable(failure),
            ErrorCategory::ProviderInvalidModel => LlmError::InvalidModel(failure),
            ErrorCategory::ProviderModelNotLoaded => LlmError::ModelNotLoaded(failure),
            ErrorCategory::ProviderRateLimit => LlmError::RateLimit(failure),
            ErrorCategory::ProviderInvalidResponse => LlmError::InvalidResponse(failure),
            ErrorCategory::ProviderInvalidRequest => LlmError::InvalidRequest(failure),
            ErrorCategory::ProviderUnsupportedContentBlock => {
                LlmError::UnsupportedContentBlock(failure)
            }
            ErrorCategory::ProviderCircuitOpen => LlmError::CircuitOpen(failure),
            ErrorCategory::RetryBudgetExhausted => LlmError::RetryBudgetExhausted(failure),
            ErrorCategory::RetryAfterExceeded => LlmError::RetryAfterExceeded(failure),
            ErrorCategory::StructuredOutputInvalid => {
                LlmError::StructuredOutputInvalid(Box::new(StructuredOutputInvalid {
                    response_schema: Value::Null,
                    output_content: String::new(),
                    error_message: failure.message,
                    finish_reason: FinishReason::Error,
                    usage: Usage::default(),
                    response_id: None,
                    response_model: None,
                    raw: Value::Null,
                }))
            }
        }
    }

    /// A `provider_invalid_request` (pre-send validation failure).
    pub fn invalid_request(message: impl Into<String>) -> Self {
        LlmError::InvalidRequest(ProviderFailure::new(message))
    }

    /// A `provider_invalid_response`.
    pub fn invalid_response(message: impl Into<String>) -> Self {
        LlmError::InvalidResponse(ProviderFailure::new(message))
    }

    /// A `provider_unavailable`.
    pub fn unavailable(message: impl Into<String>) -> Self {
        LlmError::Unavailable(ProviderFailure::new(message))
    }

    /// The §7 category.
    pub fn category(&self) -> ErrorCategory {
        match self {
            LlmError::Authentication(_) => ErrorCategory::ProviderAuthentication,
            LlmError::Unavailable(_) => ErrorCategory::ProviderUnavailable,
            LlmError::InvalidModel(_) => ErrorCategory::ProviderInvalidModel,
            LlmError::ModelNotLoaded(_) => ErrorCategory::ProviderModelNotLoaded,
            LlmError::RateLimit(_) => ErrorCategory::ProviderRateLimit,
            LlmError::InvalidResponse(_) => ErrorCategory::ProviderInvalidResponse,
            LlmError::InvalidRequest(_) => ErrorCategory::ProviderInvalidRequest,
            LlmError::UnsupportedContentBlock(_) => ErrorCategory::ProviderUnsupportedContentBlock,
            LlmError::StructuredOutputInvalid(_) => ErrorCategory::StructuredOutputInvalid,
            LlmError::CircuitOpen(_) => ErrorCategory::ProviderCircuitOpen,
            LlmError::RetryBudgetExhausted(_) => ErrorCategory::RetryBudgetExhausted,
            LlmError::RetryAfterExceeded(_) => ErrorCategory::RetryAfterExceeded,
        }
    }

    /// The §7 retry classification of the category.
    pub fn is_transient(&self) -> bool {
        self.category().is_transient()
    }

    /// The message (equal to `Display`).
    pub fn message(&self) -> &str {
        match self.failure() {
            Some(f) => &f.message,
            None => match self {
                LlmError::StructuredOutputInvalid(s) => &s.error_message,
                _ => "",
            },
        }
    }

    /// The provider-failure record (every variant but `StructuredOutputInvalid`).
    pub fn failure(&self) -> Option<&ProviderFailure> {
        match self {
            LlmError::Authentication(f)
            | LlmError::Unavailable(f)
            | LlmError::InvalidModel(f)
            | LlmError::ModelNotLoaded(f)
            | LlmError::RateLimit(f)
            | LlmError::InvalidResponse(f)
            | LlmError::InvalidRequest(f)
            | LlmError::UnsupportedContentBlock(f)
            | LlmError::CircuitOpen(f)
            | LlmError::RetryBudgetExhausted(f)
            | LlmError::RetryAfterExceeded(f) => Some(f),
            LlmError::StructuredOutputInvalid(_) => None,
        }
    }

    fn failure_mut(&mut self) -> Option<&mut ProviderFailure> {
        match self {
            LlmError::Authentication(f)
            | LlmError::Unavailable(f)
            | LlmError::InvalidModel(f)
            | LlmError::ModelNotLoaded(f)
            | LlmError::RateLimit(f)
            | LlmError::InvalidResponse(f)
            | LlmError::InvalidRequest(f)
            | LlmError::UnsupportedContentBlock(f)
            | LlmError::CircuitOpen(f)
            | LlmError::RetryBudgetExhausted(f)
            | LlmError::RetryAfterExceeded(f) => Some(f),
            LlmError::StructuredOutputInvalid(_) => None,
        }
    }

    /// The structured-output surface, for `structured_output_invalid`.
    pub fn structured_output(&self) -> Option<&StructuredOutputInvalid> {
        match self {
            LlmError::StructuredOutputInvalid(s) => Some(s),
            _ => None,
        }
    }

    /// For `provider_rate_limit`: how long the provider asked to wait
    /// (`retry-after-ms`, else `Retry-After` in seconds or as an HTTP date). Also
    /// set on `retry_after_exceeded` (the wait that was refused). A `Retry-After` on
    /// other answers (e.g. a 503) is kept on [`ProviderFailure::retry_after`].
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimit(f) | LlmError::RetryAfterExceeded(f) => f.retry_after,
            _ => None,
        }
    }

    /// The HTTP status, when the provider answered.
    pub fn status(&self) -> Option<u16> {
        self.failure().and_then(|f| f.status)
    }

    /// The vendor error type or code, if any.
    pub fn error_type(&self) -> Option<&str> {
        self.failure().and_then(|f| f.error_type.as_deref())
    }

    /// Attaches the underlying cause.
    pub fn with_source(mut self, source: impl StdError + Send + Sync + 'static) -> Self {
        if let Some(f) = self.failure_mut() {
            f.source = Some(Arc::new(source));
        }
        self
    }

    /// Sets the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        if let Some(f) = self.failure_mut() {
            f.status = Some(status);
        }
        self
    }

    /// Sets the vendor error type.
    pub fn with_error_type(mut self, error_type: Option<String>) -> Self {
        if let Some(f) = self.failure_mut() {
            f.error_type = error_type;
        }
        self
    }

    /// Sets the rate-limit delay.
    pub fn with_retry_after(mut self, retry_after: Option<Duration>) -> Self {
        if let Some(f) = self.failure_mut() {
            f.retry_after = retry_after;
        }
        self
    }

    /// The error as the engine's classifiers see it: a [`CategorizedError`] with this
    /// category, transience and message, and this error as its `source()`.
    pub fn into_categorized(self) -> CategorizedError {
        CategorizedError::new(LlmError::category(&self).as_category(), self.to_string())
            .transient(self.is_transient())
            .with_source(self)
    }

    /// The first [`LlmError`] in `error`'s cause chain (itself included), e.g. under
    /// the [`CategorizedError`] of [`LlmError::into_categorized`].
    pub fn find_in<'e>(error: &'e (dyn StdError + 'static)) -> Option<&'e LlmError> {
        openarmature_graph::find_in::<LlmError>(error)
    }
}

impl ErrorCategory {
    /// The shared [`Category`] of this category (same name and transience).
    pub fn as_category(self) -> Category {
        match self {
            ErrorCategory::ProviderAuthentication => Category::PROVIDER_AUTHENTICATION,
            ErrorCategory::ProviderUnavailable => Category::PROVIDER_UNAVAILABLE,
            ErrorCategory::ProviderInvalidModel => Category::PROVIDER_INVALID_MODEL,
            ErrorCategory::ProviderModelNotLoaded => Category::PROVIDER_MODEL_NOT_LOADED,
            ErrorCategory::ProviderRateLimit => Category::PROVIDER_RATE_LIMIT,
            ErrorCategory::ProviderInvalidResponse => Category::PROVIDER_INVALID_RESPONSE,
            ErrorCategory::ProviderInvalidRequest => Category::PROVIDER_INVALID_REQUEST,
            ErrorCategory::ProviderUnsupportedContentBlock => {
                Category::PROVIDER_UNSUPPORTED_CONTENT_BLOCK
            }
            ErrorCategory::StructuredOutputInvalid => Category::STRUCTURED_OUTPUT_INVALID,
            ErrorCategory::ProviderCircuitOpen => Category::PROVIDER_CIRCUIT_OPEN,
            ErrorCategory::RetryBudgetExhausted => Category::RETRY_BUDGET_EXHAUSTED,
            ErrorCategory::RetryAfterExceeded => Category::RETRY_AFTER_EXCEEDED,
        }
    }
}

impl LlmError {
    /// Whether this is a recognised context-window error of an OpenAI-compatible
    /// server (error type `context_length_exceeded`): shorten the prompt or lower
    /// `max_tokens`; retrying as is cannot succeed.
    pub fn is_context_window_exceeded(&self) -> bool {
        self.error_type() == Some(CONTEXT_LENGTH_EXCEEDED)
    }
}

impl ErrorCategory {
    /// The category of this crate named by a shared [`Category`], if it is one of them.
    pub fn from_category(category: Category) -> Option<ErrorCategory> {
        ErrorCategory::ALL
            .into_iter()
            .chain(ErrorCategory::EXTENSIONS)
            .find(|c| c.as_category() == category)
    }

    /// The §7 category of an HTTP error status before a mapping's refinement
    /// ([`openarmature_http::status_category`], the table shared with
    /// `openarmature-retrieval`).
    #[cfg(feature = "providers")]
    pub(crate) fn of_status(status: u16) -> ErrorCategory {
        ErrorCategory::from_category(openarmature_http::status_category(status))
            .unwrap_or(ErrorCategory::ProviderUnavailable)
    }
}

/// A transport failure keeps its category, message and cause (`source()` is the
/// reqwest or URL error itself).
#[cfg(feature = "providers")]
impl From<TransportError> for LlmError {
    fn from(error: TransportError) -> Self {
        let (category, message, source) = error.into_parts();
        let mut failure = ProviderFailure::new(message);
        failure.source = source.map(Cause::from);
        LlmError::from_failure(
            ErrorCategory::from_category(category).unwrap_or(ErrorCategory::ProviderUnavailable),
            failure,
        )
    }
}

impl Categorized for LlmError {
    fn category(&self) -> Option<Category> {
        Some(LlmError::category(self).as_category())
    }

    fn is_transient(&self) -> bool {
        LlmError::is_transient(self)
    }
}

impl From<LlmError> for CategorizedError {
    fn from(error: LlmError) -> Self {
        error.into_categorized()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use openarmature_graph::{category_of, NodeError};

    #[test]
    fn categories_and_transience() {
        // The names and the transient set are the core categories' (the spec's list is
        // asserted once, in openarmature-core); here: every category maps to its own.
        for c in ErrorCategory::ALL
            .into_iter()
            .chain(ErrorCategory::EXTENSIONS)
        {
            assert_eq!(ErrorCategory::from_category(c.as_category()), Some(c));
            assert_eq!(c.as_str(), c.as_category().as_str());
        }
        assert!(ErrorCategory::ProviderRateLimit.is_transient());
        assert!(!ErrorCategory::ProviderAuthentication.is_transient());
        for c in ErrorCategory::ALL {
            let e = LlmError::new(c, "m");
            assert_eq!(e.category(), c);
            assert_eq!(e.to_string(), "m");
        }
    }

    #[test]
    fn bridge_keeps_category_and_typed_source() {
        let e = LlmError::new(ErrorCategory::ProviderRateLimit, "slow")
            .with_retry_after(Some(Duration::from_secs(3)));
        let c = e.into_categorized();
        assert_eq!(
            category_of(&c).map(|c| c.as_str()),
            Some("provider_rate_limit")
        );
        assert!(c.is_transient());
        let typed = LlmError::find_in(&c).map(LlmError::retry_after);
        assert_eq!(typed, Some(Some(Duration::from_secs(3))));
        assert!(openarmature_pipeline::retry::is_transient(&c));
    }

    #[test]
    fn transport_failures_keep_category_message_and_cause() {
        let e = LlmError::from(TransportError::too_large(16));
        assert_eq!(e.category(), ErrorCategory::ProviderInvalidResponse);
        assert_eq!(e.to_string(), "response body exceeds the 16-byte limit");
        let bad_url = openarmature_http::base_url("not a url").unwrap_err();
        let e = LlmError::from(bad_url);
        assert_eq!(e.category(), ErrorCategory::ProviderInvalidRequest);
        assert!(StdError::source(&e).is_some());
        assert_eq!(
            ErrorCategory::of_status(404),
            ErrorCategory::ProviderInvalidModel
        );
        assert_eq!(
            ErrorCategory::of_status(408),
            ErrorCategory::ProviderUnavailable
        );
    }

    #[test]
    fn question_mark_in_a_node_keeps_the_category_without_a_registry() {
        fn node() -> Result<(), NodeError> {
            Err(LlmError::new(ErrorCategory::ProviderUnavailable, "down"))?
        }
        let err = node().unwrap_err();
        assert_eq!(category_of(&*err), Some(Category::PROVIDER_UNAVAILABLE));
        assert!(openarmature_pipeline::retry::is_transient(&*err));
        // Stored by the engine as a boxed error, the category is still found.
        let boxed = openarmature_graph::erase(err);
        assert_eq!(category_of(&*boxed), Some(Category::PROVIDER_UNAVAILABLE));
        assert!(LlmError::find_in(&*boxed).is_some());
        let other: openarmature_graph::BoxError = "plain".into();
        assert_eq!(category_of(&*other), None);
        for c in ErrorCategory::ALL
            .iter()
            .chain(ErrorCategory::EXTENSIONS.iter())
        {
            assert_eq!(c.as_category().as_str(), c.as_str());
            assert_eq!(c.as_category().is_transient(), c.is_transient());
            assert_eq!(ErrorCategory::from_category(c.as_category()), Some(*c));
        }
        assert_eq!(ErrorCategory::from_category(Category::NODE_EXCEPTION), None);
    }
}
