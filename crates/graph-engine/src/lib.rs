//! # openarmature-graph
//!
//! Spec: graph-engine (OpenArmature specification, pinned release v0.109.0).
//!
//! An async graph engine for LLM pipelines: typed state whose fields declare
//! reducers, async nodes returning partial updates, static and conditional edges,
//! subgraphs with explicit projection, and observers fed by a strictly serial
//! delivery queue that never slows the run down.
//!
//! - State: [`state!`] for typed structs, [`DynState`] for run-time schemas; both
//!   implement [`State`], and one engine runs either.
//! - Build: [`GraphBuilder`] → [`GraphBuilder::compile`] (every §2 compile-error
//!   category is a [`CompileError`]) → [`CompiledGraph`].
//! - Run: [`CompiledGraph::invoke`]; failures are [`GraphError`]s with a §4
//!   [`RuntimeCategory`] and the recoverable state.
//! - Observe: [`Registration`] of an [`Observer`], graph-attached or per invocation;
//!   [`CompiledGraph::drain`] / [`CompiledGraph::drain_events_for`].
//! - Extend: [`Middleware`] + [`Next`] (per-graph middleware wraps per-node
//!   middleware); retry and failure isolation live in `openarmature-pipeline`.
//! - Attribute: invocation metadata (observability §3.4) — caller-supplied at
//!   [`InvokeOptions::metadata`], read and extended mid-run with
//!   [`get_invocation_metadata`] / [`set_invocation_metadata`] (see [`metadata`]).
//!
//! - Per-node state of other crates: [`NodeCtx::extensions`]; values bound for the
//!   duration of a future: [`ambient`].
//! - Trace through `tracing` (feature `tracing-spans`, off by default): an
//!   `openarmature.invocation` span per run and an `openarmature.node` span per node
//!   attempt, opened inline with the OpenTelemetry observer's attribute keys. Use them
//!   or `openarmature-observability`'s `OtelObserver` for the same spans, not both.
//!
//! The engine does no network I/O and depends on one workspace crate,
//! `openarmature-core` (the seams, and each capability's event vocabulary, which
//! [`ObserverEvent`] routes without the engine defining or re-exporting it).
//!
//! # Examples
//! ```
//! use std::sync::Arc;
//! use openarmature_graph::{state, GraphBuilder, NodeCtx, Target, END};
//!
//! state! {
//!     /// Counts and logs.
//!     #[derive(Default)]
//!     pub struct Counter => CounterUpdate {
//!         /// Current count.
//!         pub count: i64,
//!         /// Visited nodes.
//!         pub log: Vec<String> => append,
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let graph = GraphBuilder::new(Counter::default())
//!     .add_node("inc", |s: Arc<Counter>, _: NodeCtx| async move {
//!         Ok(CounterUpdate::default().count(s.count + 1).log(vec!["inc".into()]))
//!     })
//!     .add_conditional_edge(
//!         "inc",
//!         |s: &Counter| Ok(if s.count < 3 { Target::from("inc") } else { END }),
//!         Some(vec![Target::from("inc"), END]),
//!     )
//!     .entry("inc")
//!     .compile()
//!     .unwrap();
//! let out = graph.invoke(Counter::default()).await.unwrap();
//! assert_eq!(out.count, 3);
//! assert_eq!(out.log.len(), 3);
//! # });
//! ```

pub mod ambient;
mod builder;
mod cause;
pub mod checkpoint;
mod compiled;
mod dynamic;
mod entry;
mod error;
mod extension_event;
mod ids;
mod invoke;
pub mod metadata;
mod middleware;
mod node;
mod observer;
mod queue;
pub mod reducers;
pub mod session;
mod spans;
mod state;
mod subgraph;
pub mod suspension;
mod typed;

pub use builder::{EdgeFn, GraphBuilder, Target, END};
pub use cause::{
    cause_chain, derive as derive_category, is_carrier, strip_subgraph_carrier, Carrier, CauseLink,
};
pub use compiled::{run_unit, CompiledGraph, Completed};
pub use dynamic::{DynSchema, DynSchemaBuilder, DynState, DynUpdate, FieldSpec, FieldType};
pub use entry::InstanceEntry;
pub use error::{
    category, category_of, erase, find_in, is_transient_link, BoxError, Categorized,
    CategorizedError, Category, CompileError, CompileWarning, GraphError, MergeError, NodeError,
    RoutingError, RuntimeCategory, StateValidationError,
};
pub use extension_event::ExtensionEvent;
pub use metadata::{
    current_node, get_invocation_metadata, set_invocation_metadata, InvocationMetadata,
    MetadataAugmented, MetadataError,
};
pub use middleware::{middleware_fn, run_chain, ChainTarget, FnMiddleware, Middleware, Next};
pub use node::{Boundary, InvokeOptions, Node, NodeCtx, NodeFuture};
pub use observer::sync_observer_fn;
pub use observer::{
    observer_fn, CaughtException, EmptyPhaseSet, EventError, FailureIsolationEvent, FanOutConfig,
    FnObserver, InvocationCompleted, InvocationStarted, NodeConfig, NodeEvent, Observer,
    ObserverErrorSink, ObserverEvent, ParallelBranchesConfig, Phase, PhaseSet, Registration,
    StateRef, SyncFnObserver,
};
pub use openarmature_core::{CallSite, Extensions, Lineage};
pub use queue::{timeout_from_secs, DrainSummary, InvalidTimeout};
pub use state::{is_round_trip_idempotent, State, StateView};
pub use subgraph::{SubgraphFailure, SubgraphNode};

/// The OpenArmature capability this crate implements.
pub const SPEC_CAPABILITY: &str = "graph-engine";

/// The OpenArmature specification release this crate targets.
pub const SPEC_VERSION: &str = "0.109.0";

/// Re-exports used by [`state!`]; not public API.
#[doc(hidden)]
pub mod __private {
    pub use serde;
    pub use serde_json;
}

/// The crate README's Rust code blocks, compiled as doc tests, so its example cannot
/// rot. Exists only while collecting doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
