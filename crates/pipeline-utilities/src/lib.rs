//! # openarmature-pipeline
//!
//! Spec: pipeline-utilities (OpenArmature specification, pinned release v0.109.0).
//!
//! Canonical middleware (retry, timing, failure isolation), fan-out and parallel branches. Nothing is implemented yet: this crate currently only names its capability; the middleware lands with issue 3 and fan-out with issue 4.
//!
//! Implementation status per fixture lives in the workspace `conformance.toml`.

/// The OpenArmature capability this crate implements.
pub const SPEC_CAPABILITY: &str = "pipeline-utilities";

/// The OpenArmature specification release this crate targets.
pub const SPEC_VERSION: &str = "0.109.0";

#[cfg(test)]
mod tests {
    #[test]
    fn exposes_capability_and_pinned_version() {
        assert_eq!(super::SPEC_CAPABILITY, "pipeline-utilities");
        assert_eq!(super::SPEC_VERSION.split('.').count(), 3);
    }
}
