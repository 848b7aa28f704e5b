//! Spec: pipeline-utilities §9.5, §10.7 and §10.11 — per-instance checkpoint
//! progress: each instance's outcome is recorded with the fan-out tracker, and a
//! resumed run rolls completed instances' saved contributions forward.

use std::sync::Arc;

use openarmature_graph::checkpoint::{FanOutTracker, SavedContribution};
use openarmature_graph::{category_of, NodeCtx, NodeError, State};
use serde_json::{json, Value};

use super::fan_in::Done;
use super::instance::carrier;
use super::{ErrorPolicy, FanOutNode};
use crate::dispatch::DispatchSite;

impl<P: State, C: State> FanOutNode<P, C> {
    /// A rolled-forward contribution (§10.11.2: `result_is_error` routes it), in the
    /// shape a fresh instance produces.
    pub(super) fn rolled_forward(&self, saved: &SavedContribution) -> Done {
        if saved.result_is_error {
            return Done::Collected(saved.result.clone());
        }
        let mut values = Vec::with_capacity(1 + self.extra_outputs.len());
        values.push(saved.result.clone());
        for (par, _) in &self.extra_outputs {
            values.push(saved.extra_outputs.get(par).cloned().unwrap_or(Value::Null));
        }
        Done::Ok(values)
    }

    /// An instance's contribution: its update's `collect_field`, then each
    /// `extra_outputs` subgraph field.
    fn contribution(&self, update: &C::Update) -> Vec<Value> {
        let read = |f: &str| C::update_field_json(update, f).unwrap_or(Value::Null);
        let mut values = Vec::with_capacity(1 + self.extra_outputs.len());
        values.push(read(&self.collect_field));
        values.extend(self.extra_outputs.iter().map(|(_, sub)| read(sub)));
        values
    }

    /// Runs instance `index` and records its outcome with `tracker`: a success, or
    /// (collect policy) its error record. A fail-fast failure or a failed save is
    /// returned as `Err`.
    pub(super) async fn run_tracked(
        &self,
        parent: &Arc<P>,
        ctx: &NodeCtx,
        tracker: Option<&FanOutTracker>,
        site: Option<&DispatchSite>,
        (index, item): (usize, Option<Value>),
    ) -> Result<Done, NodeError> {
        if let Some(t) = tracker {
            t.start(index);
        }
        match self.run_instance(parent, ctx, site, index, item).await {
            Ok(update) => {
                let values = self.contribution(&update);
                drop(update);
                if let Some(t) = tracker {
                    let mut values = values.iter().cloned();
                    let result = values.next().unwrap_or(Value::Null);
                    let extras = self
                        .extra_outputs
                        .iter()
                        .zip(values)
                        .map(|((par, _), value)| (par.clone(), value))
                        .collect();
                    t.record_success(index, result, extras).await?;
                }
                Ok(Done::Ok(values))
            }
            Err(error) if self.error_policy == ErrorPolicy::FailFast => Err(carrier(error)),
            Err(error) => {
                let record = json!({
                    "fan_out_index": index.to_string(),
                    "category": category_of(&error).map_or("node_exception", |c| c.as_str()),
                    "message": error.to_string(),
                });
                if let Some(t) = tracker {
                    t.record_error(index, record.clone()).await?;
                }
                Ok(Done::Collected(record))
            }
        }
    }
}
