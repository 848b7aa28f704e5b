//! Extension 0005 (spec/extensions/0005-provider-classification.md): per-provider
//! retry classification from the HTTP status and vendor error type.
//!
//! The spec's default classifier decides from the §7 category alone, so a 409
//! (`provider_invalid_request`) is never retried and an OpenAI 429
//! `insufficient_quota` (`provider_rate_limit`) is retried although it cannot
//! succeed until someone pays. [`ProviderClassifier`] is an opt-in
//! [`Classifier`] for either lane (and for the circuit breaker's failure count)
//! that refines the decision per provider; categories are never changed.
//!
//! | answer | retried |
//! |---|---|
//! | 408, 409, 429, 5xx (incl. Anthropic 529), Anthropic `overloaded_error` | yes |
//! | 400, 401, 403, 404, 422 and every other 4xx | no |
//! | a context-window error (`context_length_exceeded`, incl. llama.cpp's 500) | no |
//! | OpenAI 429 `insufficient_quota`; Anthropic 402 | no |
//! | no HTTP answer (connection failure, timeout) | as the §7 category (`provider_unavailable`: yes) |
//! | an extension stop (`provider_circuit_open`, `retry_budget_exhausted`, `retry_after_exceeded`), `structured_output_invalid` | no |
//! | an error that is not an [`LlmError`] | as the spec's [`DefaultClassifier`] |

use std::error::Error as StdError;

use openarmature_graph::StateView;
use openarmature_pipeline::retry::{Classifier, DefaultClassifier};

use crate::error::{ErrorCategory, LlmError};

/// Which provider's conventions apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ProviderFamily {
    /// HTTP status rules only.
    #[default]
    Generic,
    /// OpenAI (and compatible servers): 429 `insufficient_quota` is not transient.
    OpenAi,
    /// Anthropic: 529 / `overloaded_error` transient, 402 (billing) not.
    Anthropic,
}

impl ProviderFamily {
    /// The family for a provider name (`openai`, `anthropic`; anything else generic).
    pub fn from_name(name: &str) -> Self {
        match name.to_ascii_lowercase().as_str() {
            "openai" | "azure_openai" | "azure-openai" => ProviderFamily::OpenAi,
            "anthropic" => ProviderFamily::Anthropic,
            _ => ProviderFamily::Generic,
        }
    }

    /// Whether `error` is worth retrying under this family's conventions.
    pub fn is_transient(self, error: &LlmError) -> bool {
        if ErrorCategory::EXTENSIONS.contains(&error.category())
            || error.structured_output().is_some()
        {
            return false;
        }
        if error.is_context_window_exceeded() {
            return false;
        }
        let kind = error.error_type().unwrap_or_default();
        match (self, error.status()) {
            (ProviderFamily::Anthropic, _) if kind == "overloaded_error" => true,
            (_, None) => error.is_transient(),
            (ProviderFamily::OpenAi, Some(429)) if kind == "insufficient_quota" => false,
            (ProviderFamily::Anthropic, Some(402)) => false,
            (_, Some(408 | 409 | 429 | 500..=599)) => true,
            (_, Some(_)) => false,
        }
    }
}

/// The opt-in per-provider [`Classifier`] (see the module table).
///
/// # Examples
/// ```
/// use openarmature_llm::resilience::ProviderClassifier;
/// use openarmature_pipeline::retry::RetryConfig;
/// let retry = RetryConfig::default().classifier(ProviderClassifier::openai());
/// # let _ = retry;
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct ProviderClassifier {
    family: ProviderFamily,
}

impl ProviderClassifier {
    /// Classifies under `family`'s conventions.
    pub fn new(family: ProviderFamily) -> Self {
        ProviderClassifier { family }
    }

    /// OpenAI's conventions.
    pub fn openai() -> Self {
        ProviderClassifier::new(ProviderFamily::OpenAi)
    }

    /// Anthropic's conventions.
    pub fn anthropic() -> Self {
        ProviderClassifier::new(ProviderFamily::Anthropic)
    }

    /// HTTP status rules only.
    pub fn generic() -> Self {
        ProviderClassifier::new(ProviderFamily::Generic)
    }

    /// The family.
    pub fn family(&self) -> ProviderFamily {
        self.family
    }
}

impl Classifier for ProviderClassifier {
    fn is_retryable(
        &self,
        error: &(dyn StdError + 'static),
        state: Option<&dyn StateView>,
    ) -> bool {
        match LlmError::find_in(error) {
            Some(e) => self.family.is_transient(e),
            None => DefaultClassifier.is_retryable(error, state),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use openarmature_graph::CategorizedError;

    fn http(category: ErrorCategory, status: u16, kind: Option<&str>) -> LlmError {
        LlmError::new(category, "m")
            .with_status(status)
            .with_error_type(kind.map(str::to_owned))
    }

    #[test]
    fn status_table() {
        let c = ProviderClassifier::openai();
        let retried = |e: LlmError| c.is_retryable(&e.into_categorized(), None);
        for s in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(
                retried(http(ErrorCategory::ProviderUnavailable, s, None)),
                "{s}"
            );
        }
        for s in [400, 401, 403, 404, 422, 413] {
            assert!(
                !retried(http(ErrorCategory::ProviderInvalidRequest, s, None)),
                "{s}"
            );
        }
        assert!(!retried(http(
            ErrorCategory::ProviderRateLimit,
            429,
            Some("insufficient_quota")
        )));
        assert!(retried(http(
            ErrorCategory::ProviderRateLimit,
            429,
            Some("rate_limit_exceeded")
        )));
        assert!(!retried(http(
            ErrorCategory::ProviderInvalidRequest,
            500,
            Some("context_length_exceeded")
        )));
        assert!(retried(LlmError::unavailable("connection refused")));
        assert!(!retried(LlmError::invalid_request("pre-send")));
        assert!(!retried(LlmError::new(
            ErrorCategory::ProviderCircuitOpen,
            "open"
        )));
    }

    #[test]
    fn families_differ_where_vendors_do() {
        let quota = http(
            ErrorCategory::ProviderRateLimit,
            429,
            Some("insufficient_quota"),
        );
        assert!(ProviderFamily::Generic.is_transient(&quota));
        assert!(!ProviderFamily::OpenAi.is_transient(&quota));
        let overloaded = http(
            ErrorCategory::ProviderUnavailable,
            529,
            Some("overloaded_error"),
        );
        assert!(ProviderFamily::Anthropic.is_transient(&overloaded));
        let billing = http(ErrorCategory::ProviderAuthentication, 402, None);
        assert!(!ProviderFamily::Anthropic.is_transient(&billing));
        assert_eq!(ProviderFamily::from_name("OpenAI"), ProviderFamily::OpenAi);
    }

    #[test]
    fn non_llm_errors_use_the_default() {
        let c = ProviderClassifier::generic();
        let e = CategorizedError::new(openarmature_graph::Category::PROVIDER_UNAVAILABLE, "x");
        assert!(c.is_retryable(&e, None));
        let e = CategorizedError::new(openarmature_graph::Category::NODE_EXCEPTION, "x");
        assert!(!c.is_retryable(&e, None));
    }
}
