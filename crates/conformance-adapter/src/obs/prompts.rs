//! Spec: prompt-management §6 / §10 / §12 and graph-engine §6 (`active_prompt`,
//! `active_prompt_group`, `token_budget`), as the observability fixtures drive them
//! (064 `renders_prompt`, 066 header `renders_prompt_group`).
//!
//! Directives:
//!
//! - Case keys `prompt_backend: {type, prompts: {<key>: {name, version, label,
//!   template, template_hash, token_budget?}}}` and `render_variables: {...}`.
//! - Node key `renders_prompt: <name>`: the node fetches the prompt through a
//!   [`PromptManager`], renders it with `render_variables`, and makes its `calls_llm`
//!   call with the rendered messages inside the prompt's context
//!   ([`PromptResult::scope`]).
//! - Node key `renders_prompt_group: {group_name, members, active_prompt}` (066
//!   header): every member is rendered, a [`PromptGroup`] is built from them (so the
//!   two-or-more rule applies), and the call runs with the group bound and the
//!   `active_prompt` member as the active prompt.
//!
//! Register O9: `prompt_backend.type: filesystem` with inline `prompts` is served by
//! the in-memory backend: the fixtures pin `version` and `template_hash`, which our
//! filesystem layout derives from the files, so the prompts are taken verbatim.

use std::sync::Arc;

use openarmature_core::vocab::prompt::TokenBudget;
use openarmature_graph::BoxError;
use openarmature_llm::Message;
use openarmature_prompt::{
    InMemoryBackend, Prompt, PromptGroup, PromptManager, PromptResult, LANGFUSE_PROMPT,
};
use serde_json::{Map, Value};

use super::Run;
use crate::failure::{ensure, Check};
use crate::table::{lookup, names, Table};
use crate::yaml::Y;
use crate::AdapterError;

/// The case's prompt store and render variables.
pub(crate) struct PromptHarness {
    manager: PromptManager,
    variables: Map<String, Value>,
}

impl PromptHarness {
    /// Builds the harness from `prompt_backend` / `render_variables`, or `None` when
    /// the case declares no prompt backend.
    pub(crate) fn from_case(case: &Y<'_>) -> Result<Option<PromptHarness>, AdapterError> {
        let Some(backend) = case.get("prompt_backend") else {
            return Ok(None);
        };
        backend.check_keys(&["type", "prompts"])?;
        let kind = backend.req("type")?;
        if !["filesystem", "mock_with_langfuse_reference"].contains(&kind.str()?) {
            return Err(kind.invalid(
                "a prompt_backend type this runner knows (`filesystem`, `mock_with_langfuse_reference`)",
            ));
        }
        let store = InMemoryBackend::new();
        for (_, p) in backend.req("prompts")?.entries()? {
            store.insert(prompt(&p)?);
        }
        let variables = match case.get("render_variables") {
            Some(v) => match v.json()? {
                Value::Object(m) => m,
                _ => return Err(v.invalid("render_variables is a mapping")),
            },
            None => Map::new(),
        };
        Ok(Some(PromptHarness {
            manager: PromptManager::new(vec![Arc::new(store)])
                .map_err(|e| backend.invalid(e.to_string()))?,
            variables,
        }))
    }

    async fn render(&self, name: &str) -> Result<PromptResult, BoxError> {
        let prompt = self.manager.fetch(name, None).await?;
        Ok(self.manager.render(&prompt, &self.variables)?)
    }
}

/// One `prompt_backend.prompts` entry, taken verbatim (register O9).
fn prompt(y: &Y<'_>) -> Result<Prompt, AdapterError> {
    y.check_keys(&[
        "name",
        "version",
        "label",
        "template",
        "template_hash",
        "token_budget",
        "langfuse_prompt_reference",
    ])?;
    let s = |k: &str| -> Result<String, AdapterError> { Ok(y.req(k)?.str()?.to_owned()) };
    let mut p = Prompt::text(s("name")?, s("version")?, s("label")?, s("template")?);
    if y.get("template_hash").is_some() {
        p = p.with_template_hash(s("template_hash")?);
    }
    // `mock_with_langfuse_reference` (024): the backend exposes a Langfuse Prompt
    // reference in `observability_entities` (prompt-management §3).
    if let Some(reference) = y.get("langfuse_prompt_reference") {
        let mut entities = Map::new();
        entities.insert(LANGFUSE_PROMPT.to_owned(), reference.json()?);
        p = p.with_observability_entities(entities);
    }
    if let Some(b) = y.get("token_budget") {
        b.check_keys(&["input_max_tokens", "total_max_tokens"])?;
        let bound = |k: &str| -> Result<Option<u64>, AdapterError> {
            b.get(k)
                .map(|v| u64::try_from(v.i64()?).map_err(|_| v.invalid("a token count")))
                .transpose()
        };
        p = p.with_token_budget(TokenBudget::new(
            bound("input_max_tokens")?,
            bound("total_max_tokens")?,
        ));
    }
    Ok(p)
}

/// A node's prompt directive.
pub(crate) enum PromptStep {
    /// `renders_prompt: <name>`.
    Single(String),
    /// `renders_prompt_group: {group_name, members, active_prompt}`.
    Group {
        group_name: String,
        members: Vec<String>,
        active: String,
    },
}

/// What a prompt step rendered: the messages to send and how to bind the call.
pub(crate) struct Rendered {
    active: PromptResult,
    group: Option<PromptGroup>,
}

impl Rendered {
    /// The messages of the active prompt.
    pub(crate) fn messages(&self) -> Vec<Message> {
        self.active.messages().to_vec()
    }

    /// The active prompt's rendered text: its messages' string contents, joined by
    /// newlines (a text prompt renders to one user message).
    pub(crate) fn text(&self) -> String {
        let texts: Vec<&str> = self
            .active
            .messages()
            .iter()
            .filter_map(|m| match m {
                Message::System(m) => m.content.as_text(),
                Message::User(m) => m.content.as_text(),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }

    /// Runs `fut` inside the prompt (and group) context.
    pub(crate) async fn scope<F: std::future::Future>(&self, fut: F) -> F::Output {
        match &self.group {
            Some(g) => g.scope(self.active.scope(fut)).await,
            None => self.active.scope(fut).await,
        }
    }
}

impl PromptStep {
    /// Parses the node's prompt directive, if it has one.
    pub(crate) fn parse(node: &Y<'_>) -> Result<Option<PromptStep>, AdapterError> {
        if let Some(name) = node.get("renders_prompt") {
            return Ok(Some(PromptStep::Single(name.str()?.to_owned())));
        }
        let Some(g) = node.get("renders_prompt_group") else {
            return Ok(None);
        };
        g.check_keys(&["group_name", "members", "active_prompt"])?;
        let members = g
            .req("members")?
            .seq()?
            .iter()
            .map(|m| m.str().map(str::to_owned))
            .collect::<Result<Vec<_>, _>>()?;
        let active = g.req("active_prompt")?.str()?.to_owned();
        if !members.contains(&active) {
            return Err(g.invalid("active_prompt names one of the group's members"));
        }
        Ok(Some(PromptStep::Group {
            group_name: g.req("group_name")?.str()?.to_owned(),
            members,
            active,
        }))
    }

    /// Fetches and renders the step's prompt(s).
    pub(crate) async fn render(&self, h: &PromptHarness) -> Result<Rendered, BoxError> {
        match self {
            PromptStep::Single(name) => Ok(Rendered {
                active: h.render(name).await?,
                group: None,
            }),
            PromptStep::Group {
                group_name,
                members,
                active,
            } => {
                let mut results = Vec::with_capacity(members.len());
                for m in members {
                    results.push(h.render(m).await?);
                }
                let active = members
                    .iter()
                    .position(|m| m == active)
                    .and_then(|i| results.get(i))
                    .cloned()
                    .ok_or("active_prompt is not a member")?;
                Ok(Rendered {
                    active,
                    group: Some(PromptGroup::new(group_name.clone(), results)?),
                })
            }
        }
    }
}

/// The `openarmature.prompt.*` attributes of a span, as `(suffix, value)` pairs.
fn prompt_attrs(span: &opentelemetry_sdk::trace::SpanData) -> Map<String, Value> {
    span.attributes
        .iter()
        .filter_map(|kv| {
            let key = kv.key.as_str().strip_prefix("openarmature.prompt.")?;
            Some((
                key.to_owned(),
                Value::String(kv.value.as_str().into_owned()),
            ))
        })
        .collect()
}

/// The prompt-identity invariants: whether each expects a prompt group's attributes
/// too (each value must be `true`).
const TABLE: &Table<bool> = &[
    (
        "active_prompt_snapshot_matches_prompt_management_section_12_identity_attrs",
        false,
    ),
    (
        "active_prompt_and_group_both_populated_inside_group_context",
        true,
    ),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

/// Checks a prompt invariant (064 / 066), or `None` when `name` is not one.
pub(crate) fn check(name: &str, v: &Value, run: &Run<'_>) -> Option<Check> {
    let group = lookup(TABLE, name)?;
    Some(
        ensure(v == &Value::Bool(true), || format!("invariant value {v}"))
            .and_then(|()| check_identity(run, group)),
    )
}

fn check_identity(run: &Run<'_>, group: bool) -> Check {
    let events: Vec<Value> = run
        .events
        .iter()
        .filter_map(|e| super::typed::record(e, None))
        .filter(|r| r.get("event_type").and_then(Value::as_str) == Some("LlmCompletionEvent"))
        .collect();
    let spans = run.llm_spans();
    ensure(!events.is_empty() && events.len() == spans.len(), || {
        format!(
            "{} completion events, {} LLM spans",
            events.len(),
            spans.len()
        )
    })?;
    for (e, span) in events.iter().zip(spans) {
        let attrs = prompt_attrs(span);
        let active = e.get("active_prompt").cloned().unwrap_or(Value::Null);
        let Value::Object(identity) = active else {
            return Err(format!("active_prompt is {active}").into());
        };
        for (k, value) in &identity {
            ensure(attrs.get(k) == Some(value), || {
                format!(
                    "active_prompt.{k} = {value}, span openarmature.prompt.{k} = {:?}",
                    attrs.get(k)
                )
            })?;
        }
        ensure(identity.len() == 5, || {
            format!("active_prompt fields {identity:?}")
        })?;
        let group_name = e
            .get("active_prompt_group")
            .and_then(|g| g.get("group_name"))
            .cloned();
        if group {
            ensure(
                group_name.is_some() && group_name.as_ref() == attrs.get("group_name"),
                || {
                    format!(
                        "active_prompt_group {group_name:?}, span group_name {:?}",
                        attrs.get("group_name")
                    )
                },
            )?;
        } else {
            ensure(
                group_name.is_none() && !attrs.contains_key("group_name"),
                || "a group is active outside any group context".into(),
            )?;
        }
    }
    Ok(())
}
