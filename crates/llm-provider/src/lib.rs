//! # openarmature-llm
//!
//! Spec: llm-provider (OpenArmature specification, pinned release v0.109.0).
//!
//! The LLM provider abstraction (OpenAI-compatible over HTTP) with call-level retry. Nothing is implemented yet: the provider lands with issue 5.
//!
//! Implementation status per fixture lives in the workspace `conformance.toml`.

/// The OpenArmature capability this crate implements.
pub const SPEC_CAPABILITY: &str = "llm-provider";

/// The OpenArmature specification release this crate targets.
pub const SPEC_VERSION: &str = "0.109.0";

#[cfg(test)]
mod tests {
    #[test]
    fn exposes_capability_and_pinned_version() {
        assert_eq!(super::SPEC_CAPABILITY, "llm-provider");
        assert_eq!(super::SPEC_VERSION.split('.').count(), 3);
    }
}
