//! Spec: llm-provider §8 (construction) — `from_env()` on each wire mapping: a
//! builder configured from the vendor SDKs' environment variables.
//!
//! | mapping | API key | base URL | bound model |
//! |---|---|---|---|
//! | [`OpenAiProvider`] | `OPENAI_API_KEY` | `OPENAI_BASE_URL` (version included, as the OpenAI SDKs) | `OPENAI_MODEL` |
//! | [`AnthropicProvider`] | `ANTHROPIC_API_KEY` | `ANTHROPIC_BASE_URL` (host only, as the Anthropic SDKs; `/v1` appended) | `ANTHROPIC_MODEL` |
//! | [`GeminiProvider`] | `GOOGLE_API_KEY`, else `GEMINI_API_KEY` (the google-genai SDK's order) | `GOOGLE_GEMINI_BASE_URL` (host only; `/v1beta` appended) | `GEMINI_MODEL` |
//!
//! The vendor SDKs take the model per call; a provider here is bound to one model,
//! so the model variable is required. The base URL is optional (the hosted API by
//! default). The key is required, except for the OpenAI-compatible mapping with
//! `OPENAI_BASE_URL` set: local servers (vLLM, Ollama, llama.cpp) usually need none.
//! Blank values count as unset; values are trimmed.

use openarmature_core::Category;
use openarmature_http::env::{first_set, process_env, require, with_version_segment, VarLookup};
use openarmature_http::EnvError;

use crate::anthropic::AnthropicBuilder;
use crate::gemini::GeminiBuilder;
use crate::openai::OpenAiBuilder;
use crate::{AnthropicProvider, GeminiProvider, OpenAiProvider};

/// The hosted OpenAI API, version included (the default when `OPENAI_BASE_URL` is
/// unset).
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

const KEY: Category = Category::PROVIDER_AUTHENTICATION;
const SETTING: Category = Category::PROVIDER_INVALID_REQUEST;

impl OpenAiProvider {
    /// A builder from `OPENAI_MODEL` (required), `OPENAI_BASE_URL` (default
    /// [`OPENAI_DEFAULT_BASE_URL`]) and `OPENAI_API_KEY` (required unless
    /// `OPENAI_BASE_URL` is set). The other setters still apply before `build()`.
    ///
    /// # Errors
    /// [`EnvError`] naming the missing variable: `provider_authentication` for the
    /// key, `provider_invalid_request` for the model.
    ///
    /// # Examples
    /// ```no_run
    /// use openarmature_llm::OpenAiProvider;
    ///
    /// let provider = OpenAiProvider::from_env()?.build()?;
    /// # let _ = provider;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_env() -> Result<OpenAiBuilder, EnvError> {
        Self::from_vars(process_env)
    }

    /// [`OpenAiProvider::from_env`] reading the variables through `vars` (a map in
    /// tests, a configuration source of your own).
    ///
    /// # Errors
    /// As [`OpenAiProvider::from_env`].
    pub fn from_vars(vars: impl VarLookup) -> Result<OpenAiBuilder, EnvError> {
        let model = require(&vars, &["OPENAI_MODEL"], SETTING)?;
        let base_url = first_set(&vars, &["OPENAI_BASE_URL"]);
        let key = match base_url {
            Some(_) => first_set(&vars, &["OPENAI_API_KEY"]),
            None => Some(require(&vars, &["OPENAI_API_KEY"], KEY)?),
        };
        let builder = OpenAiProvider::builder(
            base_url.unwrap_or_else(|| OPENAI_DEFAULT_BASE_URL.to_owned()),
            model,
        );
        Ok(match key {
            Some(key) => builder.api_key(key),
            None => builder,
        })
    }
}

impl AnthropicProvider {
    /// A builder from `ANTHROPIC_API_KEY` and `ANTHROPIC_MODEL` (both required) and
    /// `ANTHROPIC_BASE_URL` (optional; like the Anthropic SDKs it names the host, and
    /// `/v1` is appended unless the path already ends with it).
    ///
    /// # Errors
    /// [`EnvError`] naming the missing variable: `provider_authentication` for the
    /// key, `provider_invalid_request` for the model.
    pub fn from_env() -> Result<AnthropicBuilder, EnvError> {
        Self::from_vars(process_env)
    }

    /// [`AnthropicProvider::from_env`] reading the variables through `vars`.
    ///
    /// # Errors
    /// As [`AnthropicProvider::from_env`].
    pub fn from_vars(vars: impl VarLookup) -> Result<AnthropicBuilder, EnvError> {
        let model = require(&vars, &["ANTHROPIC_MODEL"], SETTING)?;
        let key = require(&vars, &["ANTHROPIC_API_KEY"], KEY)?;
        let builder = AnthropicProvider::builder(model).api_key(key);
        Ok(match first_set(&vars, &["ANTHROPIC_BASE_URL"]) {
            Some(base) => builder.base_url(with_version_segment(&base, "v1")),
            None => builder,
        })
    }
}

impl GeminiProvider {
    /// A builder from `GEMINI_MODEL` (required), the key from `GOOGLE_API_KEY` or
    /// else `GEMINI_API_KEY` (required; the google-genai SDK's precedence), and
    /// `GOOGLE_GEMINI_BASE_URL` (optional; host only, `/v1beta` appended unless the
    /// path already ends with it).
    ///
    /// # Errors
    /// [`EnvError`] naming the missing variable: `provider_authentication` for the
    /// key (`GEMINI_API_KEY`, with `GOOGLE_API_KEY` as the accepted alternative),
    /// `provider_invalid_request` for the model.
    pub fn from_env() -> Result<GeminiBuilder, EnvError> {
        Self::from_vars(process_env)
    }

    /// [`GeminiProvider::from_env`] reading the variables through `vars`.
    ///
    /// # Errors
    /// As [`GeminiProvider::from_env`].
    pub fn from_vars(vars: impl VarLookup) -> Result<GeminiBuilder, EnvError> {
        let model = require(&vars, &["GEMINI_MODEL"], SETTING)?;
        let key = match first_set(&vars, &["GOOGLE_API_KEY"]) {
            Some(key) => key,
            None => require(&vars, &["GEMINI_API_KEY", "GOOGLE_API_KEY"], KEY)?,
        };
        let builder = GeminiProvider::builder(model).api_key(key);
        Ok(match first_set(&vars, &["GOOGLE_GEMINI_BASE_URL"]) {
            Some(base) => builder.base_url(with_version_segment(&base, "v1beta")),
            None => builder,
        })
    }
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod tests;
