//! Spec: prompt-management §6 `render`, §8 strict variable injection, §11 render
//! triggers, §13 determinism.
//!
//! Templates are Jinja2, rendered with [minijinja] (the language the Python reference
//! uses): no auto-escaping (the output goes to a model, not a browser), a template's
//! trailing newline kept, and undefined variables an error by default
//! ([`minijinja::UndefinedBehavior::Strict`]: printing, iterating, testing the
//! truthiness of or passing an undefined variable to a filter all fail; `is defined`
//! and `default(...)` still work). [`RenderOptions::lenient`] opts out: undefined
//! variables then print as the empty string and are falsy (minijinja's lenient mode).
//!
//! A Text prompt renders to exactly one `user` message (placeholders ignored). A Chat
//! prompt renders segment by segment, each template independently against the same
//! variables. Render adds nothing of its own to the output (no timestamps, ids or
//! reflowing), so equal inputs give byte-identical messages and `rendered_hash`.

mod chat;

use std::collections::{HashMap, HashSet};

use minijinja::{AutoEscape, Environment, ErrorKind, UndefinedBehavior};
use openarmature_llm::Message;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{PromptError, RenderFailure};
use crate::prompt::{Prompt, Template};
use crate::result::PromptResult;

/// Caller-supplied messages for a Chat prompt's placeholder segments, by placeholder
/// name. An empty list is valid and contributes no messages.
pub type Placeholders = HashMap<String, Vec<Message>>;

/// Render switches. The default is strict (§8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderOptions {
    strict: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions::strict()
    }
}

impl RenderOptions {
    /// Undefined variables are a `prompt_render_error` (the default).
    pub fn strict() -> Self {
        RenderOptions { strict: true }
    }

    /// The explicit opt-out: an undefined variable renders as the empty string and is
    /// falsy in conditions. The Chat-prompt empty-segment rule still applies, so a
    /// segment that renders to nothing still fails.
    pub fn lenient() -> Self {
        RenderOptions { strict: false }
    }

    /// Whether undefined variables are errors.
    pub fn is_strict(&self) -> bool {
        self.strict
    }
}

/// Renders `prompt` with `variables` (anything serializing to a JSON object; `()` or a
/// JSON `null` means none) and, for a Chat prompt, `placeholders`.
///
/// # Errors
/// `prompt_render_error` on an undefined variable (strict mode), a template syntax or
/// evaluation error, variables that are not a mapping, and the Chat-prompt rules: a
/// content segment or text block rendering to `""`, an empty block list, an image block
/// outside a `user` segment, a placeholder missing from `placeholders`, a duplicate or
/// malformed placeholder name, or an empty final message list.
pub fn render_prompt<V: Serialize + ?Sized>(
    prompt: &Prompt,
    variables: &V,
    placeholders: Option<&Placeholders>,
    options: RenderOptions,
) -> Result<PromptResult, PromptError> {
    render_converted(prompt, to_variables(variables), placeholders, options)
}

/// [`render_prompt`] over already-converted variables (or the reason they could not be
/// converted, reported as a render error carrying the prompt's identity).
pub(crate) fn render_converted(
    prompt: &Prompt,
    variables: Result<Map<String, Value>, String>,
    placeholders: Option<&Placeholders>,
    options: RenderOptions,
) -> Result<PromptResult, PromptError> {
    let (variables, problem) = match variables {
        Ok(map) => (map, None),
        Err(problem) => (Map::new(), Some(problem)),
    };
    let renderer = Renderer::new(prompt, variables, options);
    if let Some(problem) = problem {
        return Err(renderer.fail(problem, None));
    }
    let messages = match prompt.template() {
        Template::Text(source) => vec![Message::user(renderer.text(source, "the template")?)],
        Template::Chat(segments) => renderer.chat(segments, placeholders)?,
    };
    Ok(PromptResult::from_render(
        prompt,
        renderer.variables,
        messages,
    ))
}

/// Converts caller variables to the recorded mapping.
pub(crate) fn to_variables<V: Serialize + ?Sized>(
    variables: &V,
) -> Result<Map<String, Value>, String> {
    match serde_json::to_value(variables) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(Value::Null) => Ok(Map::new()),
        Ok(other) => Err(format!("variables must be a mapping, got {other}")),
        Err(e) => Err(format!("variables could not be serialized: {e}")),
    }
}

struct Renderer<'p> {
    prompt: &'p Prompt,
    variables: Map<String, Value>,
    context: minijinja::Value,
    env: Environment<'p>,
}

impl<'p> Renderer<'p> {
    fn new(prompt: &'p Prompt, variables: Map<String, Value>, options: RenderOptions) -> Self {
        let mut env = Environment::new();
        env.set_auto_escape_callback(|_| AutoEscape::None);
        env.set_undefined_behavior(if options.strict {
            UndefinedBehavior::Strict
        } else {
            UndefinedBehavior::Lenient
        });
        if let Ok(syntax) = minijinja::syntax::SyntaxConfig::builder()
            .keep_trailing_newline(true)
            .build()
        {
            env.set_syntax(syntax);
        }
        let context = to_template_value(&Value::Object(variables.clone()));
        Renderer {
            prompt,
            variables,
            context,
            env,
        }
    }

    fn fail(&self, description: String, source: Option<minijinja::Error>) -> PromptError {
        let failure = RenderFailure::new(
            self.prompt.name(),
            self.prompt.version(),
            self.prompt.label(),
            self.variables.clone(),
            description,
        );
        let error = PromptError::render(failure);
        match source {
            Some(source) => error.with_source(source),
            None => error,
        }
    }

    /// Renders one template; `location` names it in error descriptions.
    fn text(&self, source: &'p str, location: &str) -> Result<String, PromptError> {
        let template = self
            .env
            .template_from_str(source)
            .map_err(|e| self.fail(format!("template syntax error in {location}: {e}"), Some(e)))?;
        template.render(self.context.clone()).map_err(|e| {
            let description = if e.kind() == ErrorKind::UndefinedError {
                let globals: HashSet<String> = self
                    .env
                    .globals()
                    .map(|(name, _)| name.to_owned())
                    .collect();
                let mut missing: Vec<String> = template
                    .undeclared_variables(false)
                    .into_iter()
                    .filter(|v| !self.variables.contains_key(v) && !globals.contains(v))
                    .collect();
                missing.sort();
                if missing.is_empty() {
                    format!("undefined value in {location}: {e}")
                } else {
                    format!("undefined variable(s) {} in {location}", missing.join(", "))
                }
            } else {
                format!("{location} failed to render: {e}")
            };
            self.fail(description, Some(e))
        })
    }
}

/// Converts JSON into a template value (the minijinja `serde` feature is not enabled in
/// the workspace, so the mapping is explicit). Object keys keep their order.
fn to_template_value(value: &Value) -> minijinja::Value {
    match value {
        Value::Null => minijinja::Value::from(()),
        Value::Bool(b) => minijinja::Value::from(*b),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                minijinja::Value::from(i)
            } else if let Some(u) = n.as_u64() {
                minijinja::Value::from(u)
            } else {
                minijinja::Value::from(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Value::String(s) => minijinja::Value::from(s.as_str()),
        Value::Array(items) => items.iter().map(to_template_value).collect(),
        Value::Object(map) => minijinja::Value::from_pairs(
            map.iter()
                .map(|(k, v)| (minijinja::Value::from(k.as_str()), to_template_value(v))),
        ),
    }
}
