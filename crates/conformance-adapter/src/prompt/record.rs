//! Spec: prompt-management §3 (`Prompt`), §4 (`PromptResult`), §10 (`PromptGroup`),
//! §11 (error fields) — what a call produced, as the fixtures name its fields.
//!
//! A captured value is read through a JSON *view*: one entry per spec field, `null`
//! when the field is absent. Messages use the llm-provider JSON shape, `sampling` the
//! `RuntimeConfig` shape (declared fields that are set, plus `extras` when not empty),
//! `token_budget` its declared bounds, timestamps nanoseconds since the epoch.

use std::time::{SystemTime, UNIX_EPOCH};

use openarmature_llm::{Message, RuntimeConfig};
use openarmature_prompt::{
    ChatSegment, Prompt, PromptError, PromptGroup, PromptResult, Template, TokenBudget,
};
use serde_json::{json, Map, Value as Json};

use super::model::RecordExpect;
use crate::failure::{ensure, Check, Failure};
use crate::matchers::{self, Bindings};

/// What a call produced.
#[derive(Debug, Clone)]
pub(super) enum Captured {
    /// A fetch's `Prompt`.
    Prompt(Prompt),
    /// A render's or get's `PromptResult`.
    Result(PromptResult),
    /// A constructed group and the capture names of its members, in order.
    Group {
        group: PromptGroup,
        members: Vec<String>,
    },
}

impl Captured {
    /// `prompt`, `prompt_result` or `prompt_group`.
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Captured::Prompt(_) => "prompt",
            Captured::Result(_) => "prompt_result",
            Captured::Group { .. } => "prompt_group",
        }
    }

    /// The field view (see the module docs); `None` for a group.
    pub(super) fn view(&self) -> Option<Map<String, Json>> {
        match self {
            Captured::Prompt(p) => Some(prompt_view(p)),
            Captured::Result(r) => Some(result_view(r)),
            Captured::Group { .. } => None,
        }
    }

    /// The rendered result, when this is one.
    pub(super) fn result(&self) -> Option<&PromptResult> {
        match self {
            Captured::Result(r) => Some(r),
            _ => None,
        }
    }
}

fn prompt_view(p: &Prompt) -> Map<String, Json> {
    let (template, chat) = match p.template() {
        Template::Text(t) => (Json::String(t.clone()), Json::Null),
        Template::Chat(segments) => (
            Json::Null,
            Json::Array(segments.iter().map(ChatSegment::to_json).collect()),
        ),
    };
    let mut v = identity(p.name(), p.version(), p.label(), p.template_hash());
    v.insert("template".into(), template);
    v.insert("chat_template".into(), chat);
    v.insert("fetched_at".into(), time(p.fetched_at()));
    v.insert("sampling".into(), sampling(p.sampling()));
    v.insert("token_budget".into(), budget(p.token_budget()));
    v.insert(
        "observability_entities".into(),
        entities(p.observability_entities()),
    );
    v
}

fn result_view(r: &PromptResult) -> Map<String, Json> {
    let mut v = identity(r.name(), r.version(), r.label(), r.template_hash());
    v.insert("rendered_hash".into(), r.rendered_hash().into());
    v.insert("messages".into(), messages(r.messages()));
    v.insert("variables".into(), Json::Object(r.variables().clone()));
    v.insert("fetched_at".into(), time(r.fetched_at()));
    v.insert("rendered_at".into(), time(r.rendered_at()));
    v.insert("sampling".into(), sampling(r.sampling()));
    v.insert("token_budget".into(), budget(r.token_budget()));
    v.insert(
        "observability_entities".into(),
        entities(r.observability_entities()),
    );
    v
}

fn identity(name: &str, version: &str, label: &str, template_hash: &str) -> Map<String, Json> {
    let mut v = Map::new();
    v.insert("name".into(), name.into());
    v.insert("version".into(), version.into());
    v.insert("label".into(), label.into());
    v.insert("template_hash".into(), template_hash.into());
    v
}

/// A message list in the llm-provider JSON shape.
pub(super) fn messages(list: &[Message]) -> Json {
    Json::Array(list.iter().map(Message::to_json).collect())
}

fn time(t: SystemTime) -> Json {
    let nanos = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    Json::from(u64::try_from(nanos).unwrap_or(u64::MAX))
}

fn sampling(config: Option<&RuntimeConfig>) -> Json {
    let Some(config) = config else {
        return Json::Null;
    };
    let mut v = config.declared_params();
    if !config.extras.is_empty() {
        v.insert("extras".into(), Json::Object(config.extras.clone()));
    }
    Json::Object(v)
}

fn budget(budget: Option<TokenBudget>) -> Json {
    let Some(b) = budget else {
        return Json::Null;
    };
    let mut v = Map::new();
    if let Some(n) = b.input_max_tokens {
        v.insert("input_max_tokens".into(), n.into());
    }
    if let Some(n) = b.total_max_tokens {
        v.insert("total_max_tokens".into(), n.into());
    }
    Json::Object(v)
}

fn entities(e: Option<&Map<String, Json>>) -> Json {
    e.map_or(Json::Null, |m| Json::Object(m.clone()))
}

/// The fields a raised error exposes (prompt-management §11), for `carries`: a render
/// error's `name`, `version`, `label`, `variables` and `description`; any other error's
/// message as its `description`.
pub(super) fn error_view(e: &PromptError) -> Map<String, Json> {
    let mut v = Map::new();
    match e.render_failure() {
        Some(f) => {
            v.insert("name".into(), f.name.clone().into());
            v.insert("version".into(), f.version.clone().into());
            v.insert("label".into(), f.label.clone().into());
            v.insert("variables".into(), Json::Object(f.variables.clone()));
            v.insert("description".into(), f.description.clone().into());
        }
        None => {
            v.insert("description".into(), e.to_string().into());
        }
    }
    v
}

/// One expectation on a view field.
enum Want {
    /// Exact equality (conformance-adapter §5.10 comparison).
    Equals(Json),
    /// `true`: the field is absent (null); `false`: present.
    Absent(bool),
    /// `true`: the field is a non-empty string.
    NonEmptyString(bool),
}

impl RecordExpect {
    /// Every expectation the block states, by view field.
    fn wants(&self) -> Vec<(&'static str, Want)> {
        let text = |s: &Option<String>| s.as_ref().map(|s| Want::Equals(Json::String(s.clone())));
        let value = |j: &Option<Json>| j.as_ref().map(|j| Want::Equals(j.clone()));
        let absent = |b: &Option<bool>| b.map(Want::Absent);
        [
            ("name", text(&self.name)),
            ("version", text(&self.version)),
            ("label", text(&self.label)),
            ("template", text(&self.template)),
            ("chat_template", value(&self.chat_template)),
            ("template_hash", text(&self.template_hash)),
            ("messages", value(&self.messages)),
            ("variables", value(&self.variables)),
            ("sampling", value(&self.sampling)),
            ("token_budget", value(&self.token_budget)),
            (
                "observability_entities",
                value(&self.observability_entities),
            ),
            ("sampling", absent(&self.sampling_absent)),
            (
                "observability_entities",
                absent(&self.observability_entities_absent),
            ),
            (
                "rendered_hash",
                self.rendered_hash_present.map(|b| Want::Absent(!b)),
            ),
            (
                "rendered_hash",
                self.rendered_hash_non_empty_string
                    .map(Want::NonEmptyString),
            ),
        ]
        .into_iter()
        .filter_map(|(field, want)| want.map(|w| (field, w)))
        .collect()
    }

    /// Checks the block against `captured` (named `what` in failures).
    pub(super) fn check(&self, captured: &Captured, what: &str) -> Check {
        let view = captured.view().ok_or_else(|| {
            Failure::mismatch(format!("{what} is a {}, not a record", captured.kind()))
        })?;
        for (field, want) in self.wants() {
            let Some(actual) = view.get(field) else {
                return Err(Failure::mismatch(format!(
                    "{what}: a {} has no field `{field}`",
                    captured.kind()
                )));
            };
            let at = format!("{what}.{field}");
            match want {
                Want::Equals(expected) => {
                    matchers::check(&expected, actual, &mut Bindings::default(), &at)?;
                }
                Want::Absent(absent) => ensure(actual.is_null() == absent, || {
                    let state = if absent { "absent" } else { "present" };
                    format!("{at}: expected {state}, got {actual}")
                })?,
                Want::NonEmptyString(wanted) => {
                    let is = actual.as_str().is_some_and(|s| !s.is_empty());
                    ensure(is == wanted, || {
                        format!("{at}: expected non_empty_string = {wanted}, got {actual}")
                    })?;
                }
            }
        }
        Ok(())
    }
}

/// `json!` of a message by index of a captured result, for failure messages.
pub(super) fn message_at(r: &PromptResult, index: usize) -> Json {
    r.messages()
        .get(index)
        .map_or_else(|| json!(null), Message::to_json)
}
