//! Tools declared from Rust functions: the argument type derives a JSON Schema
//! (`schemars::JsonSchema`) for the provider-facing definition and deserializes with
//! serde; bad arguments become a typed [`ToolError::InvalidArguments`].

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::FutureExt;
use jsonschema::Validator;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::ctx::ToolCtx;
use crate::error::ToolError;

type Handler = dyn Fn(Value, ToolCtx) -> BoxFuture<'static, Result<Value, ToolError>> + Send + Sync;

/// A tool the agent can run: its provider-facing definition and its handler.
/// Cheap to clone.
#[derive(Clone)]
pub struct Tool {
    definition: openarmature_llm::Tool,
    validator: Option<Arc<Validator>>,
    needs_approval: bool,
    handler: Arc<Handler>,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("definition", &self.definition)
            .field("needs_approval", &self.needs_approval)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// A tool named `name` running `f` on arguments of type `A`, whose JSON Schema
    /// (from `schemars`) becomes the definition's `parameters`.
    ///
    /// `f` receives the deserialized arguments and a [`ToolCtx`]; its result is
    /// serialized to JSON for the model.
    pub fn from_fn<A, R, F, Fut>(
        name: impl Into<String>,
        description: impl Into<String>,
        f: F,
    ) -> Self
    where
        A: JsonSchema + DeserializeOwned + Send + 'static,
        R: Serialize + 'static,
        F: Fn(A, ToolCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    {
        let name = name.into();
        let parameters = parameters_schema::<A>();
        let validator = jsonschema::validator_for(&parameters).ok().map(Arc::new);
        let f = Arc::new(f);
        let tool_name = name.clone();
        let handler = move |args: Value, ctx: ToolCtx| {
            let parsed =
                serde_json::from_value::<A>(args).map_err(|e| ToolError::InvalidArguments {
                    tool: tool_name.clone(),
                    message: e.to_string(),
                });
            let f = Arc::clone(&f);
            async move {
                let result = f(parsed?, ctx).await?;
                serde_json::to_value(result).map_err(|e| {
                    ToolError::failed(format!(
                        "the tool's result is not representable as JSON: {e}"
                    ))
                })
            }
            .boxed()
        };
        Tool {
            definition: openarmature_llm::Tool::new(name, description, parameters),
            validator,
            needs_approval: false,
            handler: Arc::new(handler),
        }
    }

    /// Requires a person's approval before every call: the agent suspends the
    /// invocation (see [`ToolCtx::require_approval`]) and runs the tool only once a
    /// resume approves it.
    pub fn needs_approval(mut self) -> Self {
        self.needs_approval = true;
        self
    }

    /// Whether every call needs approval.
    pub fn requires_approval(&self) -> bool {
        self.needs_approval
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.definition.name
    }

    /// The provider-facing definition (llm-provider §4).
    pub fn definition(&self) -> &openarmature_llm::Tool {
        &self.definition
    }

    /// Checks `arguments` against the schema, then runs the handler (approval first,
    /// when the tool needs it).
    ///
    /// # Errors
    /// [`ToolError::InvalidArguments`] for arguments that do not match; the handler's
    /// error otherwise.
    pub async fn call(&self, arguments: Value, ctx: ToolCtx) -> Result<Value, ToolError> {
        if let Some(validator) = &self.validator {
            let problems: Vec<String> = validator
                .iter_errors(&arguments)
                .map(|e| {
                    let at = e.instance_path().to_string();
                    if at.is_empty() {
                        e.to_string()
                    } else {
                        format!("at {at}: {e}")
                    }
                })
                .collect();
            if !problems.is_empty() {
                return Err(ToolError::InvalidArguments {
                    tool: self.name().to_owned(),
                    message: problems.join("; "),
                });
            }
        }
        if self.needs_approval {
            ctx.require_approval(None)?;
        }
        (self.handler)(arguments, ctx).await
    }
}

/// The argument type's JSON Schema as a tool `parameters` object (without the
/// `$schema` and `title` keywords, which providers do not need).
fn parameters_schema<A: JsonSchema>() -> Value {
    openarmature_llm::schema::json_schema_for::<A>()
}
