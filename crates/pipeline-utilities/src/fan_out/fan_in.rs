//! Spec: pipeline-utilities §9.3 / §9.4 — fan-in: every instance's contribution merged
//! into the parent in instance order.

use openarmature_graph::{NodeError, State};
use serde_json::{json, Value};

use super::FanOutNode;

impl<P: State, C: State> FanOutNode<P, C> {
    /// Merges the contributions, given in instance order.
    pub(super) fn fan_in(
        &self,
        parent: &P,
        count: usize,
        results: impl IntoIterator<Item = Done>,
    ) -> Result<P::Update, NodeError> {
        let mut collected = Vec::with_capacity(count);
        // One list per extra parent field: the per-instance values in instance
        // order, merged once through the parent's reducer (like `target_field`).
        let mut extra: Vec<Vec<Value>> = vec![Vec::new(); self.extra_outputs.len()];
        let mut errors = Vec::new();
        for result in results {
            match result {
                Done::Ok(Contribution { collect, extras }) => {
                    collected.push(collect);
                    let mut extras = extras.into_iter();
                    for slot in &mut extra {
                        slot.push(extras.next().unwrap_or(Value::Null));
                    }
                }
                Done::Collected(record) => errors.push(record),
            }
        }
        let mut fields = vec![(self.target_field.clone(), Value::Array(collected))];
        fields.extend(
            self.extra_outputs
                .iter()
                .zip(extra)
                .map(|((par, _), values)| (par.clone(), Value::Array(values))),
        );
        if let Some(errors_field) = &self.errors_field {
            fields.push((errors_field.clone(), Value::Array(errors)));
        }
        if let Some(count_field) = &self.count_field {
            fields.push((count_field.clone(), json!(count)));
        }
        Ok(parent.update_from_json(fields)?)
    }
}

/// One instance's contribution to the fan-in, in subgraph space.
pub(super) enum Done {
    /// A success's values.
    Ok(Contribution),
    /// A collected failure's error record (`errors_field` entry).
    Collected(Value),
}

/// A successful instance's values (`null` where its contribution lacks a field).
pub(super) struct Contribution {
    /// `collect_field`'s value.
    pub(super) collect: Value,
    /// Each `extra_outputs` subgraph field's value, in `extra_outputs` order (empty,
    /// so unallocated, without extra outputs).
    pub(super) extras: Vec<Value>,
}
