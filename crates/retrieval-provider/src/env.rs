//! Spec: retrieval-provider §8 (construction) — `from_env(model)` where the vendor has
//! a key convention: a builder with the key (and base URL) from the vendor SDK's
//! variables, bound to the model the caller names (no vendor has a model variable).
//!
//! | provider | API key (required) | base URL (optional) |
//! |---|---|---|
//! | [`OpenAiEmbeddings`] | `OPENAI_API_KEY` (optional when `OPENAI_BASE_URL` is set) | `OPENAI_BASE_URL`, a trailing `/v1` removed (the routes carry it) |
//! | [`CohereEmbeddings`], [`CohereRerank`] | `CO_API_KEY` (the Cohere SDK's) | `CO_API_URL` (the origin, as the SDK) |
//! | [`JinaEmbeddings`], [`JinaRerank`] | `JINA_API_KEY` | — |
//!
//! TEI is self-hosted with no convention; build it with `TeiEmbeddings::builder`.
//! Blank values count as unset; values are trimmed.

use openarmature_core::Category;
use openarmature_http::env::{first_set, process_env, require, VarLookup};
use openarmature_http::EnvError;

use crate::builder::ProviderBuilder;
use crate::{CohereEmbeddings, CohereRerank, JinaEmbeddings, JinaRerank, OpenAiEmbeddings};

const KEY: Category = Category::PROVIDER_AUTHENTICATION;

/// Whether a set base URL makes the key optional (a self-hosted server).
#[derive(Clone, Copy, PartialEq, Eq)]
enum KeyWithBase {
    Optional,
    Required,
}

/// `builder` with the key from `key_var` and the base URL from `base_var` through
/// `origin`.
fn configure<P>(
    builder: ProviderBuilder<P>,
    vars: &impl VarLookup,
    key_var: &'static [&'static str],
    base_var: Option<&str>,
    origin: fn(&str) -> &str,
    key_with_base: KeyWithBase,
) -> Result<ProviderBuilder<P>, EnvError> {
    let base = base_var.and_then(|name| first_set(vars, &[name]));
    let key = if base.is_some() && key_with_base == KeyWithBase::Optional {
        first_set(vars, key_var)
    } else {
        Some(require(vars, key_var, KEY)?)
    };
    let builder = match base {
        Some(base) => builder.base_url(origin(base.trim_end_matches('/'))),
        None => builder,
    };
    Ok(match key {
        Some(key) => builder.api_key(key),
        None => builder,
    })
}

fn as_is(base: &str) -> &str {
    base
}

fn without_v1(base: &str) -> &str {
    base.strip_suffix("/v1").unwrap_or(base)
}

impl OpenAiEmbeddings {
    /// A builder bound to `model` with `OPENAI_API_KEY` and `OPENAI_BASE_URL` (a
    /// trailing `/v1` removed: the route carries it). The key may be absent when
    /// `OPENAI_BASE_URL` is set (a self-hosted server).
    ///
    /// # Errors
    /// [`EnvError`] (`provider_authentication`) naming `OPENAI_API_KEY` when it is
    /// needed and unset.
    pub fn from_env(model: impl Into<String>) -> Result<crate::OpenAiEmbeddingsBuilder, EnvError> {
        Self::from_vars(model, process_env)
    }

    /// [`OpenAiEmbeddings::from_env`] reading the variables through `vars`.
    ///
    /// # Errors
    /// As [`OpenAiEmbeddings::from_env`].
    pub fn from_vars(
        model: impl Into<String>,
        vars: impl VarLookup,
    ) -> Result<crate::OpenAiEmbeddingsBuilder, EnvError> {
        configure(
            Self::builder(model),
            &vars,
            &["OPENAI_API_KEY"],
            Some("OPENAI_BASE_URL"),
            without_v1,
            KeyWithBase::Optional,
        )
    }
}

impl CohereEmbeddings {
    /// A builder bound to `model` with `CO_API_KEY` (required) and `CO_API_URL`.
    ///
    /// # Errors
    /// [`EnvError`] (`provider_authentication`) naming `CO_API_KEY`.
    pub fn from_env(model: impl Into<String>) -> Result<crate::CohereEmbeddingsBuilder, EnvError> {
        Self::from_vars(model, process_env)
    }

    /// [`CohereEmbeddings::from_env`] reading the variables through `vars`.
    ///
    /// # Errors
    /// As [`CohereEmbeddings::from_env`].
    pub fn from_vars(
        model: impl Into<String>,
        vars: impl VarLookup,
    ) -> Result<crate::CohereEmbeddingsBuilder, EnvError> {
        configure(
            Self::builder(model),
            &vars,
            &["CO_API_KEY"],
            Some("CO_API_URL"),
            as_is,
            KeyWithBase::Required,
        )
    }
}

impl CohereRerank {
    /// A builder bound to `model` with `CO_API_KEY` (required) and `CO_API_URL`.
    ///
    /// # Errors
    /// [`EnvError`] (`provider_authentication`) naming `CO_API_KEY`.
    pub fn from_env(model: impl Into<String>) -> Result<crate::CohereRerankBuilder, EnvError> {
        Self::from_vars(model, process_env)
    }

    /// [`CohereRerank::from_env`] reading the variables through `vars`.
    ///
    /// # Errors
    /// As [`CohereRerank::from_env`].
    pub fn from_vars(
        model: impl Into<String>,
        vars: impl VarLookup,
    ) -> Result<crate::CohereRerankBuilder, EnvError> {
        configure(
            Self::builder(model),
            &vars,
            &["CO_API_KEY"],
            Some("CO_API_URL"),
            as_is,
            KeyWithBase::Required,
        )
    }
}

impl JinaEmbeddings {
    /// A builder bound to `model` with `JINA_API_KEY` (required).
    ///
    /// # Errors
    /// [`EnvError`] (`provider_authentication`) naming `JINA_API_KEY`.
    pub fn from_env(model: impl Into<String>) -> Result<crate::JinaEmbeddingsBuilder, EnvError> {
        Self::from_vars(model, process_env)
    }

    /// [`JinaEmbeddings::from_env`] reading the variables through `vars`.
    ///
    /// # Errors
    /// As [`JinaEmbeddings::from_env`].
    pub fn from_vars(
        model: impl Into<String>,
        vars: impl VarLookup,
    ) -> Result<crate::JinaEmbeddingsBuilder, EnvError> {
        configure(
            Self::builder(model),
            &vars,
            &["JINA_API_KEY"],
            None,
            as_is,
            KeyWithBase::Required,
        )
    }
}

impl JinaRerank {
    /// A builder bound to `model` with `JINA_API_KEY` (required).
    ///
    /// # Errors
    /// [`EnvError`] (`provider_authentication`) naming `JINA_API_KEY`.
    pub fn from_env(model: impl Into<String>) -> Result<crate::JinaRerankBuilder, EnvError> {
        Self::from_vars(model, process_env)
    }

    /// [`JinaRerank::from_env`] reading the variables through `vars`.
    ///
    /// # Errors
    /// As [`JinaRerank::from_env`].
    pub fn from_vars(
        model: impl Into<String>,
        vars: impl VarLookup,
    ) -> Result<crate::JinaRerankBuilder, EnvError> {
        configure(
            Self::builder(model),
            &vars,
            &["JINA_API_KEY"],
            None,
            as_is,
            KeyWithBase::Required,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &'static [(&'static str, &'static str)]) -> impl VarLookup {
        move |name: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    fn conn<P>(b: &ProviderBuilder<P>) -> (&str, &str, Option<&str>) {
        (
            b.conn.base_url.as_str(),
            b.conn.model.as_str(),
            b.conn.api_key.as_deref(),
        )
    }

    #[test]
    fn openai_embeddings_read_the_openai_variables() -> Result<(), EnvError> {
        let b = OpenAiEmbeddings::from_vars("e", vars(&[("OPENAI_API_KEY", "sk")]))?;
        assert_eq!(conn(&b), ("https://api.openai.com", "e", Some("sk")));
        let local = vars(&[("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1/")]);
        let b = OpenAiEmbeddings::from_vars("e", local)?;
        assert_eq!(conn(&b), ("http://127.0.0.1:8000", "e", None));
        let err = OpenAiEmbeddings::from_vars("e", vars(&[])).err();
        assert_eq!(
            err.map(|e| (e.variable(), e.category())),
            Some(("OPENAI_API_KEY", Category::PROVIDER_AUTHENTICATION))
        );
        Ok(())
    }

    #[test]
    fn cohere_reads_co_api_key_and_url() -> Result<(), EnvError> {
        let set = vars(&[("CO_API_KEY", "co"), ("CO_API_URL", "http://127.0.0.1:9/")]);
        let b = CohereRerank::from_vars("r", set)?;
        assert_eq!(conn(&b), ("http://127.0.0.1:9", "r", Some("co")));
        let b = CohereEmbeddings::from_vars("e", vars(&[("CO_API_KEY", "co")]))?;
        assert_eq!(conn(&b), ("https://api.cohere.com", "e", Some("co")));
        // The base URL does not make the key optional for a hosted vendor.
        let err = CohereRerank::from_vars("r", vars(&[("CO_API_URL", "http://h")])).err();
        assert_eq!(err.map(|e| e.variable()), Some("CO_API_KEY"));
        Ok(())
    }

    #[test]
    fn jina_needs_its_key() -> Result<(), EnvError> {
        let b = JinaEmbeddings::from_vars("j", vars(&[("JINA_API_KEY", "jk")]))?;
        assert_eq!(conn(&b), ("https://api.jina.ai", "j", Some("jk")));
        let err = JinaRerank::from_vars("j", vars(&[("JINA_API_KEY", "")])).err();
        assert_eq!(
            err.map(|e| (e.variable(), e.category())),
            Some(("JINA_API_KEY", Category::PROVIDER_AUTHENTICATION))
        );
        Ok(())
    }
}
