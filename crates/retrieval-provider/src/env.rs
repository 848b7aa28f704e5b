//! Spec: retrieval-provider §8 (construction) — `from_env(model)` where the vendor has
//! a key convention: a builder with the key (and base URL) from the vendor SDK's
//! variables, bound to the model the caller names (no vendor has a model variable).
//!
//! One trait, [`FromEnv`], carries `from_env` / `from_vars` for every hosted provider;
//! each provider names its vendor's variables ([`VendorVars`]) once.
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

/// One vendor's variables and how they are read.
pub struct VendorVars {
    /// The API key's variable.
    key: &'static [&'static str],
    /// The base URL's variable, if the vendor has one.
    base: Option<&'static str>,
    /// The origin a set base URL names.
    origin: fn(&str) -> &str,
    key_with_base: KeyWithBase,
}

/// `OPENAI_API_KEY` / `OPENAI_BASE_URL` (a trailing `/v1` removed; the key optional
/// with a base URL).
const OPENAI: VendorVars = VendorVars {
    key: &["OPENAI_API_KEY"],
    base: Some("OPENAI_BASE_URL"),
    origin: without_v1,
    key_with_base: KeyWithBase::Optional,
};

/// `CO_API_KEY` (required) / `CO_API_URL` (the origin, as the Cohere SDK).
const COHERE: VendorVars = VendorVars {
    key: &["CO_API_KEY"],
    base: Some("CO_API_URL"),
    origin: as_is,
    key_with_base: KeyWithBase::Required,
};

/// `JINA_API_KEY` (required); no base URL variable.
const JINA: VendorVars = VendorVars {
    key: &["JINA_API_KEY"],
    base: None,
    origin: as_is,
    key_with_base: KeyWithBase::Required,
};

impl VendorVars {
    /// `builder` with the key and the base URL read through `vars`.
    fn configure<P>(
        &self,
        builder: ProviderBuilder<P>,
        vars: &impl VarLookup,
    ) -> Result<ProviderBuilder<P>, EnvError> {
        let base = self.base.and_then(|name| first_set(vars, &[name]));
        let key = if base.is_some() && self.key_with_base == KeyWithBase::Optional {
            first_set(vars, self.key)
        } else {
            Some(require(vars, self.key, KEY)?)
        };
        let builder = match base {
            Some(base) => builder.base_url((self.origin)(base.trim_end_matches('/'))),
            None => builder,
        };
        Ok(match key {
            Some(key) => builder.api_key(key),
            None => builder,
        })
    }
}

fn as_is(base: &str) -> &str {
    base
}

fn without_v1(base: &str) -> &str {
    base.strip_suffix("/v1").unwrap_or(base)
}

mod sealed {
    use crate::builder::ProviderBuilder;

    /// A hosted provider with a vendor key convention (implemented in this crate
    /// only).
    pub trait Vendor: Sized {
        /// The vendor's variables.
        const VARS: &'static super::VendorVars;

        /// The provider's `builder`: a builder bound to a model.
        const BUILDER: fn(String) -> ProviderBuilder<Self>;
    }
}

/// `from_env(model)` / `from_vars(model, lookup)` on the hosted providers: a builder
/// bound to `model` with the key (and base URL) from the vendor SDK's variables (see
/// the table below; blank values count as unset, values are trimmed). Bring it into
/// scope with `use openarmature_retrieval::FromEnv`.
///
/// | provider | API key (required) | base URL (optional) |
/// |---|---|---|
/// | [`OpenAiEmbeddings`] | `OPENAI_API_KEY` (optional when `OPENAI_BASE_URL` is set) | `OPENAI_BASE_URL`, a trailing `/v1` removed (the routes carry it) |
/// | [`CohereEmbeddings`], [`CohereRerank`] | `CO_API_KEY` | `CO_API_URL` (the origin) |
/// | [`JinaEmbeddings`], [`JinaRerank`] | `JINA_API_KEY` | — |
///
/// # Examples
/// ```no_run
/// use openarmature_retrieval::{FromEnv, JinaEmbeddings};
///
/// let embedder = JinaEmbeddings::from_env("jina-embeddings-v3")?.build()?;
/// # let _ = embedder;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait FromEnv: sealed::Vendor {
    /// A builder bound to `model` from the process environment.
    ///
    /// # Errors
    /// [`EnvError`] (`provider_authentication`) naming the key variable when it is
    /// needed and unset.
    fn from_env(model: impl Into<String>) -> Result<ProviderBuilder<Self>, EnvError> {
        Self::from_vars(model, process_env)
    }

    /// [`FromEnv::from_env`] reading the variables through `vars`.
    ///
    /// # Errors
    /// As [`FromEnv::from_env`].
    fn from_vars(
        model: impl Into<String>,
        vars: impl VarLookup,
    ) -> Result<ProviderBuilder<Self>, EnvError> {
        Self::VARS.configure((Self::BUILDER)(model.into()), &vars)
    }
}

impl<P: sealed::Vendor> FromEnv for P {}

impl sealed::Vendor for OpenAiEmbeddings {
    const VARS: &'static VendorVars = &OPENAI;
    const BUILDER: fn(String) -> ProviderBuilder<Self> = Self::builder;
}

impl sealed::Vendor for CohereEmbeddings {
    const VARS: &'static VendorVars = &COHERE;
    const BUILDER: fn(String) -> ProviderBuilder<Self> = Self::builder;
}

impl sealed::Vendor for CohereRerank {
    const VARS: &'static VendorVars = &COHERE;
    const BUILDER: fn(String) -> ProviderBuilder<Self> = Self::builder;
}

impl sealed::Vendor for JinaEmbeddings {
    const VARS: &'static VendorVars = &JINA;
    const BUILDER: fn(String) -> ProviderBuilder<Self> = Self::builder;
}

impl sealed::Vendor for JinaRerank {
    const VARS: &'static VendorVars = &JINA;
    const BUILDER: fn(String) -> ProviderBuilder<Self> = Self::builder;
}

#[cfg(test)]
mod tests {
    use super::*;

    use openarmature_http::env::from_pairs as vars;

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
