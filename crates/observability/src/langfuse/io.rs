//! Spec: observability §8.4.1 *Trace input/output sourcing* — the three-lever decision
//! tree (caller hook, raw state when `disable_state_payload` is off, the privacy-safe
//! stub) and the `status` enum, fed by the node events of one invocation.

use std::sync::Arc;

use openarmature_graph::{NodeEvent, Phase, StateRef, StateView};
use serde_json::{json, Value};

use crate::payload::{canonical_json, truncate};

/// A caller hook computing `trace.input` / `trace.output` from the raw state; `None`
/// falls through to the next lever (§8.4.1 *Caller-hook contract*).
pub type StateHook = Arc<dyn Fn(&dyn StateView) -> Option<Value> + Send + Sync>;

/// The trace input/output configuration.
#[derive(Clone)]
pub(crate) struct IoConfig {
    pub(crate) disable_state_payload: bool,
    pub(crate) input_hook: Option<StateHook>,
    pub(crate) output_hook: Option<StateHook>,
    pub(crate) payload_byte_cap: usize,
}

/// What one invocation's events told us so far.
#[derive(Default)]
pub(crate) struct InvocationIo {
    pub(crate) entry: Option<String>,
    pub(crate) correlation_id: Option<String>,
    /// The state the invocation starts from (the restored state on a resume).
    initial: Option<StateRef>,
    /// The input hook's value, computed once at entry.
    hooked_input: Option<Value>,
    /// The outermost state after the last node that completed (or the state the
    /// failing node started from).
    last_state: Option<StateRef>,
    /// The top-level node of the last completed event.
    final_node: Option<String>,
    /// Whether the invocation failed: from the lifecycle event, when seen.
    pub(crate) failed: Option<bool>,
}

impl InvocationIo {
    /// Takes the state the invocation starts from, from its lifecycle event: the
    /// caller's initial state, or the restored state of a resume (§8.4.1: the input
    /// hook fires once, at entry, before any node runs).
    pub(crate) fn on_start(&mut self, config: &IoConfig, state: Option<&StateRef>) {
        if let (Some(state), None) = (state, &self.initial) {
            self.hooked_input = config.input_hook.as_ref().and_then(|h| h(&**state));
            self.initial = Some(state.clone());
        }
    }

    /// Folds one node event in (the first `started` stands in for the entry state
    /// when the lifecycle event was not seen).
    pub(crate) fn on_node(&mut self, config: &IoConfig, e: &NodeEvent) {
        let outermost = e.parent_states.first().cloned();
        if e.phase == Phase::Started && self.initial.is_none() {
            let state = outermost.clone().unwrap_or_else(|| e.pre_state.clone());
            self.hooked_input = config.input_hook.as_ref().and_then(|h| h(&*state));
            self.initial = Some(state);
        }
        // A suspended node ends its attempt like a completed one (suspension §3).
        if matches!(e.phase, Phase::Completed | Phase::Suspended) {
            self.final_node = e.namespace.first().cloned();
            self.last_state = Some(match (&outermost, &e.post_state) {
                (Some(outer), _) => outer.clone(),
                (None, Some(post)) => post.clone(),
                (None, None) => e.pre_state.clone(),
            });
        }
    }

    /// Resolves `trace.input` and `trace.output`. `final_state` is the invocation's
    /// final state when the caller knows it (it beats the event-derived one).
    pub(crate) fn resolve(
        &self,
        config: &IoConfig,
        final_state: Option<&dyn StateView>,
    ) -> (Value, Value) {
        let final_state = final_state.or(self.last_state.as_deref());
        let input = self
            .hooked_input
            .clone()
            .or_else(|| self.raw(config, self.initial.as_deref()))
            .unwrap_or_else(|| {
                json!({
                    "entry_node": self.entry.clone().unwrap_or_default(),
                    "correlation_id": self.correlation_id.clone().unwrap_or_default(),
                })
            });
        let output = config
            .output_hook
            .as_ref()
            .and_then(|h| final_state.and_then(|s| h(s)))
            .or_else(|| self.raw(config, final_state))
            .unwrap_or_else(|| {
                let status = if self.failed == Some(true) {
                    "failed"
                } else {
                    "completed"
                };
                json!({
                    "final_node": self.final_node.clone().unwrap_or_default(),
                    "status": status,
                })
            });
        (
            capped(input, config.payload_byte_cap),
            capped(output, config.payload_byte_cap),
        )
    }

    fn raw(&self, config: &IoConfig, state: Option<&dyn StateView>) -> Option<Value> {
        if config.disable_state_payload {
            return None;
        }
        state.map(StateView::to_json)
    }
}

/// §5.5.5: a value whose JSON exceeds the cap becomes its truncated text.
fn capped(value: Value, cap: usize) -> Value {
    let text = canonical_json(&value);
    if text.len() <= cap {
        value
    } else {
        Value::String(truncate(text, cap))
    }
}
