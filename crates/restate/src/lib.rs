//! # openarmature-restate
//!
//! Compiled graphs as durable [Restate](https://restate.dev) workflows: one workflow per
//! invocation id, its graph turns journaled, its suspensions waiting on durable
//! promises — while the graph's Checkpointer (e.g. `openarmature-postgres`) stays the
//! source of truth for graph state. Opt-in: a program that does not depend on this
//! crate compiles nothing of Restate.
//!
//! A [`Worker`] serves a [`Harness`](openarmature_harness::Harness) as the
//! [`SERVICE_NAME`] workflow, keyed by the caller's invocation id:
//!
//! - `run` (once per key): the graph turn is one journaled step. It starts the graph
//!   fresh (engine invocation id and correlation id = the key) or, when the
//!   Checkpointer already holds records of the key (a worker was lost mid-run, or the
//!   invocation was re-sent after Restate forgot it), re-enters at the newest one:
//!   completed nodes and completed fan-out instances do not run again. A suspension
//!   records the awaited signal and waits on a durable promise; the signal resumes the
//!   graph on whichever worker Restate picks.
//! - `signal` (shared): resolves the awaited promise with the signal payload.
//! - `status` (shared): the signal awaited, if any.
//!
//! Fan-out across workers: a [`RestateDispatcher`] on a fan-out node
//! (`FanOutNode::dispatcher`) sends each instance to the `OpenArmatureInstance`
//! service ([`INSTANCE_SERVICE_NAME`]) as its own durable job, an ingress call whose
//! idempotency key is `{invocation}/{fan-out}/{index}` (the invocation's correlation
//! id, the same across checkpoint resumes). Restate runs it on whichever worker it
//! picks ([`Worker::fan_out`] registers the subgraph); when the parent's worker is
//! lost, the resumed parent dispatches the unfinished instances again under the same
//! keys and attaches to the jobs still running elsewhere instead of running them
//! again. The fan-out node keeps its concurrency bound, error policy, instance
//! middleware (a retry is a new attempt, so a new key), degrade, per-instance
//! checkpoint progress and item-order fan-in. For 10^5+ items,
//! [`RestateDispatcher::chunk_size`] sends k consecutive instances as one job keyed
//! `{invocation}/{fan-out}/{first}-{last}` (each instance still its own journaled step
//! on the worker, so a lost worker re-runs only the chunk's unfinished instances).
//!
//! [`RestateClient`] submits invocations, attaches to their results and delivers
//! signals (by key, or by signal id through the harness's [`SignalCoordinator`](openarmature_harness::SignalCoordinator):
//! [`signal_coordinator`] resolves a signal id to the workflow key through the paused records);
//! [`register_deployment`] registers a worker with the admin API.
//!
//! ## Retries: one lane per failure
//!
//! Restate retries never multiply the graph's own (call-level LLM retry, retry
//! middleware):
//!
//! - a failed graph turn is a *result*: journaled as [`Step::ErrorResponse`], final.
//! - a journaled step fails, and Restate retries it (at most [`STORE_ATTEMPTS`]
//!   attempts), only when the Checkpointer could not be consulted before the graph ran.
//! - a lost worker is retried by Restate's invocation retry policy (100 ms doubling to
//!   2 s, 200 attempts, then paused): the retry resumes from the newest checkpoint, so
//!   only the work in flight at the loss runs again, each of its LLM calls at most once
//!   more per lost worker (at-least-once for in-flight nodes: keep nodes idempotent,
//!   pipeline-utilities §10.5).
//!
//! The workflow's other defaults: inactivity timeout 1 min, abort timeout 30 min (a
//! graph turn longer than that is aborted and retried; raise it with
//! [`Worker::options`] for longer turns).
//!
//! ## Example
//!
//! ```no_run
//! use std::sync::Arc;
//! use openarmature_graph::checkpoint::InMemoryCheckpointer;
//! use openarmature_graph::{state, GraphBuilder, NodeCtx, END};
//! use openarmature_harness::Harness;
//! use openarmature_restate::{register_deployment, RestateClient, Step, Worker};
//!
//! state! {
//!     /// A greeting.
//!     #[derive(Default)]
//!     pub struct Hello => HelloUpdate {
//!         /// The text.
//!         pub text: String,
//!     }
//! }
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! // Production: a PostgresCheckpointer every replica shares.
//! let store = InMemoryCheckpointer::new();
//! let graph = GraphBuilder::new(Hello::default())
//!     .add_node("greet", |_s: Arc<Hello>, _c: NodeCtx| async {
//!         Ok(HelloUpdate::default().text("hello".to_owned()))
//!     })
//!     .add_edge("greet", END)
//!     .entry("greet")
//!     .checkpointer(Arc::new(store))
//!     .compile()?;
//! let worker = Worker::new(Harness::stateless(graph, |_| Ok(Hello::default())))?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:9080").await?;
//! tokio::spawn(worker.serve(listener));
//!
//! register_deployment("http://127.0.0.1:9070", "http://127.0.0.1:9080").await?;
//! let client = RestateClient::new("http://127.0.0.1:8080");
//! client.submit("order-17", &serde_json::json!({})).await?;
//! let step = client.attach("order-17").await?;
//! assert_eq!(step.state().and_then(|s| s["text"].as_str()), Some("hello"));
//! # Ok(())
//! # }
//! ```

mod chunk;
mod client;
mod dispatcher;
mod error;
mod instance;
mod runner;
mod step;
mod worker;
mod workflow;

pub use client::{register_deployment, signal_coordinator, RestateClient, Submitted};
pub use dispatcher::{RestateDispatcher, DEFAULT_CHUNK_LINGER};
pub use error::{
    RestateError, HARNESS_SIGNAL_CORRELATION_FAILED, RESTATE_FAN_OUT_UNKNOWN,
    RESTATE_NO_CHECKPOINTER, RESTATE_REQUEST_REJECTED, RESTATE_UNAVAILABLE,
};
pub use instance::{ChunkAnswer, ChunkJob, IndexedAnswer, InstanceAnswer, INSTANCE_SERVICE_NAME};
pub use step::Step;
pub use worker::Worker;
pub use workflow::{Awaiting, SERVICE_NAME, STORE_ATTEMPTS};

/// The Restate SDK this crate is built on (pinned), for its endpoint and service
/// options.
pub use restate_sdk as sdk;

/// The crate README's Rust code blocks, compiled as doc tests, so its example cannot
/// rot. Exists only while collecting doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
