//! Spec: sessions §4 (shape and projection), §6.3 (auto-save opt-out), §7 (migration
//! registration), §8 (concurrency policy) — what a graph registers.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::SessionError;
use crate::checkpoint::MigrationRegistry;
use crate::error::{BoxError, CompileError};
use crate::state::State;

/// A graph's session registration: the store and the rules the engine applies at
/// invoke entry and exit. Pass it to [`crate::GraphBuilder::sessions`].
///
/// Defaults: full-state sessions (§4.1; call [`SessionConfig::project`] for the
/// recommended §4.2 projection), auto-save on (§6.1), last-write-wins (§8.1), the
/// graph's declared schema version.
#[derive(Clone)]
pub struct SessionConfig {
    pub(crate) store: Arc<dyn super::SessionStore>,
    pub(crate) auto_save: bool,
    pub(crate) optimistic: bool,
    /// `(session field, state field)` pairs; `None` = the whole state.
    pub(crate) projection: Option<Vec<(String, String)>>,
    pub(crate) schema_version: Option<String>,
    pub(crate) migrations: MigrationRegistry,
}

impl fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionConfig")
            .field("auto_save", &self.auto_save)
            .field("optimistic", &self.optimistic)
            .field("projection", &self.projection)
            .field("schema_version", &self.schema_version)
            .field("migrations", &self.migrations)
            .finish_non_exhaustive()
    }
}

impl SessionConfig {
    /// Sessions stored in `store`, with the defaults above.
    pub fn new(store: Arc<dyn super::SessionStore>) -> Self {
        SessionConfig {
            store,
            auto_save: true,
            optimistic: false,
            projection: None,
            schema_version: None,
            migrations: MigrationRegistry::new(),
        }
    }

    /// Turns the save at `END` on (the default) or off (§6.3). Off, a session persists
    /// only through [`crate::NodeCtx::save_session`].
    pub fn auto_save(mut self, on: bool) -> Self {
        self.auto_save = on;
        self
    }

    /// Optimistic concurrency (§8.2): every save expects the version this invocation
    /// loaded (or last saved; no record at all when it loaded none), and a concurrent
    /// writer in between makes the save fail with `session_write_conflict` instead of
    /// being overwritten. Never retried by the engine. Off (the default): last-write-wins.
    pub fn optimistic_concurrency(mut self, on: bool) -> Self {
        self.optimistic = on;
        self
    }

    /// Projects the session onto these state fields, same names on both sides (§4.2):
    /// only they are loaded and saved; every other state field is per-invoke scratch.
    pub fn project<I, F>(mut self, fields: I) -> Self
    where
        I: IntoIterator<Item = F>,
        F: Into<String>,
    {
        let pairs = self.projection.get_or_insert_with(Vec::new);
        for f in fields {
            let f = f.into();
            pairs.push((f.clone(), f));
        }
        self
    }

    /// Projects session field `session_field` onto state field `state_field` (§4.2
    /// explicit mapping, for names that differ).
    pub fn project_as(
        mut self,
        session_field: impl Into<String>,
        state_field: impl Into<String>,
    ) -> Self {
        self.projection
            .get_or_insert_with(Vec::new)
            .push((session_field.into(), state_field.into()));
        self
    }

    /// The session state's schema version (§7), written on every record and compared
    /// at load. Unset: the graph's [`crate::GraphBuilder::schema_version`].
    pub fn schema_version(mut self, version: impl Into<String>) -> Self {
        self.schema_version = Some(version.into());
        self
    }

    /// Registers a session migration from `from_version` to `to_version` (§7): it
    /// receives the loaded record's state (a JSON object) and returns it in the
    /// target version's shape. Must be pure.
    ///
    /// # Errors
    /// [`SessionError::MigrationChainAmbiguous`] when a migration for the same pair is
    /// already registered (the registration is refused, neither is dropped silently).
    pub fn migration<F>(
        mut self,
        from_version: impl Into<String>,
        to_version: impl Into<String>,
        migrate: F,
    ) -> Result<Self, SessionError>
    where
        F: Fn(Value) -> Result<Value, BoxError> + Send + Sync + 'static,
    {
        self.migrations
            .register(from_version, to_version, Arc::new(migrate))
            .map_err(SessionError::from_migration)?;
        Ok(self)
    }

    /// Resolves the schema version and checks the registration against the graph's
    /// state: projected fields must be declared, the migration set unambiguous (§13).
    pub(crate) fn compile<S: State>(
        mut self,
        defaults: &S,
        graph_schema_version: &str,
    ) -> Result<Arc<SessionConfig>, CompileError> {
        let declared = defaults.field_names();
        for (_, field) in self.projection.iter().flatten() {
            if !declared.contains(field) {
                return Err(CompileError::MappingReferencesUndeclaredField {
                    node: SESSIONS_SITE.into(),
                    side: "parent",
                    field: field.clone(),
                });
            }
        }
        let version = self
            .schema_version
            .get_or_insert_with(|| graph_schema_version.to_owned())
            .clone();
        self.migrations
            .check_unambiguous(&version)
            .map_err(|e| CompileError::Node {
                node: SESSIONS_SITE.into(),
                category: "session_state_migration_chain_ambiguous",
                message: SessionError::from_migration(e).to_string(),
            })?;
        Ok(Arc::new(self))
    }

    /// The resolved schema version (set by `compile`).
    pub(crate) fn version(&self) -> &str {
        self.schema_version
            .as_deref()
            .unwrap_or(crate::checkpoint::UNVERSIONED)
    }
}

/// The pseudo node name compile errors about the session registration carry.
pub(crate) const SESSIONS_SITE: &str = "<sessions>";
