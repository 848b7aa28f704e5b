//! Spec: conformance-adapter §3.2, §6.8 — typed models of the prompt-management fixture
//! shapes (prompt-management §3–§11).
//!
//! Every struct refuses keys it does not declare, so an unknown directive is reported
//! as `fixture_directive_unknown` (see [`typed`]), never ignored. Lists whose entries
//! are validated one by one (`calls`) and blocks keyed by assertion or capture name
//! (`expected`) stay raw JSON here and are typed where they are read, so errors name
//! the entry.

use std::collections::HashMap;

use openarmature_llm::Message;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value as Json};

use super::loc::Loc;
use crate::AdapterError;

/// One runnable scenario: the fixture root overlaid by one case's keys.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Scenario {
    /// Mock prompt backends, in declaration order.
    #[serde(default)]
    pub(super) backends: Vec<BackendDecl>,
    /// The manager targeted as `manager` / `{manager: true}`.
    pub(super) manager: Option<ManagerDecl>,
    /// The manager targeted as `secondary_manager` (015).
    pub(super) secondary_manager: Option<ManagerDecl>,
    /// The manager targeted as `tertiary_manager` (015).
    pub(super) tertiary_manager: Option<ManagerDecl>,
    /// A resolver a manager names by `label_resolver_ref: label_resolver`.
    pub(super) label_resolver: Option<ResolverDecl>,
    /// A resolver a manager names by `label_resolver_ref: tertiary_label_resolver`.
    pub(super) tertiary_label_resolver: Option<ResolverDecl>,
    /// Calls, run first.
    #[serde(default)]
    pub(super) calls: Vec<Json>,
    /// Calls run after `calls`.
    #[serde(default)]
    pub(super) secondary_calls: Vec<Json>,
    /// Calls run after `secondary_calls`.
    #[serde(default)]
    pub(super) tertiary_calls: Vec<Json>,
    /// Fixture-level assertions and capture expectations, checked after every call.
    #[serde(default)]
    pub(super) expected: Map<String, Json>,
    /// §6.8 `expected_backend_state: {<backend>: {source_read_count}}`.
    pub(super) expected_backend_state: Option<HashMap<String, BackendState>>,
    /// 032 `expected_shared_prefix`.
    pub(super) expected_shared_prefix: Option<SharedPrefix>,
    /// 032 `expected_message_equal`.
    pub(super) expected_message_equal: Option<MessageEqual>,
}

/// A `backends[]` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BackendDecl {
    pub(super) name: String,
    #[serde(default)]
    pub(super) prompts: Vec<PromptDecl>,
    /// Every fetch raises `prompt_store_unavailable`.
    #[serde(default)]
    pub(super) simulate_unavailable: bool,
    /// The §6.8 caching backend.
    #[serde(default)]
    pub(super) caching: bool,
}

/// A prompt a mock backend is preloaded with (prompt-management §3).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PromptDecl {
    pub(super) name: String,
    pub(super) label: String,
    pub(super) version: String,
    /// A Text prompt's template.
    pub(super) template: Option<String>,
    /// A Chat prompt's segments, in the spec's JSON shape.
    pub(super) chat_template: Option<Json>,
    pub(super) template_hash: Option<String>,
    /// `RuntimeConfig` JSON (declared fields plus `extras`).
    pub(super) sampling: Option<Json>,
    /// The raw sourced budget config (037: may carry unrecognized keys).
    pub(super) token_budget: Option<Json>,
    pub(super) observability_entities: Option<Map<String, Json>>,
}

/// A `manager` block.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ManagerDecl {
    /// Backend names in consultation order (absent: every declared backend, §6.8).
    pub(super) backends: Option<Vec<String>>,
    pub(super) label_resolver_ref: Option<String>,
    pub(super) default_cache_ttl_seconds: Option<u64>,
}

/// A `label_resolver` block.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ResolverDecl {
    /// `{default?: <label>, <name>: <label>, ...}` (prompt-management §7).
    pub(super) mapping: Json,
}

/// What a call addresses.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum TargetDecl {
    /// `manager`, `secondary_manager`, `tertiary_manager`, `construct_prompt_group`.
    Named(String),
    /// `{backend: <name>}`.
    Backend(BackendTarget),
    /// `{manager: true}`.
    Manager(ManagerTarget),
}

/// `{backend: <name>}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BackendTarget {
    pub(super) backend: String,
}

/// `{manager: true}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ManagerTarget {
    pub(super) manager: bool,
}

/// A call's `operation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Operation {
    Fetch,
    Render,
    Get,
    AdvanceClock,
}

/// One `calls` entry. Which fields apply depends on the target and operation
/// (checked by [`super::step::Step::from_decl`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct CallDecl {
    pub(super) target: TargetDecl,
    pub(super) operation: Option<Operation>,
    pub(super) name: Option<String>,
    pub(super) label: Option<String>,
    pub(super) cache_ttl_seconds: Option<u64>,
    pub(super) fetched_prompt: Option<PromptRef>,
    pub(super) fetched_prompt_ref: Option<String>,
    pub(super) variables: Option<Map<String, Json>>,
    pub(super) placeholders: Option<HashMap<String, Vec<Message>>>,
    pub(super) seconds: Option<u64>,
    pub(super) group_name: Option<String>,
    pub(super) members_refs: Option<Vec<String>>,
    pub(super) capture_as: Option<String>,
    /// Per-call assertions, keyed by assertion name.
    #[serde(default)]
    pub(super) expected: Map<String, Json>,
}

/// `fetched_prompt: {name, label}`: fetch through the manager, then render.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PromptRef {
    pub(super) name: String,
    pub(super) label: Option<String>,
}

/// Expected fields of a captured `Prompt` or `PromptResult`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RecordExpect {
    pub(super) name: Option<String>,
    pub(super) version: Option<String>,
    pub(super) label: Option<String>,
    pub(super) template: Option<String>,
    pub(super) chat_template: Option<Json>,
    pub(super) template_hash: Option<String>,
    pub(super) messages: Option<Json>,
    pub(super) variables: Option<Json>,
    pub(super) sampling: Option<Json>,
    pub(super) token_budget: Option<Json>,
    pub(super) observability_entities: Option<Json>,
    pub(super) sampling_absent: Option<bool>,
    pub(super) observability_entities_absent: Option<bool>,
    pub(super) rendered_hash_present: Option<bool>,
    pub(super) rendered_hash_non_empty_string: Option<bool>,
}

/// `raises: {category, carries?}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RaisesExpect {
    pub(super) category: String,
    /// conformance-adapter §5.13 field assertions.
    #[serde(default)]
    pub(super) carries: Map<String, Json>,
}

/// `result_equivalence: {of, fields_must_match, fields_may_differ}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Equivalence {
    pub(super) of: Vec<String>,
    pub(super) fields_must_match: Vec<String>,
    #[serde(default)]
    pub(super) fields_may_differ: Vec<String>,
}

/// `prompt_group: {of, group_name, member_count, member_order_preserved, member_names}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct GroupExpect {
    pub(super) of: String,
    pub(super) group_name: Option<String>,
    pub(super) member_count: Option<usize>,
    pub(super) member_order_preserved: Option<bool>,
    pub(super) member_names: Option<Vec<String>>,
}

/// `expected_backend_state.<backend>`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct BackendState {
    pub(super) source_read_count: usize,
}

/// `expected_shared_prefix: {between, message_index, prefix}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SharedPrefix {
    pub(super) between: Vec<String>,
    pub(super) message_index: usize,
    pub(super) prefix: String,
}

/// `expected_message_equal: {between, message_indices}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct MessageEqual {
    pub(super) between: Vec<String>,
    pub(super) message_indices: Vec<usize>,
}

/// Reads `value` (found at `loc`) as `T`. An undeclared key or an unknown enum
/// variant is `fixture_directive_unknown`, located at the key; any other mismatch is
/// `fixture_schema_invalid`.
pub(super) fn typed<T: DeserializeOwned>(value: &Json, loc: &Loc) -> Result<T, AdapterError> {
    T::deserialize(value).map_err(|e| {
        let message = e.to_string();
        let unknown = ["unknown field `", "unknown variant `"]
            .iter()
            .find_map(|p| message.strip_prefix(p))
            .and_then(|rest| rest.split('`').next());
        match unknown {
            Some(directive) => AdapterError::DirectiveUnknown {
                file: loc.file().to_path_buf(),
                directive: directive.to_owned(),
                location: key_path(value, directive)
                    .map_or_else(|| loc.path().to_owned(), |p| loc.join(&p).path().to_owned()),
            },
            None => loc.invalid(message),
        }
    })
}

/// The dotted path (relative to `value`) of the first mapping key, or string value,
/// equal to `needle`: where an unknown directive sits.
fn key_path(value: &Json, needle: &str) -> Option<String> {
    match value {
        Json::Object(map) => {
            if map.contains_key(needle) {
                return Some(needle.to_owned());
            }
            map.iter().find_map(|(k, v)| {
                if v.as_str() == Some(needle) {
                    return Some(k.clone());
                }
                key_path(v, needle).map(|p| format!("{k}.{p}"))
            })
        }
        Json::Array(items) => items.iter().enumerate().find_map(|(i, v)| {
            if v.as_str() == Some(needle) {
                return Some(i.to_string());
            }
            key_path(v, needle).map(|p| format!("{i}.{p}"))
        }),
        _ => None,
    }
}
