//! Spec: llm-provider §8.1.3 (error mapping) and extension 0005 — context-window
//! errors of OpenAI-compatible servers (a project refinement of the 5xx row).
//!
//! A request whose prompt plus output bound does not fit the model's context can
//! never succeed as sent, so retrying it only burns tokens. Recognised bodies:
//!
//! | server | answer |
//! |---|---|
//! | OpenAI | 400, `error.code: context_length_exceeded` |
//! | vLLM | 400, "This model's maximum context length is N tokens ..." |
//! | llama.cpp (`llama-server`) | 400, `type: exceed_context_size_error` / "exceeds the available context size" |
//! | llama.cpp, mid-generation | 500 "Context size has been exceeded." (also as an in-stream `error` chunk) |
//!
//! Each maps to `provider_invalid_request` (non-transient) with the normalized error
//! type [`CONTEXT_LENGTH_EXCEEDED`], whatever its status; the vendor message is kept.

use super::errors::ErrorBody;

/// The error type every recognised context-window error carries
/// ([`crate::LlmError::error_type`], [`crate::LlmError::is_context_window_exceeded`]).
pub use crate::error::CONTEXT_LENGTH_EXCEEDED;

/// Whether the error body says the request does not fit the model's context.
pub(crate) fn is_context_window_error(e: &ErrorBody) -> bool {
    let lower = |v: &Option<String>| v.as_deref().unwrap_or_default().to_ascii_lowercase();
    let (code, kind, message) = (lower(&e.code), lower(&e.kind), lower(&e.message));
    code == CONTEXT_LENGTH_EXCEEDED
        || kind == CONTEXT_LENGTH_EXCEEDED
        || kind == "exceed_context_size_error"
        || message.contains("maximum context length")
        || message.contains("context size has been exceeded")
        || message.contains("exceeds the available context size")
        || message.contains("context_length_exceeded")
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderMap;

    use super::super::errors::from_status;
    use super::*;
    use crate::error::{ErrorCategory, LlmError};

    fn classify(status: u16, body: &str) -> LlmError {
        from_status(status, &HeaderMap::new(), body.as_bytes())
    }

    fn assert_context(status: u16, body: &str, message: &str) {
        let e = classify(status, body);
        assert_eq!(
            e.category(),
            ErrorCategory::ProviderInvalidRequest,
            "{body}"
        );
        assert!(!e.is_transient());
        assert!(e.is_context_window_exceeded(), "{body}");
        assert_eq!(e.status(), Some(status));
        assert_eq!(e.to_string(), message);
    }

    #[test]
    fn openai_context_length_exceeded() {
        let m = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.";
        let body = format!(
            r#"{{"error":{{"message":"{m}","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}}}"#
        );
        assert_context(400, &body, m);
    }

    #[test]
    fn vllm_maximum_context_length_both_shapes() {
        let m = "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (100 in the messages, 2000 in the completion).";
        let flat = format!(
            r#"{{"object":"error","message":"{m}","type":"BadRequestError","param":null,"code":400}}"#
        );
        assert_context(400, &flat, m);
        let nested = format!(
            r#"{{"error":{{"message":"{m}","type":"BadRequestError","param":null,"code":400}}}}"#
        );
        assert_context(400, &nested, m);
    }

    #[test]
    fn llama_cpp_400_and_mid_generation_500() {
        let m = "the request exceeds the available context size, try increasing it";
        let typed = format!(
            r#"{{"error":{{"code":400,"message":"{m}","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}}}"#
        );
        assert_context(400, &typed, m);
        let older = r#"{"error":{"code":400,"message":"the request exceeds the available context size. try increasing the context size or enable context shift","type":"invalid_request_error"}}"#;
        assert_eq!(
            classify(400, older).error_type(),
            Some(CONTEXT_LENGTH_EXCEEDED)
        );
        let m = "Context size has been exceeded.";
        let body = format!(r#"{{"error":{{"code":500,"message":"{m}","type":"server_error"}}}}"#);
        assert_context(500, &body, m);
    }

    #[test]
    fn other_errors_are_unchanged() {
        let down = classify(
            500,
            r#"{"error":{"code":500,"message":"boom","type":"server_error"}}"#,
        );
        assert_eq!(down.category(), ErrorCategory::ProviderUnavailable);
        assert!(!down.is_context_window_exceeded());
        let bad = classify(
            400,
            r#"{"error":{"message":"missing field","type":"invalid_request_error"}}"#,
        );
        assert_eq!(bad.error_type(), Some("invalid_request_error"));
        assert!(!bad.is_context_window_exceeded());
    }
}
