//! Spec: sessions §3–§11 as the sessions conformance fixtures express them — typed
//! models of a case's sessions-specific directives.
//!
//! The graph definition (`state`, `entry`, `nodes`, `edges`, `subgraphs`) stays raw
//! YAML: it is rewritten by [`super::desugar`] and built by the graph-engine runner's
//! builder (`ge/build.rs`). Everything else is deserialized here, so an unknown or
//! misspelled directive is a `fixture_schema_invalid` error naming it.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value as Json};
use serde_norway::Value as Yv;

use crate::failure::{Check, Failure};

/// One case of a sessions fixture.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Case {
    /// The case name (`cases[].name`; the runner has selected the case by it).
    #[allow(dead_code)]
    pub(super) name: String,
    /// Prose only.
    #[serde(default)]
    #[allow(dead_code)]
    pub(super) description: Option<String>,
    /// The outermost graph's state declaration (`fields`, optional `schema_version`).
    pub(super) state: Yv,
    /// The entry node.
    pub(super) entry: String,
    /// The outermost graph's nodes (sessions vocabulary, see [`super::desugar`]).
    pub(super) nodes: Yv,
    /// The outermost graph's edges.
    pub(super) edges: Yv,
    /// Named subgraph definitions.
    #[serde(default)]
    pub(super) subgraphs: Option<Yv>,
    /// §4.2: the projected `SessionState` (absent: full-state session, §4.1).
    #[serde(default)]
    pub(super) session_state: Option<SessionStateDecl>,
    /// The registered SessionStore (absent: none registered).
    #[serde(default)]
    pub(super) session_store: Option<StoreKind>,
    /// §6.3: `auto_save` on the registration (absent: the default, on).
    #[serde(default)]
    pub(super) auto_save: Option<bool>,
    /// The `session_id` of a single-invocation case (absent: not session-bound).
    #[serde(default)]
    pub(super) session_id: Option<String>,
    /// The initial state of a single-invocation case.
    #[serde(default)]
    pub(super) initial_state: Option<Json>,
    /// A record stored under the case's `session_id` before anything runs.
    #[serde(default)]
    pub(super) seeded_session: Option<SeededSession>,
    /// §7 migrations, registered in order.
    #[serde(default)]
    pub(super) session_migrations: Vec<MigrationDecl>,
    /// Several invocations against one compiled graph and store, in order.
    #[serde(default)]
    pub(super) invocations: Vec<Invocation>,
    /// What the single invocation (or the whole case) leaves behind.
    #[serde(default)]
    pub(super) expected: Expected,
    /// The failure the case expects (at registration or from the invocation).
    #[serde(default)]
    pub(super) expected_error: Option<ExpectedError>,
    /// Named invariants, checked by [`super::invariants`].
    #[serde(default)]
    pub(super) invariants: BTreeMap<String, Json>,
}

/// `session_state: {fields: [...]}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SessionStateDecl {
    /// The state fields the session persists (same names on both sides, §4.2).
    pub(super) fields: Vec<String>,
}

/// `session_store:` — which reference backend (§5.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum StoreKind {
    /// The engine's `InMemorySessionStore`.
    InMemory,
    /// pipeline-utilities' `SqliteSessionStore` on an in-memory database.
    Sqlite,
}

/// `seeded_session: {schema_version?, state}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SeededSession {
    /// The record's schema version (absent: the graph's own, register S3).
    #[serde(default)]
    pub(super) schema_version: Option<String>,
    /// The stored session state.
    pub(super) state: Json,
}

/// `session_migrations[]: {from_version, to_version, migrate}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MigrationDecl {
    /// Input version.
    pub(super) from_version: String,
    /// Output version.
    pub(super) to_version: String,
    /// The harness mock's name (`ge/checkpoint/store/mocks.rs`).
    pub(super) migrate: String,
}

/// One entry of `invocations:`.
#[derive(Debug, Deserialize)]
pub(super) struct Invocation {
    /// The invocation's session id (absent: not session-bound).
    #[serde(default)]
    pub(super) session_id: Option<String>,
    /// Its initial state (absent or null: the defaults).
    #[serde(default)]
    pub(super) initial_state: Option<Json>,
    /// What the engine's `load()` returned: `null` = no record, else the record's state.
    #[serde(default, deserialize_with = "present")]
    pub(super) loaded_session_state: Option<Json>,
    /// The invocation's final state.
    #[serde(default)]
    pub(super) expected_final_state: Option<Json>,
    /// The record the invocation saved.
    #[serde(default)]
    pub(super) saved_session_assertions: Option<SavedSession>,
    /// `loaded_invoke_state_for_<field>: v`: the field's value in the state the entry
    /// node received (the only keys accepted here besides the ones above).
    #[serde(flatten)]
    pub(super) probes: BTreeMap<String, Json>,
}

/// The prefix of an [`Invocation::probes`] key.
pub(super) const PROBE_PREFIX: &str = "loaded_invoke_state_for_";

impl Invocation {
    /// `(field, expected value)` per probe.
    ///
    /// # Errors
    /// A key that is not a `loaded_invoke_state_for_<field>` probe.
    pub(super) fn probes(&self) -> Check<Vec<(&str, &Json)>> {
        self.probes
            .iter()
            .map(|(k, v)| match k.strip_prefix(PROBE_PREFIX) {
                Some(field) if !field.is_empty() => Ok((field, v)),
                _ => Err(Failure::unsupported(format!(
                    "fixture_directive_unknown: invocation directive `{k}`"
                ))),
            })
            .collect()
    }
}

/// `saved_session_assertions: {state?, schema_version?, excludes_fields?}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SavedSession {
    /// The record's state, exactly.
    #[serde(default)]
    pub(super) state: Option<Json>,
    /// The record's schema version.
    #[serde(default)]
    pub(super) schema_version: Option<String>,
    /// Fields the record's state must not hold.
    #[serde(default)]
    pub(super) excludes_fields: Vec<String>,
}

/// `expected:` of a case.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Expected {
    /// The (single) invocation's final state.
    #[serde(default)]
    pub(super) final_state: Option<Json>,
    /// Whether the store saw no `load()`.
    #[serde(default)]
    pub(super) no_session_load: Option<bool>,
    /// Whether the store saw no `save()`.
    #[serde(default)]
    pub(super) no_session_save: Option<bool>,
    /// Whether the store saw no call at all and holds what it held before.
    #[serde(default)]
    pub(super) store_untouched: Option<bool>,
    /// Whether no save ran at `END` (every save was an explicit mid-invoke one).
    #[serde(default)]
    pub(super) no_auto_save_on_end: Option<bool>,
    /// What a `load()` against the store returns after the case ran.
    #[serde(default)]
    pub(super) store_after: Option<StoreAfter>,
    /// The migrations that ran, `from->to`, in order.
    #[serde(default)]
    pub(super) migrations_run: Option<Vec<String>>,
    /// The record the invocation saved last.
    #[serde(default)]
    pub(super) saved_session_assertions: Option<SavedSession>,
    /// The state the (single) subgraph entry node received.
    #[serde(default)]
    pub(super) inner_pre_state: Option<Json>,
    /// The states the fan-out instances' entry nodes received, by instance index.
    #[serde(default)]
    pub(super) instance_pre_states: Option<Vec<Json>>,
    /// The exported span tree (roots), see [`super::telemetry`].
    #[serde(default)]
    pub(super) span_tree: Option<Vec<SpanExpect>>,
    /// The exported log records, in emission order.
    #[serde(default)]
    pub(super) log_records: Option<Vec<LogExpect>>,
}

/// `store_after:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StoreAfter {
    /// `load(id)` returns no record.
    #[serde(default)]
    pub(super) load_returns_none_for_session_id: Option<String>,
    /// `load(id)` returns a record (matched by the two keys below).
    #[serde(default)]
    pub(super) load_returns_for_session_id: Option<String>,
    /// That record's state, exactly.
    #[serde(default)]
    pub(super) loaded_state: Option<Json>,
    /// That record's schema version.
    #[serde(default)]
    pub(super) loaded_schema_version: Option<String>,
}

/// `expected_error:`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ExpectedError {
    /// The canonical category.
    pub(super) category: String,
    /// The node the failure was raised from.
    #[serde(default)]
    pub(super) raised_from: Option<String>,
    /// When it is raised (absent: by the invocation).
    #[serde(default)]
    pub(super) raised_at: Option<RaisedAt>,
    /// Fields the error exposes (§10), compared for equality.
    #[serde(default)]
    pub(super) carries: Option<Map<String, Json>>,
    /// The preserved cause.
    #[serde(default)]
    pub(super) cause: Option<Cause>,
}

/// `raised_at:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum RaisedAt {
    /// By the session registration (a builder call), before any compile or invoke.
    Registration,
}

/// `cause: {exception_type}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Cause {
    /// The cause's type name (the adapter's mocks raise `KeyError`).
    pub(super) exception_type: String,
}

/// One expected span of `span_tree`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SpanExpect {
    /// The span name.
    pub(super) name: String,
    /// `OK` / `ERROR` / `UNSET`.
    #[serde(default)]
    pub(super) status: Option<String>,
    /// Attributes the span carries (a subset).
    #[serde(default)]
    pub(super) attributes: Map<String, Json>,
    /// Attributes the span must not carry.
    #[serde(default)]
    pub(super) attributes_absent: Vec<String>,
    /// The span's children, exhaustively (in any order).
    #[serde(default)]
    pub(super) children: Vec<SpanExpect>,
}

/// One expected record of `log_records`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LogExpect {
    /// The record body.
    pub(super) body: String,
    /// Attributes the record carries (a subset).
    #[serde(default)]
    pub(super) attributes: Map<String, Json>,
    /// Attributes the record must not carry.
    #[serde(default)]
    pub(super) attributes_absent: Vec<String>,
}

/// `#[serde(default, deserialize_with = "present")]`: absent → `None`, present
/// (even `null`) → `Some`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Json>, D::Error> {
    Json::deserialize(d).map(Some)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn null_loaded_state_differs_from_absent() {
        let with_null: Invocation =
            serde_norway::from_str("session_id: s\nloaded_session_state: null\n").unwrap();
        assert_eq!(with_null.loaded_session_state, Some(Json::Null));
        let absent: Invocation = serde_norway::from_str("session_id: s\n").unwrap();
        assert_eq!(absent.loaded_session_state, None);
    }

    #[test]
    fn unknown_invocation_keys_are_refused() {
        let inv: Invocation =
            serde_norway::from_str("loaded_invoke_state_for_x: 1\nbogus: 2\n").unwrap();
        let err = inv.probes().unwrap_err();
        assert!(err.message().contains("bogus"), "{err}");
        let ok: Invocation = serde_norway::from_str("loaded_invoke_state_for_x: 1\n").unwrap();
        assert_eq!(ok.probes().unwrap(), vec![("x", &Json::from(1))]);
    }

    #[test]
    fn unknown_expected_keys_are_refused() {
        let r: Result<Expected, _> = serde_norway::from_str("final_stat: {}\n");
        assert!(r.unwrap_err().to_string().contains("final_stat"));
    }
}
