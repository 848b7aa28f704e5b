//! # openarmature-observability
//!
//! Spec: observability (OpenArmature specification, pinned release v0.109.0).
//!
//! OpenTelemetry spans per node attempt and per LLM attempt, with OTLP export. Nothing is implemented yet: the observer lands with issue 6.
//!
//! Implementation status per fixture lives in the workspace `conformance.toml`.

/// The OpenArmature capability this crate implements.
pub const SPEC_CAPABILITY: &str = "observability";

/// The OpenArmature specification release this crate targets.
pub const SPEC_VERSION: &str = "0.109.0";

#[cfg(test)]
mod tests {
    #[test]
    fn exposes_capability_and_pinned_version() {
        assert_eq!(super::SPEC_CAPABILITY, "observability");
        assert_eq!(super::SPEC_VERSION.split('.').count(), 3);
    }
}
