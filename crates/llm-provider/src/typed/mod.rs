//! Spec: llm-provider §5 `response_schema`, §6 `parsed`, §7 `structured_output_invalid`
//! and §7.1 *Call-level retry* (reask) — typed structured output, a project addition
//! on top of them.
//!
//! [`TypedCompletion::complete_typed`] takes a Rust type `T` (`schemars::JsonSchema`
//! and `serde::de::DeserializeOwned`): the request's `response_schema` becomes the
//! schema derived from `T` ([`json_schema_for`]), the provider validates the answer
//! against it as for any structured call, the request's call-level retry re-asks on
//! `structured_output_invalid` when it has a reask builder, and the validated value is
//! deserialized into `T`. The untyped path ([`Provider::complete`] with a
//! hand-written schema, `Response::parsed`) is unchanged.
//!
//! A value that validates against the derived schema but that `T`'s `Deserialize`
//! still rejects (a custom `deserialize_with`, say) fails as
//! `structured_output_invalid` after the call, without a further reask.
//!
//! # Bounding output on small models
//! A small model may run on until its token bound (or the server's context) is
//! reached. Bound both: `RuntimeConfig::max_tokens`, and the schema itself with
//! `#[schemars(length(max = N))]` on strings (`maxLength`) and vectors (`maxItems`).
//! A truncated answer (`finish_reason = length`) is diagnosed as such
//! ([`crate::StructuredOutputInvalid::is_truncated`]) and not re-asked with the
//! same bound.
//!
//! # Examples
//! ```no_run
//! use openarmature_llm::{CompletionRequest, Message, OpenAiProvider, RuntimeConfig, TypedCompletion};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct City {
//!     #[schemars(length(max = 40))]
//!     name: String,
//!     population: u64,
//! }
//!
//! # async fn demo() -> Result<(), openarmature_llm::LlmError> {
//! let provider = OpenAiProvider::builder("http://localhost:8080/v1", "local").build()?;
//! let request = CompletionRequest::new(vec![Message::user("The largest city in Peru, as JSON.")])
//!     .config(RuntimeConfig::default().max_tokens(128));
//! let city = provider.complete_typed::<City>(&request).await?;
//! println!("{} ({} people, {:?} tokens)", city.value.name, city.value.population, city.response.usage.total_tokens);
//! # Ok(())
//! # }
//! ```

mod truncation;

use std::marker::PhantomData;

use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{LlmError, StructuredOutputInvalid};
use crate::provider::{CompletionRequest, Provider};
use crate::response::Response;

pub(crate) use truncation::same_bound_after_truncation;

/// The JSON Schema of `T` as a provider-facing schema: derived with `schemars`, without
/// the `$schema` and `title` keywords (providers do not need them, and a `title` would
/// otherwise name the OpenAI `response_format`).
///
/// # Examples
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Point { x: i32, y: i32 }
/// let schema = openarmature_llm::schema::json_schema_for::<Point>();
/// assert_eq!(schema["type"], "object");
/// assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
/// ```
pub fn json_schema_for<T: JsonSchema + ?Sized>() -> Value {
    let mut schema = schemars::schema_for!(T).to_value();
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
        map.remove("title");
    }
    schema
}

/// The result of a typed call: the deserialized value and the [`Response`] it came
/// from (usage, finish reason, raw body; `parsed` holds the validated JSON).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Typed<T> {
    /// The answer, deserialized.
    pub value: T,
    /// The provider's response.
    pub response: Response,
}

impl CompletionRequest {
    /// Sets `response_schema` to the schema derived from `T` ([`json_schema_for`]).
    pub fn response_type<T: JsonSchema + ?Sized>(self) -> Self {
        self.response_schema(json_schema_for::<T>())
    }
}

/// Typed structured output on every [`Provider`] (see the [module docs](self)).
pub trait TypedCompletion: Provider {
    /// A `complete()` call whose answer is deserialized into `T`: the request is sent
    /// with `response_schema` set to `T`'s derived schema (replacing any schema it
    /// had), under its call-level retry (reasks included), and the validated value is
    /// deserialized.
    ///
    /// # Errors
    /// The call's error (any §7 category); `structured_output_invalid` when the
    /// answer does not validate (after any reasks) or does not deserialize into `T`;
    /// `provider_invalid_request` when `T`'s schema is not an object schema.
    fn complete_typed<'a, T>(
        &'a self,
        request: &'a CompletionRequest,
    ) -> BoxFuture<'a, Result<Typed<T>, LlmError>>
    where
        T: JsonSchema + DeserializeOwned + Send + 'a,
    {
        Box::pin(complete_typed(self, request, PhantomData))
    }
}

impl<P: Provider + ?Sized> TypedCompletion for P {}

async fn complete_typed<P, T>(
    provider: &P,
    request: &CompletionRequest,
    _: PhantomData<T>,
) -> Result<Typed<T>, LlmError>
where
    P: Provider + ?Sized,
    T: JsonSchema + DeserializeOwned,
{
    let request = request.clone().response_type::<T>();
    let response = provider.complete(&request).await?;
    let value = match &response.parsed {
        Some(parsed) => T::deserialize(parsed).map_err(|e| e.to_string()),
        None => Err("the response carries no structured value (a tool-call answer?)".into()),
    };
    match value {
        Ok(value) => Ok(Typed { value, response }),
        Err(message) => Err(undeserializable(request.response_schema, response, message)),
    }
}

/// `structured_output_invalid` for an answer that validated but did not deserialize.
fn undeserializable(schema: Option<Value>, response: Response, message: String) -> LlmError {
    LlmError::StructuredOutputInvalid(Box::new(StructuredOutputInvalid {
        response_schema: schema.unwrap_or(Value::Null),
        output_content: response.message.text().unwrap_or_default(),
        error_message: format!("content does not deserialize into the requested type: {message}"),
        finish_reason: response.finish_reason,
        usage: response.usage,
        response_id: response.response_id().map(str::to_owned),
        response_model: response.response_model().map(str::to_owned),
        raw: response.raw.into_value(),
    }))
}

#[cfg(test)]
mod tests;
