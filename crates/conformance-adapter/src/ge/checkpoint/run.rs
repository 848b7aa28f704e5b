//! Spec: graph-engine §3 / pipeline-utilities §10.4 — one invocation of a checkpoint
//! case (fresh, resumed, or abandoned at the `crash_injection` boundary), reduced to
//! what the fixtures assert.

use std::sync::Arc;

use openarmature_graph::checkpoint::CheckpointError;
use openarmature_graph::{
    CompiledGraph, DynState, GraphError, InvokeOptions, Registration, State, SubgraphFailure,
};
use serde_json::{json, Map, Value};

use super::store::{self, Store};
use crate::ge::harness::HarnessObserver;

/// The name of the runner's recording observer.
pub(crate) const RECORDER: &str = "__checkpoint_recorder";

/// How one invocation ended.
pub(crate) struct Run {
    pub(crate) id: String,
    pub(crate) result: Result<Value, RunFailure>,
    /// Abandoned at the `crash_injection` boundary.
    pub(crate) crashed: bool,
}

/// A failed run, reduced to what fixtures assert.
pub(crate) struct RunFailure {
    pub(crate) category: String,
    pub(crate) node: String,
    pub(crate) message: String,
    /// The fields the `CheckpointError` cause exposes (§10.10), when it is one.
    pub(crate) carries: Option<Map<String, Value>>,
    pub(crate) transient: Option<bool>,
    /// The migration error's cause type (`KeyError` for the adapter's mock).
    pub(crate) cause_type: Option<&'static str>,
}

fn failure(e: &GraphError<DynState>, fan_outs: &[String]) -> RunFailure {
    let cp = e.cause().downcast_ref::<CheckpointError>();
    let carries = cp.map(|cp| {
        let fields = match cp {
            CheckpointError::NotFound { invocation_id } => json!({"invocation_id": invocation_id}),
            CheckpointError::RecordInvalid { description } => json!({"description": description}),
            CheckpointError::MigrationMissing {
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
            CheckpointError::MigrationFailed {
                from_version,
                to_version,
                ..
            } => json!({"from_version": from_version, "to_version": to_version}),
            CheckpointError::ChainAmbiguous {
                from_version,
                to_version,
            } => json!({"from_version": from_version, "to_version": to_version}),
            _ => json!({}),
        };
        match fields {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    });
    let cause_type =
        cp.and_then(std::error::Error::source)
            .map(|c| match c.downcast_ref::<store::KeyError>() {
                Some(_) => "KeyError",
                None => "<other>",
            });
    // `raised_from` names the node that raised: through subgraph boundaries, the
    // innermost one (adapter register R10); a fan-out raises its instances' failures
    // itself (R13).
    let mut node = e.node().to_owned();
    let stop = fan_outs.contains(&node);
    let mut link: Option<&(dyn std::error::Error + 'static)> =
        if stop { None } else { Some(e.cause()) };
    while let Some(l) = link {
        if let Some(sf) = l.downcast_ref::<SubgraphFailure>() {
            node = sf.inner_node().to_owned();
        }
        link = l.source();
    }
    RunFailure {
        category: e.category_name().to_owned(),
        node,
        message: e.original_message(),
        carries,
        transient: cp.map(CheckpointError::is_transient),
        cause_type,
    }
}

/// What one invoke passes besides the state.
#[derive(Default)]
pub(crate) struct Call {
    pub(crate) resume: Option<String>,
    pub(crate) correlation: Option<String>,
    pub(crate) invocation: Option<String>,
}

pub(crate) struct Runner<'a> {
    pub(crate) graph: &'a CompiledGraph<DynState>,
    pub(crate) implicit: &'a Arc<HarnessObserver>,
    pub(crate) store: &'a Store,
    /// The case graph's top-level fan-out nodes.
    pub(crate) fan_outs: &'a [String],
}

impl Runner<'_> {
    pub(crate) async fn run(&self, call: Call, initial: &Value) -> Run {
        let schema = self.graph.defaults().schema();
        let state = if call.resume.is_some() {
            let mut state = schema.defaults();
            for (name, spec) in schema.fields() {
                if !spec.ty.accepts(&spec.default) {
                    let zero = crate::ge::build::zero_value(&spec.ty);
                    state = state.with_field_json(name, zero).unwrap_or(state.clone());
                }
            }
            Ok(state)
        } else {
            schema.state_from_json(initial)
        };
        let state = match state {
            Ok(s) => s,
            Err(e) => {
                return Run {
                    id: String::new(),
                    crashed: false,
                    result: Err(RunFailure {
                        category: "state_validation_error".into(),
                        node: String::new(),
                        message: e.to_string(),
                        carries: None,
                        transient: None,
                        cause_type: None,
                    }),
                }
            }
        };
        let options = InvokeOptions {
            correlation_id: call.correlation,
            invocation_id: call.invocation,
            resume_invocation: call.resume,
            ..InvokeOptions::default()
        }
        .observer(Registration::shared(
            RECORDER,
            Arc::clone(self.implicit) as Arc<_>,
        ));
        let outcome = tokio::select! {
            r = self.graph.invoke_with(state, options) => Some(r),
            () = self.store.crashed() => None,
        };
        self.graph.drain(None).await;
        match outcome {
            // `abort_after_instance`: the harness surfaces the abort as the fan-out's
            // `node_exception` (register R13).
            None if self.store.abort_node().is_some() => Run {
                id: self.store.crashed_invocation().unwrap_or_default(),
                crashed: false,
                result: Err(RunFailure {
                    category: "node_exception".into(),
                    node: self.store.abort_node().unwrap_or_default().to_owned(),
                    message: "abort_after_instance".into(),
                    carries: None,
                    transient: None,
                    cause_type: None,
                }),
            },
            None => Run {
                id: self.store.crashed_invocation().unwrap_or_default(),
                crashed: true,
                result: Ok(Value::Null),
            },
            Some(Ok(done)) => Run {
                id: done.invocation_id,
                crashed: false,
                result: Ok(State::to_json(&done.state)),
            },
            Some(Err(e)) => Run {
                id: e.invocation_id().to_owned(),
                crashed: false,
                result: Err(failure(&e, self.fan_outs)),
            },
        }
    }
}
