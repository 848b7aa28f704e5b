//! # openarmature
//!
//! OpenArmature for Rust: a workflow engine for LLM pipelines and tool-calling
//! agents, implementing the OpenArmature specification (pinned release v0.109.0).
//!
//! This facade re-exports the workspace crates; depend on the individual crates
//! to keep builds lean.
//!
//! | module | crate | capability |
//! |---|---|---|
//! | [`graph`] | `openarmature-graph` | graph-engine |
//! | [`pipeline`] | `openarmature-pipeline` | pipeline-utilities |
//! | [`llm`] | `openarmature-llm` | llm-provider |
//! | [`observability`] | `openarmature-observability` | observability |
//!
//! Start with [`graph`]: its crate docs show a typed state, nodes, edges and a run.

pub use openarmature_graph as graph;
pub use openarmature_llm as llm;
pub use openarmature_observability as observability;
pub use openarmature_pipeline as pipeline;

/// The OpenArmature specification release the workspace targets.
pub const SPEC_VERSION: &str = openarmature_graph::SPEC_VERSION;
