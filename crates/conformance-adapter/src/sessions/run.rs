//! Spec: sessions §3 (session-bound invocations), §10 (errors) — one invocation of a
//! sessions case, reduced to what the fixtures assert.

use std::sync::Arc;

use openarmature_graph::session::SessionError;
use openarmature_graph::{
    CompiledGraph, DynState, GraphError, InvokeOptions, NodeEvent, Phase, Registration, State,
};
use openarmature_observability::InvokeError;
use serde_json::{json, Map, Value as Json};

use super::store::{Op, RecordingStore};
use super::telemetry::Telemetry;
use crate::ge::checkpoint::KeyError;
use crate::ge::harness::{Harness, HarnessObserver};

/// The name of the runner's recording observer.
pub(super) const RECORDER: &str = "__sessions_recorder";

/// One invocation and what it did.
pub(super) struct Run {
    pub(super) session_id: Option<String>,
    pub(super) result: Result<Json, RunFailure>,
    /// The node events of the invocation, every level, in delivery order.
    pub(super) events: Vec<NodeEvent>,
    /// The store calls made during the invocation.
    pub(super) ops: Vec<Op>,
    /// The outermost graph's nodes whose bodies ran, in order.
    pub(super) nodes_run: Vec<String>,
}

/// A failure (from the invocation, or from the session registration).
pub(super) struct RunFailure {
    pub(super) category: String,
    /// The node that raised (empty: none, e.g. a session load failure).
    pub(super) node: String,
    pub(super) message: String,
    /// The fields the session error exposes (§10), when the failure is one.
    pub(super) carries: Option<Map<String, Json>>,
    /// The preserved cause's type name (`KeyError` for the adapter's mock).
    pub(super) cause_type: Option<&'static str>,
}

impl RunFailure {
    /// A session failure (§10) reported by itself.
    pub(super) fn of_session(e: &SessionError) -> RunFailure {
        RunFailure {
            category: e.category().to_owned(),
            node: String::new(),
            message: e.to_string(),
            carries: Some(carries(e)),
            cause_type: cause_type(e),
        }
    }

    fn of_graph(e: &GraphError<DynState>) -> RunFailure {
        let session = e.cause().downcast_ref::<SessionError>();
        RunFailure {
            category: e.category_name().to_owned(),
            node: e.node().to_owned(),
            message: e.original_message(),
            carries: session.map(carries),
            cause_type: session.and_then(cause_type),
        }
    }
}

/// The §10 fields a session error exposes.
fn carries(e: &SessionError) -> Map<String, Json> {
    let fields = match e {
        SessionError::LoadFailed { session_id, .. }
        | SessionError::SaveFailed { session_id, .. } => {
            json!({"session_id": session_id})
        }
        SessionError::MigrationMissing {
            from_version,
            to_version,
            registered_migrations_count,
            registry_description,
        } => json!({
            "from_version": from_version,
            "to_version": to_version,
            "registered_migrations_count": registered_migrations_count,
            "registry_description": registry_description,
        }),
        SessionError::MigrationChainAmbiguous {
            from_version,
            to_version,
        } => json!({"from_version": from_version, "to_version": to_version}),
        SessionError::MigrationFailed {
            from_version,
            to_version,
            ..
        } => json!({"from_version": from_version, "to_version": to_version}),
        SessionError::WriteConflict {
            session_id,
            expected_version,
            actual_version,
        } => json!({
            "session_id": session_id,
            "expected_version": expected_version,
            "actual_version": actual_version,
        }),
        _ => json!({}),
    };
    match fields {
        Json::Object(m) => m,
        _ => Map::new(),
    }
}

fn cause_type(e: &SessionError) -> Option<&'static str> {
    std::error::Error::source(e).map(|c| match c.downcast_ref::<KeyError>() {
        Some(_) => "KeyError",
        None => "<other>",
    })
}

/// What one invocation needs besides the graph.
pub(super) struct Invoker<'a> {
    pub(super) graph: &'a CompiledGraph<DynState>,
    pub(super) harness: &'a Harness,
    pub(super) recorder: &'a Arc<HarnessObserver>,
    pub(super) store: Option<&'a RecordingStore>,
    pub(super) telemetry: Option<&'a Telemetry>,
}

impl Invoker<'_> {
    /// Runs one invocation (bound to `session_id` when given), then drains.
    pub(super) async fn run(&self, session_id: Option<&str>, initial: Option<&Json>) -> Run {
        let ops_before = self.store.map_or(0, |s| s.ops().len());
        let mut options = InvokeOptions::default();
        options.observers.push(Registration::shared(
            RECORDER,
            Arc::clone(self.recorder) as Arc<_>,
        ));
        if let Some(id) = session_id {
            options = options.session_id(id);
        }
        let schema = self.graph.defaults().schema();
        let (invocation_id, result) = match schema.state_from_json(initial.unwrap_or(&Json::Null)) {
            Err(e) => (
                String::new(),
                Err(RunFailure {
                    category: "state_validation_error".into(),
                    node: String::new(),
                    message: e.to_string(),
                    carries: None,
                    cause_type: None,
                }),
            ),
            Ok(state) => self.invoke(state, options).await,
        };
        self.graph.drain(None).await;
        let events = self
            .recorder
            .events_for(&invocation_id)
            .iter()
            .filter_map(|e| e.as_node().cloned())
            .collect();
        Run {
            session_id: session_id.map(str::to_owned),
            result,
            events,
            ops: self
                .store
                .map(|s| s.ops().split_off(ops_before))
                .unwrap_or_default(),
            nodes_run: self.harness.order_for(&invocation_id),
        }
    }

    async fn invoke(
        &self,
        state: DynState,
        options: InvokeOptions,
    ) -> (String, Result<Json, RunFailure>) {
        let Some(t) = self.telemetry else {
            return match self.graph.invoke_with(state, options).await {
                Ok(done) => (done.invocation_id, Ok(State::to_json(&done.state))),
                Err(e) => (e.invocation_id().to_owned(), Err(RunFailure::of_graph(&e))),
            };
        };
        match t.observer.invoke(self.graph, state, options).await {
            Ok(done) => (done.invocation_id, Ok(State::to_json(&done.state))),
            Err(InvokeError::Graph(e)) => {
                (e.invocation_id().to_owned(), Err(RunFailure::of_graph(&e)))
            }
            Err(e) => (
                String::new(),
                Err(RunFailure {
                    category: e.category().to_owned(),
                    node: String::new(),
                    message: e.to_string(),
                    carries: None,
                    cause_type: None,
                }),
            ),
        }
    }
}

/// The `started` events of first attempts at `depth` (1: the outermost graph).
pub(super) fn started_at(run: &Run, depth: usize) -> Vec<&NodeEvent> {
    run.events
        .iter()
        .filter(|e| e.phase == Phase::Started && e.attempt_index == 0)
        .filter(|e| e.namespace.len() == depth)
        .collect()
}

/// The state the outermost graph's entry node received.
pub(super) fn entry_pre_state(run: &Run) -> Option<Json> {
    started_at(run, 1).first().map(|e| e.pre_state.to_json())
}
