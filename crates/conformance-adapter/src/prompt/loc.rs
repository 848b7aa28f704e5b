//! Spec: conformance-adapter §9 — where in a fixture a problem sits.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::AdapterError;

/// A fixture file and a dotted location inside it.
#[derive(Debug, Clone)]
pub(super) struct Loc {
    file: Arc<Path>,
    path: String,
}

impl Loc {
    /// `path` (dotted; empty for the document) inside `file`.
    pub(super) fn new(file: &Path, path: &str) -> Self {
        Loc {
            file: Arc::from(file),
            path: path.to_owned(),
        }
    }

    pub(super) fn file(&self) -> &Path {
        &self.file
    }

    /// The dotted location, `document` at the root.
    pub(super) fn path(&self) -> &str {
        if self.path.is_empty() {
            "document"
        } else {
            &self.path
        }
    }

    /// The location of `key` below this one.
    pub(super) fn join(&self, key: &str) -> Loc {
        let path = if self.path.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.path)
        };
        Loc {
            file: Arc::clone(&self.file),
            path,
        }
    }

    /// `fixture_schema_invalid` here.
    pub(super) fn invalid(&self, message: impl Into<String>) -> AdapterError {
        AdapterError::SchemaInvalid {
            file: self.file.to_path_buf(),
            location: self.path().to_owned(),
            message: message.into(),
        }
    }

    /// `fixture_directive_unknown`: the key `directive` of the mapping here.
    pub(super) fn unknown(&self, directive: &str) -> AdapterError {
        self.join(directive).unknown_value(directive)
    }

    /// `fixture_directive_unknown`: `directive` is the (unknown) value here.
    pub(super) fn unknown_value(&self, directive: &str) -> AdapterError {
        AdapterError::DirectiveUnknown {
            file: PathBuf::from(&*self.file),
            directive: directive.to_owned(),
            location: self.path().to_owned(),
        }
    }
}
