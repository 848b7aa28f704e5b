//! Spec: conformance-adapter §5.15 (`mapping:` and the provider construction blocks),
//! §5.14 (`chunk_size`), retrieval-provider §8.1–§8.4 (the constructions) — builds
//! the provider a node calls.
//!
//! Register V1: a block's `base_url` keeps its host and route, and the provider's
//! client resolves that host to the case's 127.0.0.1 mock; an `https` origin is
//! dialled as plain `http` (the mock terminates no TLS) and an explicit port is
//! replaced by the mock's. Register V2: without `mapping:` (the pre-wire-mapping
//! fixtures 001–012) embeddings run through the OpenAI-compatible mapping and rerank
//! through the harness stand-in ([`super::standin`]); the bound model is the call's
//! `model`, else the first 2xx mock body's `model`, else `text-embedding-test` /
//! `rerank-test`.

use std::sync::Arc;
use std::time::Duration;

use openarmature_retrieval::{
    CohereEmbeddings, CohereRerank, EmbeddingProvider, JinaEmbeddings, JinaRerank,
    OpenAiEmbeddings, RerankProvider, TeiEmbeddings, TeiRerank, Transport,
};

use super::model::{Fixture, ProviderBlock};
use super::standin::StandInRerank;
use crate::failure::{Check, Failure};
use crate::http_mock::MockServer;

/// The two protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Embed,
    Rerank,
}

/// The wire mapping a fixture selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mapping {
    /// No `mapping:` (register V2).
    StandIn,
    Tei,
    Jina,
    OpenAi,
    Cohere,
}

/// Per (mapping, kind): the construction block, the route the mapping appends to
/// the origin, its default per-call cap, and the optional block fields it takes.
struct Wiring {
    mapping: Mapping,
    kind: Kind,
    block: &'static str,
    route: &'static str,
    cap: Option<usize>,
    fields: &'static [&'static str],
}

const WIRING: &[Wiring] = &[
    Wiring {
        mapping: Mapping::StandIn,
        kind: Kind::Embed,
        block: "",
        route: "/v1/embeddings",
        cap: Some(2048),
        fields: &[],
    },
    Wiring {
        mapping: Mapping::StandIn,
        kind: Kind::Rerank,
        block: "",
        route: "/v2/rerank",
        cap: None,
        fields: &[],
    },
    Wiring {
        mapping: Mapping::Tei,
        kind: Kind::Embed,
        block: "tei_embedding_provider",
        route: "/embed",
        cap: Some(32),
        fields: &[
            "chunk_size",
            "input_type_prompt_map",
            "query_prefix",
            "document_prefix",
        ],
    },
    Wiring {
        mapping: Mapping::Tei,
        kind: Kind::Rerank,
        block: "tei_rerank_provider",
        route: "/rerank",
        cap: Some(32),
        fields: &["chunk_size"],
    },
    Wiring {
        mapping: Mapping::Jina,
        kind: Kind::Embed,
        block: "jina_embedding_provider",
        route: "/v1/embeddings",
        cap: None,
        fields: &["api_key"],
    },
    Wiring {
        mapping: Mapping::Jina,
        kind: Kind::Rerank,
        block: "jina_rerank_provider",
        route: "/v1/rerank",
        cap: None,
        fields: &["api_key"],
    },
    Wiring {
        mapping: Mapping::OpenAi,
        kind: Kind::Embed,
        block: "openai_embedding_provider",
        route: "/v1/embeddings",
        cap: Some(2048),
        fields: &["api_key", "chunk_size", "query_prefix", "document_prefix"],
    },
    Wiring {
        mapping: Mapping::Cohere,
        kind: Kind::Embed,
        block: "cohere_embedding_provider",
        route: "/v2/embed",
        cap: Some(96),
        fields: &["api_key", "chunk_size"],
    },
    Wiring {
        mapping: Mapping::Cohere,
        kind: Kind::Rerank,
        block: "cohere_rerank_provider",
        route: "/v2/rerank",
        cap: None,
        fields: &["api_key"],
    },
];

impl Mapping {
    /// The `mapping:` value (`None`: absent).
    pub(super) fn parse(name: Option<&str>) -> Option<Mapping> {
        Some(match name {
            None => Mapping::StandIn,
            Some("tei") => Mapping::Tei,
            Some("jina") => Mapping::Jina,
            Some("openai") => Mapping::OpenAi,
            Some("cohere") => Mapping::Cohere,
            Some(_) => return None,
        })
    }

    fn wiring(self, kind: Kind) -> Option<&'static Wiring> {
        WIRING.iter().find(|w| w.mapping == self && w.kind == kind)
    }
}

/// The block `name` of the fixture.
fn block<'f>(fixture: &'f Fixture, name: &str) -> Option<&'f ProviderBlock> {
    match name {
        "tei_embedding_provider" => fixture.tei_embedding_provider.as_ref(),
        "tei_rerank_provider" => fixture.tei_rerank_provider.as_ref(),
        "jina_embedding_provider" => fixture.jina_embedding_provider.as_ref(),
        "jina_rerank_provider" => fixture.jina_rerank_provider.as_ref(),
        "openai_embedding_provider" => fixture.openai_embedding_provider.as_ref(),
        "cohere_embedding_provider" => fixture.cohere_embedding_provider.as_ref(),
        "cohere_rerank_provider" => fixture.cohere_rerank_provider.as_ref(),
        _ => None,
    }
}

/// A provider bound for one node, and what the assertions need to know about it.
pub(super) struct Bound {
    pub(super) embed: Option<Arc<dyn EmbeddingProvider>>,
    pub(super) rerank: Option<Arc<dyn RerankProvider>>,
    pub(super) mapping: Mapping,
    /// The bound model identifier.
    pub(super) model: String,
    /// The API key the block binds (sent as `Authorization: Bearer <key>`).
    pub(super) api_key: Option<String>,
    /// The origin the fixture names (the stand-in: the mock's own origin).
    pub(super) base_url: String,
    /// The route the mapping appends.
    pub(super) route: &'static str,
    /// The per-call cap in force (`None`: the mapping does not chunk).
    pub(super) cap: Option<usize>,
    /// The client-side prefixes the block binds.
    pub(super) query_prefix: Option<String>,
    pub(super) document_prefix: Option<String>,
}

/// What a node asks for.
pub(super) struct Want<'a> {
    pub(super) kind: Kind,
    pub(super) call_model: Option<&'a str>,
    /// The stand-in's model when the call names none (register V2).
    pub(super) standin_model: String,
}

/// The client: the block's host resolves to the mock (register V1).
fn client_for(base_url: &str, server: &MockServer) -> Check<(reqwest::Client, String)> {
    let mut url = reqwest::Url::parse(base_url)
        .map_err(|e| format!("base_url `{base_url}` is not a URL: {e}"))?;
    if url.scheme() == "https" {
        url.set_scheme("http")
            .map_err(|()| format!("cannot dial `{base_url}` as http"))?;
    }
    let host = url
        .host_str()
        .ok_or_else(|| format!("base_url `{base_url}` names no host"))?
        .to_owned();
    if url.port().is_some() {
        url.set_port(Some(server.addr().port()))
            .map_err(|()| format!("cannot set the port of `{base_url}`"))?;
    }
    let client = reqwest::Client::builder()
        .no_proxy()
        .resolve(&host, server.addr())
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| Failure::setup(format!("cannot build the HTTP client: {e}")))?;
    let origin = url.as_str().trim_end_matches('/').to_owned();
    Ok((client, origin))
}

/// Builds the provider `want` asks for under `mapping`, against `server`.
///
/// # Errors
/// A message for a missing or malformed construction block, or a construction the
/// crate rejects.
pub(super) fn build(
    fixture: &Fixture,
    mapping: Mapping,
    want: &Want<'_>,
    server: &MockServer,
) -> Check<Bound> {
    let wiring = mapping.wiring(want.kind).ok_or_else(|| {
        Failure::fixture(format!(
            "fixture_schema_invalid: mapping {mapping:?} has no {:?} provider",
            want.kind
        ))
    })?;
    let block = match wiring.block {
        "" => None,
        name => Some(block(fixture, name).ok_or_else(|| {
            Failure::fixture(format!(
                "fixture_schema_invalid: a {:?} call under mapping {mapping:?} needs `{name}`",
                want.kind
            ))
        })?),
    };
    if let Some(b) = block {
        if let Some(f) = b
            .optional_fields()
            .into_iter()
            .find(|f| !wiring.fields.contains(f))
        {
            return Err(Failure::fixture(format!(
                "fixture_schema_invalid: `{f}` is not a construction parameter of `{}`",
                wiring.block
            )));
        }
    }
    let model = match (want.call_model, block) {
        (Some(m), _) => m.to_owned(),
        (None, Some(b)) => b.model.clone(),
        (None, None) => want.standin_model.clone(),
    };
    let (client, origin) = match block {
        Some(b) => client_for(&b.base_url, server)?,
        None => (
            reqwest::Client::builder()
                .no_proxy()
                .timeout(Duration::from_secs(30))
                .build()
                .map_err(|e| Failure::setup(format!("cannot build the HTTP client: {e}")))?,
            server.origin(),
        ),
    };
    let api_key = block.and_then(|b| b.api_key.clone());
    let key = api_key.clone().unwrap_or_else(|| "test-key".to_owned());
    let chunk = block.and_then(|b| b.chunk_size);
    let cap = chunk.or(wiring.cap);
    let prefixes = block.and_then(|b| match (&b.query_prefix, &b.document_prefix) {
        (None, None) => None,
        (q, d) => Some((q.clone().unwrap_or_default(), d.clone().unwrap_or_default())),
    });
    let mut bound = Bound {
        embed: None,
        rerank: None,
        mapping,
        model: model.clone(),
        api_key,
        base_url: block.map_or_else(|| server.origin(), |b| b.base_url.clone()),
        route: wiring.route,
        cap,
        query_prefix: block.and_then(|b| b.query_prefix.clone()),
        document_prefix: block.and_then(|b| b.document_prefix.clone()),
    };
    let built = |e: openarmature_retrieval::RetrievalError| format!("provider construction: {e}");
    match (mapping, want.kind) {
        (Mapping::StandIn | Mapping::OpenAi, Kind::Embed) => {
            let mut b = OpenAiEmbeddings::builder(model)
                .api_key(key)
                .base_url(origin)
                .transport(Transport::default().client(client));
            if let Some(n) = chunk {
                b = b.chunk_size(n);
            }
            if let Some((q, d)) = prefixes {
                b = b.prefixes(q, d);
            }
            bound.embed = Some(Arc::new(b.build().map_err(built)?));
        }
        (Mapping::Tei, Kind::Embed) => {
            let mut b = TeiEmbeddings::builder(model)
                .base_url(origin)
                .transport(Transport::default().client(client));
            if let Some(n) = chunk {
                b = b.chunk_size(n);
            }
            for (input_type, prompt) in block
                .and_then(|b| b.input_type_prompt_map.as_ref())
                .into_iter()
                .flatten()
            {
                b = b.prompt_name(input_type.clone(), prompt.clone());
            }
            if let Some((q, d)) = prefixes {
                b = b.prefixes(q, d);
            }
            bound.embed = Some(Arc::new(b.build().map_err(built)?));
        }
        (Mapping::Jina, Kind::Embed) => {
            let b = JinaEmbeddings::builder(model)
                .api_key(key)
                .base_url(origin)
                .transport(Transport::default().client(client));
            bound.embed = Some(Arc::new(b.build().map_err(built)?));
        }
        (Mapping::Cohere, Kind::Embed) => {
            let mut b = CohereEmbeddings::builder(model)
                .api_key(key)
                .base_url(origin)
                .transport(Transport::default().client(client));
            if let Some(n) = chunk {
                b = b.chunk_size(n);
            }
            bound.embed = Some(Arc::new(b.build().map_err(built)?));
        }
        (Mapping::StandIn, Kind::Rerank) => {
            bound.rerank = Some(Arc::new(StandInRerank::new(model, origin, client)));
        }
        (Mapping::Tei, Kind::Rerank) => {
            let mut b = TeiRerank::builder(model)
                .base_url(origin)
                .transport(Transport::default().client(client));
            if let Some(n) = chunk {
                b = b.chunk_size(n);
            }
            bound.rerank = Some(Arc::new(b.build().map_err(built)?));
        }
        (Mapping::Jina, Kind::Rerank) => {
            let b = JinaRerank::builder(model)
                .api_key(key)
                .base_url(origin)
                .transport(Transport::default().client(client));
            bound.rerank = Some(Arc::new(b.build().map_err(built)?));
        }
        (Mapping::Cohere, Kind::Rerank) => {
            let b = CohereRerank::builder(model)
                .api_key(key)
                .base_url(origin)
                .transport(Transport::default().client(client));
            bound.rerank = Some(Arc::new(b.build().map_err(built)?));
        }
        (Mapping::OpenAi, Kind::Rerank) => {
            return Err(Failure::fixture(
                "fixture_schema_invalid: the OpenAI mapping has no rerank",
            ))
        }
    }
    Ok(bound)
}
