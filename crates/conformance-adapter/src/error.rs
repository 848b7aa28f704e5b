//! Spec: conformance-adapter §9 — harness errors.

use std::path::PathBuf;

/// An error raised by the harness itself (as opposed to an assertion failure).
///
/// Every variant names the fixture file and, where there is one, the directive.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdapterError {
    /// A directive the adapter does not know (§9 `fixture_directive_unknown`).
    #[error("fixture_directive_unknown: {file}: unknown directive `{directive}` at {location}")]
    DirectiveUnknown {
        /// Fixture file.
        file: PathBuf,
        /// The unknown key.
        directive: String,
        /// Where in the document (a dotted path).
        location: String,
    },
    /// Broken YAML or a directive of the wrong shape (§9 `fixture_schema_invalid`).
    #[error("fixture_schema_invalid: {file}: {location}: {message}")]
    SchemaInvalid {
        /// Fixture file.
        file: PathBuf,
        /// Where in the document (a dotted path, or `document`).
        location: String,
        /// What is wrong.
        message: String,
    },
    /// The fixture pins a newer conformance-adapter version (§9 `fixture_version_unsupported`).
    #[error("fixture_version_unsupported: {file}: fixture targets conformance_version {declared}, adapter implements {supported}")]
    VersionUnsupported {
        /// Fixture file.
        file: PathBuf,
        /// The fixture's `conformance_version`.
        declared: String,
        /// [`crate::CONFORMANCE_VERSION`].
        supported: String,
    },
    /// A harness primitive the adapter does not provide (§9 `harness_primitive_missing`).
    #[error("harness_primitive_missing: {file}: {primitive}")]
    PrimitiveMissing {
        /// Fixture file.
        file: PathBuf,
        /// The missing primitive.
        primitive: String,
    },
    /// The fixture file could not be read.
    #[error("io error reading {file}: {source}")]
    Io {
        /// Fixture file.
        file: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

impl AdapterError {
    /// The §9 category identifier (`io` for read failures).
    pub fn category(&self) -> &'static str {
        match self {
            AdapterError::DirectiveUnknown { .. } => "fixture_directive_unknown",
            AdapterError::SchemaInvalid { .. } => "fixture_schema_invalid",
            AdapterError::VersionUnsupported { .. } => "fixture_version_unsupported",
            AdapterError::PrimitiveMissing { .. } => "harness_primitive_missing",
            AdapterError::Io { .. } => "io",
        }
    }
}
