//! Spec: conformance-adapter §5.15 (the retrieval-provider directives), §5.14
//! (`chunk_size`), §5.8 (`expected_error`), §5.5 (`typed_observers` /
//! `contains_event`) — the typed fixture model of a retrieval-provider file.
//!
//! Every struct keeps the keys it does not declare in `unknown`; [`Fixture::check`]
//! turns any of them into a `fixture_directive_unknown` error naming its location,
//! so a directive this runner does not implement fails loudly instead of being
//! ignored.

use std::collections::BTreeMap;
use std::path::Path;

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::AdapterError;

/// Keys a struct did not declare.
type Unknown = BTreeMap<String, IgnoredAny>;

/// A field that is present (`null` included) is `Some`; an absent one `None`.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// One retrieval-provider fixture file.
#[derive(Debug, Deserialize)]
pub(super) struct Fixture {
    pub(super) cases: Vec<Case>,
    /// `mapping: tei | jina | openai | cohere` (absent: the harness stand-in).
    pub(super) mapping: Option<String>,
    pub(super) tei_embedding_provider: Option<ProviderBlock>,
    pub(super) tei_rerank_provider: Option<ProviderBlock>,
    pub(super) jina_embedding_provider: Option<ProviderBlock>,
    pub(super) jina_rerank_provider: Option<ProviderBlock>,
    pub(super) openai_embedding_provider: Option<ProviderBlock>,
    pub(super) cohere_embedding_provider: Option<ProviderBlock>,
    pub(super) cohere_rerank_provider: Option<ProviderBlock>,
    #[allow(dead_code)]
    description: Option<IgnoredAny>,
    #[allow(dead_code)]
    conformance_version: Option<IgnoredAny>,
    #[serde(flatten)]
    unknown: Unknown,
}

/// A suite-level provider construction block (`<vendor>_<kind>_provider`).
#[derive(Debug, Deserialize)]
pub(super) struct ProviderBlock {
    pub(super) base_url: String,
    pub(super) model: String,
    pub(super) api_key: Option<String>,
    /// §5.14: the per-call cap (a real TEI cap, a test-only override elsewhere).
    pub(super) chunk_size: Option<usize>,
    pub(super) input_type_prompt_map: Option<BTreeMap<String, String>>,
    pub(super) query_prefix: Option<String>,
    pub(super) document_prefix: Option<String>,
    #[serde(flatten)]
    unknown: Unknown,
}

impl ProviderBlock {
    /// The optional construction parameters this block sets, by name.
    pub(super) fn optional_fields(&self) -> Vec<&'static str> {
        let mut set = Vec::new();
        let fields = [
            ("api_key", self.api_key.is_some()),
            ("chunk_size", self.chunk_size.is_some()),
            (
                "input_type_prompt_map",
                self.input_type_prompt_map.is_some(),
            ),
            ("query_prefix", self.query_prefix.is_some()),
            ("document_prefix", self.document_prefix.is_some()),
        ];
        for (name, given) in fields {
            if given {
                set.push(name);
            }
        }
        set
    }
}

/// One case of a `cases:` list.
#[derive(Debug, Deserialize)]
pub(super) struct Case {
    pub(super) name: String,
    #[allow(dead_code)]
    description: Option<IgnoredAny>,
    pub(super) state: StateDecl,
    pub(super) entry: String,
    pub(super) nodes: BTreeMap<String, NodeDecl>,
    pub(super) edges: Vec<EdgeDecl>,
    #[serde(default)]
    pub(super) initial_state: Map<String, Value>,
    pub(super) mock_embedding: Option<Vec<MockEntry>>,
    pub(super) mock_rerank: Option<Vec<MockEntry>>,
    #[serde(default)]
    pub(super) typed_observers: Vec<ObserverDecl>,
    pub(super) expected_wire_request: Option<WireBodies>,
    pub(super) expected_wire_request_count: Option<usize>,
    #[serde(default)]
    pub(super) expected_wire_request_absent_keys: Vec<String>,
    #[serde(default)]
    pub(super) expected_wire_headers: BTreeMap<String, String>,
    pub(super) expected_wire_url: Option<String>,
    pub(super) expected_error: Option<ExpectedError>,
    #[serde(default)]
    pub(super) expected: Expected,
    #[serde(flatten)]
    unknown: Unknown,
}

/// `state: {fields: {<name>: {type, default}}}`.
#[derive(Debug, Deserialize)]
pub(super) struct StateDecl {
    pub(super) fields: BTreeMap<String, FieldDecl>,
    #[serde(flatten)]
    unknown: Unknown,
}

/// One declared state field.
#[derive(Debug, Deserialize)]
pub(super) struct FieldDecl {
    #[serde(rename = "type")]
    pub(super) ty: String,
    #[serde(default)]
    pub(super) default: Value,
    #[serde(flatten)]
    unknown: Unknown,
}

/// One node: at most one retrieval call.
#[derive(Debug, Deserialize)]
pub(super) struct NodeDecl {
    pub(super) calls_embed: Option<EmbedCall>,
    pub(super) calls_rerank: Option<RerankCall>,
    #[serde(flatten)]
    unknown: Unknown,
}

/// `{from, to}`; `to: END` ends the graph.
#[derive(Debug, Deserialize)]
pub(super) struct EdgeDecl {
    pub(super) from: String,
    pub(super) to: String,
    #[serde(flatten)]
    unknown: Unknown,
}

/// `calls_embed: {input, config?, stores_response_in?, model?}`.
#[derive(Debug, Deserialize)]
pub(super) struct EmbedCall {
    pub(super) input: Vec<String>,
    #[serde(default)]
    pub(super) config: EmbedConfigDecl,
    pub(super) stores_response_in: Option<String>,
    pub(super) model: Option<String>,
    #[serde(flatten)]
    unknown: Unknown,
}

/// The embedding runtime config: the declared fields and the extras bag.
#[derive(Debug, Default, Deserialize)]
pub(super) struct EmbedConfigDecl {
    pub(super) dimensions: Option<u32>,
    pub(super) input_type: Option<String>,
    #[serde(default)]
    pub(super) extras: Map<String, Value>,
    #[serde(flatten)]
    unknown: Unknown,
}

/// `calls_rerank: {query, documents, top_k?, config?, stores_response_in?, model?}`.
#[derive(Debug, Deserialize)]
pub(super) struct RerankCall {
    pub(super) query: String,
    pub(super) documents: Vec<String>,
    pub(super) top_k: Option<u32>,
    #[serde(default)]
    pub(super) config: RerankConfigDecl,
    pub(super) stores_response_in: Option<String>,
    pub(super) model: Option<String>,
    #[serde(flatten)]
    unknown: Unknown,
}

/// The rerank runtime config: `return_documents` and the extras bag.
#[derive(Debug, Default, Deserialize)]
pub(super) struct RerankConfigDecl {
    pub(super) return_documents: Option<bool>,
    #[serde(default)]
    pub(super) extras: Map<String, Value>,
    #[serde(flatten)]
    unknown: Unknown,
}

/// One scripted answer of `mock_embedding` / `mock_rerank`.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct MockEntry {
    pub(super) status: u16,
    pub(super) body: Option<Value>,
    pub(super) raises: Option<Raises>,
    #[serde(flatten)]
    unknown: Unknown,
}

/// A non-2xx entry's literal `{error_type, message}`.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Raises {
    pub(super) error_type: String,
    pub(super) message: String,
    #[serde(flatten)]
    unknown: Unknown,
}

/// `typed_observers: [{name, kind}]`.
#[derive(Debug, Deserialize)]
pub(super) struct ObserverDecl {
    pub(super) name: String,
    pub(super) kind: String,
    #[serde(flatten)]
    unknown: Unknown,
}

/// `expected_wire_request`: one body, or one per request for a chunked call.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum WireBodies {
    One(Map<String, Value>),
    Many(Vec<Map<String, Value>>),
}

/// `expected_error: {category, raised_from}`.
#[derive(Debug, Deserialize)]
pub(super) struct ExpectedError {
    pub(super) category: String,
    pub(super) raised_from: String,
    #[serde(flatten)]
    unknown: Unknown,
}

/// The case's `expected:` block.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Expected {
    /// `<field>: <record assertions>`; `null` asserts the field is null.
    pub(super) final_state: Option<BTreeMap<String, Option<RecordExpect>>>,
    #[serde(default)]
    pub(super) observers: BTreeMap<String, ObserverExpect>,
    /// Named invariants (each must be `true`).
    #[serde(default)]
    pub(super) invariants: BTreeMap<String, bool>,
    #[serde(flatten)]
    unknown: Unknown,
}

/// The assertions on one stored `EmbeddingResponse` / `RerankResponse` record.
/// Every field set is checked; derived keys (`*_length`, `inner_vector_lengths_*`)
/// are computed from the record.
#[derive(Debug, Deserialize)]
pub(super) struct RecordExpect {
    pub(super) vectors_length: Option<usize>,
    pub(super) inner_vector_lengths_all_equal: Option<usize>,
    pub(super) results_length: Option<usize>,
    #[serde(default, deserialize_with = "present")]
    pub(super) vectors: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    pub(super) dimensions: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    pub(super) model: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    pub(super) response_id: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    pub(super) usage: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    pub(super) raw: Option<Value>,
    /// Result entries, each matched on the keys it names.
    #[serde(default, deserialize_with = "present")]
    pub(super) results: Option<Value>,
    #[serde(flatten)]
    unknown: Unknown,
}

/// `expected.observers.<name>`.
#[derive(Debug, Deserialize)]
pub(super) struct ObserverExpect {
    pub(super) contains_event: Option<ContainsEvent>,
    #[serde(flatten)]
    unknown: Unknown,
}

/// `contains_event: {event_type, fields}`: some event of the type carries every
/// listed field with exactly that value.
#[derive(Debug, Deserialize)]
pub(super) struct ContainsEvent {
    pub(super) event_type: String,
    #[serde(default)]
    pub(super) fields: Map<String, Value>,
    #[serde(flatten)]
    unknown: Unknown,
}

/// Collects the unknown keys of one struct under `location`.
fn note(out: &mut Vec<(String, String)>, unknown: &Unknown, location: &str) {
    for key in unknown.keys() {
        out.push((location.to_owned(), key.clone()));
    }
}

impl Fixture {
    /// Parses a document.
    ///
    /// # Errors
    /// `fixture_schema_invalid` when a directive has the wrong shape.
    pub(super) fn parse(doc: &serde_norway::Value, file: &Path) -> Result<Fixture, AdapterError> {
        serde_norway::from_value(doc.clone()).map_err(|e| AdapterError::SchemaInvalid {
            file: file.to_path_buf(),
            location: "document".into(),
            message: e.to_string(),
        })
    }

    /// Rejects the first key no struct declares (`fixture_directive_unknown`).
    ///
    /// # Errors
    /// The first unknown directive, with its dotted location.
    pub(super) fn check(&self, file: &Path) -> Result<(), AdapterError> {
        let mut out = Vec::new();
        note(&mut out, &self.unknown, "document");
        let blocks = [
            ("tei_embedding_provider", &self.tei_embedding_provider),
            ("tei_rerank_provider", &self.tei_rerank_provider),
            ("jina_embedding_provider", &self.jina_embedding_provider),
            ("jina_rerank_provider", &self.jina_rerank_provider),
            ("openai_embedding_provider", &self.openai_embedding_provider),
            ("cohere_embedding_provider", &self.cohere_embedding_provider),
            ("cohere_rerank_provider", &self.cohere_rerank_provider),
        ];
        for (name, block) in blocks {
            if let Some(b) = block {
                note(&mut out, &b.unknown, name);
            }
        }
        for (i, case) in self.cases.iter().enumerate() {
            case.collect(&mut out, &format!("cases[{i}]"));
        }
        match out.into_iter().next() {
            None => Ok(()),
            Some((location, directive)) => Err(AdapterError::DirectiveUnknown {
                file: file.to_path_buf(),
                directive,
                location,
            }),
        }
    }
}

impl Case {
    fn collect(&self, out: &mut Vec<(String, String)>, at: &str) {
        note(out, &self.unknown, at);
        note(out, &self.state.unknown, &format!("{at}.state"));
        for (name, field) in &self.state.fields {
            note(out, &field.unknown, &format!("{at}.state.fields.{name}"));
        }
        for (name, node) in &self.nodes {
            let n = format!("{at}.nodes.{name}");
            note(out, &node.unknown, &n);
            if let Some(c) = &node.calls_embed {
                note(out, &c.unknown, &format!("{n}.calls_embed"));
                note(out, &c.config.unknown, &format!("{n}.calls_embed.config"));
            }
            if let Some(c) = &node.calls_rerank {
                note(out, &c.unknown, &format!("{n}.calls_rerank"));
                note(out, &c.config.unknown, &format!("{n}.calls_rerank.config"));
            }
        }
        for (i, e) in self.edges.iter().enumerate() {
            note(out, &e.unknown, &format!("{at}.edges[{i}]"));
        }
        for (key, list) in [
            ("mock_embedding", &self.mock_embedding),
            ("mock_rerank", &self.mock_rerank),
        ] {
            for (i, entry) in list.iter().flatten().enumerate() {
                let l = format!("{at}.{key}[{i}]");
                note(out, &entry.unknown, &l);
                if let Some(r) = &entry.raises {
                    note(out, &r.unknown, &format!("{l}.raises"));
                }
            }
        }
        for (i, o) in self.typed_observers.iter().enumerate() {
            note(out, &o.unknown, &format!("{at}.typed_observers[{i}]"));
        }
        if let Some(e) = &self.expected_error {
            note(out, &e.unknown, &format!("{at}.expected_error"));
        }
        let x = &self.expected;
        note(out, &x.unknown, &format!("{at}.expected"));
        for (field, record) in x.final_state.iter().flatten() {
            if let Some(r) = record {
                note(
                    out,
                    &r.unknown,
                    &format!("{at}.expected.final_state.{field}"),
                );
            }
        }
        for (name, o) in &x.observers {
            let l = format!("{at}.expected.observers.{name}");
            note(out, &o.unknown, &l);
            if let Some(c) = &o.contains_event {
                note(out, &c.unknown, &format!("{l}.contains_event"));
            }
        }
    }
}
