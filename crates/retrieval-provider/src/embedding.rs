//! Spec: retrieval-provider §2 (embedding runtime config), §3 (`EmbeddingProvider`:
//! `ready()`, `embed()`, per-instance model binding) and §4 (`EmbeddingResponse`,
//! `EmbeddingUsage`, the cross-impl invariants).

use futures::future::BoxFuture;
use openarmature_graph::NodeCtx;
use serde_json::{Map, Value};

pub use openarmature_core::vocab::retrieval::EmbeddingUsage;

use crate::error::RetrievalError;

/// Caller-supplied embedding request parameters (§2).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct EmbeddingConfig {
    /// The output vector size, on models that support it (Matryoshka).
    pub dimensions: Option<u32>,
    /// What the text is for (`query` / `document`, extensible); `None` is symmetric.
    pub input_type: Option<String>,
    /// Vendor-specific knobs forwarded to the wire body (the extras pass-through bag).
    pub extras: Map<String, Value>,
}

impl EmbeddingConfig {
    /// An empty config (every field unset).
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `dimensions`.
    pub fn dimensions(mut self, dimensions: u32) -> Self {
        self.dimensions = Some(dimensions);
        self
    }

    /// Sets `input_type`.
    pub fn input_type(mut self, input_type: impl Into<String>) -> Self {
        self.input_type = Some(input_type.into());
        self
    }

    /// Adds one extras key.
    pub fn extra(mut self, key: impl Into<String>, value: Value) -> Self {
        self.extras.insert(key.into(), value);
        self
    }

    /// The declared fields the caller set, by name (the event's `request_params`).
    pub fn request_params(&self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(d) = self.dimensions {
            m.insert("dimensions".into(), Value::from(d));
        }
        if let Some(t) = &self.input_type {
            m.insert("input_type".into(), Value::from(t.clone()));
        }
        m
    }
}

/// The normalized result of an `embed()` call (§4).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EmbeddingResponse {
    /// One vector per input string, in input order.
    pub vectors: Vec<Vec<f64>>,
    /// The model the provider reported (or the bound one when it reports none).
    pub model: String,
    /// The usage record, when the provider reported a well-formed one.
    pub usage: Option<EmbeddingUsage>,
    /// The provider's response id, when present and non-empty.
    pub response_id: Option<String>,
    /// The vectors' dimensionality.
    pub dimensions: usize,
    /// The provider response verbatim (the list of per-chunk responses when the call
    /// was chunked).
    pub raw: Value,
}

impl EmbeddingResponse {
    /// A response, checked against the §4 invariants for a call with `input_len`
    /// inputs: one vector per input, all of one (non-zero) dimensionality.
    ///
    /// # Errors
    /// `provider_invalid_response` when an invariant does not hold.
    pub fn checked(
        vectors: Vec<Vec<f64>>,
        input_len: usize,
        model: String,
        usage: Option<EmbeddingUsage>,
        response_id: Option<String>,
        raw: Value,
    ) -> Result<Self, RetrievalError> {
        if vectors.len() != input_len {
            return Err(RetrievalError::invalid_response(format!(
                "the provider returned {} vectors for {input_len} inputs",
                vectors.len()
            )));
        }
        let dimensions = vectors.first().map_or(0, Vec::len);
        if let Some((i, v)) = vectors
            .iter()
            .enumerate()
            .find(|(_, v)| v.len() != dimensions)
        {
            return Err(RetrievalError::invalid_response(format!(
                "vector {i} has {} dimensions, vector 0 has {dimensions}",
                v.len()
            )));
        }
        Ok(EmbeddingResponse {
            vectors,
            model,
            usage,
            response_id,
            dimensions,
            raw,
        })
    }
}

/// One `embed()` call: the inputs, the config, and the node it runs in (for the
/// typed events).
#[derive(Clone)]
#[non_exhaustive]
pub struct EmbeddingRequest {
    /// The strings to embed (always a list, §3).
    pub input: Vec<String>,
    /// The caller's config.
    pub config: EmbeddingConfig,
    /// The calling node, when the call runs inside one.
    pub node: Option<NodeCtx>,
}

impl std::fmt::Debug for EmbeddingRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddingRequest")
            .field("input", &self.input)
            .field("config", &self.config)
            .field("in_node", &self.node.is_some())
            .finish()
    }
}

impl EmbeddingRequest {
    /// A request embedding `input` with an empty config, outside any node.
    pub fn new<I, S>(input: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        EmbeddingRequest {
            input: input.into_iter().map(Into::into).collect(),
            config: EmbeddingConfig::default(),
            node: None,
        }
    }

    /// Sets the config.
    pub fn config(mut self, config: EmbeddingConfig) -> Self {
        self.config = config;
        self
    }

    /// Runs the call inside `ctx`'s node: its typed events go to the node's observers.
    pub fn in_node(mut self, ctx: &NodeCtx) -> Self {
        self.node = Some(ctx.clone());
        self
    }
}

/// An embedding provider bound to one model (§3). Stateless; never retries.
pub trait EmbeddingProvider: Send + Sync {
    /// The bound model identifier.
    fn model(&self) -> &str;

    /// The provider identifier reported on events and spans (`gen_ai.system`).
    fn provider_name(&self) -> &str;

    /// Checks that the bound model can serve requests (§3 `ready()`).
    ///
    /// # Errors
    /// `provider_invalid_model`, `provider_model_not_loaded`,
    /// `provider_authentication` or `provider_unavailable`.
    fn ready(&self) -> BoxFuture<'_, Result<(), RetrievalError>>;

    /// The wire exchange of one validated call: map, send, map the answer back (with
    /// the §4 invariants checked). Never retries.
    ///
    /// # Errors
    /// Any §7 category.
    fn send<'a>(
        &'a self,
        input: &'a [String],
        config: &'a EmbeddingConfig,
    ) -> BoxFuture<'a, Result<EmbeddingResponse, RetrievalError>>;

    /// An `embed()` call (§3): pre-send validation, [`EmbeddingProvider::send`], and —
    /// inside a node — exactly one `EmbeddingEvent` or `EmbeddingFailedEvent`.
    ///
    /// # Errors
    /// `provider_invalid_request` for an empty input list or `dimensions = 0`; any
    /// §7 category from the provider.
    ///
    /// # Cancel safety
    /// Dropping the future abandons the call; no event is dispatched.
    fn embed<'a>(
        &'a self,
        request: &'a EmbeddingRequest,
    ) -> BoxFuture<'a, Result<EmbeddingResponse, RetrievalError>> {
        Box::pin(crate::call::embed(self, request))
    }
}

/// §3 / §7 pre-send validation.
pub(crate) fn validate(request: &EmbeddingRequest) -> Result<(), RetrievalError> {
    if request.input.is_empty() {
        return Err(RetrievalError::invalid_request(
            "embed() needs at least one input string",
        ));
    }
    if request.config.dimensions == Some(0) {
        return Err(RetrievalError::invalid_request(
            "dimensions must be positive",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::error::RetrievalCategory;

    #[test]
    fn responses_enforce_the_section_4_invariants() {
        let ok = EmbeddingResponse::checked(
            vec![vec![0.1, 0.2], vec![0.3, 0.4]],
            2,
            "m".into(),
            None,
            None,
            Value::Null,
        )
        .unwrap();
        assert_eq!(ok.dimensions, 2);
        let count =
            EmbeddingResponse::checked(vec![vec![0.1]], 2, "m".into(), None, None, Value::Null);
        assert_eq!(
            count.unwrap_err().category(),
            RetrievalCategory::InvalidResponse
        );
        let dims = EmbeddingResponse::checked(
            vec![vec![0.1, 0.2], vec![0.3]],
            2,
            "m".into(),
            None,
            None,
            Value::Null,
        );
        assert_eq!(
            dims.unwrap_err().category(),
            RetrievalCategory::InvalidResponse
        );
    }

    #[test]
    fn request_params_carry_only_what_the_caller_set() {
        assert!(EmbeddingConfig::new().request_params().is_empty());
        let p = EmbeddingConfig::new()
            .dimensions(128)
            .extra("user", Value::from("u"))
            .request_params();
        assert_eq!(Value::Object(p), serde_json::json!({"dimensions": 128}));
    }

    #[test]
    fn empty_input_and_zero_dimensions_are_rejected_before_sending() {
        let empty = EmbeddingRequest::new(Vec::<String>::new());
        assert_eq!(
            validate(&empty).unwrap_err().category(),
            RetrievalCategory::InvalidRequest
        );
        let zero = EmbeddingRequest::new(["a"]).config(EmbeddingConfig::new().dimensions(0));
        assert!(validate(&zero).is_err());
        assert!(validate(&EmbeddingRequest::new(["a"])).is_ok());
    }
}
