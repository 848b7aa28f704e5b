//! Spec: pipeline-utilities §9.5, §10.7 and §10.11 — per-instance checkpoint
//! progress: each instance's outcome is recorded with the fan-out tracker, and a
//! resumed run rolls completed instances' saved contributions forward.

use openarmature_graph::checkpoint::{FanOutTracker, SavedContribution};
use openarmature_graph::{category_of, InstanceEntry, NodeError, State};
use serde_json::{json, Value};

use super::fan_in::{Contribution, Done};
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
        let extras = self
            .extra_outputs
            .iter()
            .map(|(par, _)| saved.extra_outputs.get(par).cloned().unwrap_or(Value::Null))
            .collect();
        Done::Ok(Contribution {
            collect: saved.result.clone(),
            extras,
        })
    }

    /// Runs instance `index` and records its outcome with `tracker`: a success, or
    /// (collect policy) its error record. A fail-fast failure or a failed save is
    /// returned as `Err`.
    pub(super) async fn run_tracked(
        &self,
        parent: &P,
        entry: &InstanceEntry,
        tracker: Option<&FanOutTracker>,
        site: Option<&DispatchSite>,
        (index, item): (usize, Option<Value>),
    ) -> Result<Done, NodeError> {
        if let Some(t) = tracker {
            t.start(index);
        }
        match self.run_instance(parent, entry, site, index, item).await {
            Ok(values) => {
                if let Some(t) = tracker {
                    let extras = self
                        .extra_outputs
                        .iter()
                        .zip(&values.extras)
                        .map(|((par, _), value)| (par.clone(), value.clone()))
                        .collect();
                    t.record_success(index, values.collect.clone(), extras)
                        .await?;
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
