//! Spec: observability §8 — the Langfuse mapping.
//!
//! [`LangfuseObserver`] consumes the same §6 event stream as the OTel observer and
//! produces Langfuse's native data model (§8.2): one [`LangfuseTrace`] per invocation
//! (the invocation *is* the trace, §8.3) holding a tree of [`Observation`]s — a Span
//! per node attempt, subgraph, fan-out instance and parallel-branch dispatch, one
//! Generation per LLM `complete()` call — plus one trace per detached child (§8.5).
//!
//! The §8.4 tables source every Langfuse field from an OA span attribute, so the
//! observer renders the invocation's spans exactly as the OTel mapping does — on a
//! tracer provider of its own, never the global one nor the OTel observer's (§6) —
//! and maps each finished invocation's spans field by field. The observation tree
//! therefore has the same shape and the same (lineage-resolved) parents as the OTel
//! span tree, and the Langfuse observer's flags stay independent of any OTel
//! observer's (§8.9).
//!
//! Finished traces are kept in memory ([`LangfuseObserver::traces`]) and handed to a
//! [`LangfuseClient`]: one the caller owns (§8.9 mode a) or an `IngestionClient`
//! built from `LangfuseCredentials` (mode b, feature `langfuse-ingest`) that batches
//! them to the Langfuse public ingestion API on [`LangfuseObserver::flush`]; give it
//! your own `reqwest::Client` with `IngestionClient::with_http_client`.

mod attrs;
mod body;
mod builder;
mod capture;
mod client;
mod convert;
mod ids;
#[cfg(feature = "langfuse-ingest")]
mod ingest;
mod io;
mod model;
mod observation;
mod observer;
mod retrieval;
mod time;

pub use body::ingestion_events;

/// The private LLM-span attribute carrying a prompt's Langfuse reference (JSON text)
/// from the engine's prompt context to the Generation's prompt link (§8.4.4). Only
/// the Langfuse observer's own tracer sees it.
pub(crate) const PROMPT_REFERENCE_ATTR: &str = "openarmature.internal.langfuse_prompt";
pub use builder::LangfuseObserverBuilder;
pub use client::{LangfuseClient, LangfuseError};
pub use ids::{is_uuid, trace_id_for};
#[cfg(feature = "langfuse-ingest")]
pub use ingest::{IngestionClient, LangfuseCredentials};
pub use io::StateHook;
pub use model::{LangfuseTrace, Level, Observation, ObservationType, Usage};
pub use observer::{LangfuseObserver, TraceOptions, REGISTRATION_NAME};

pub(crate) use observer::{Inner, Shared};
