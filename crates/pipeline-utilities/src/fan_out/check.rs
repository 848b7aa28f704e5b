//! Spec: pipeline-utilities §9 (configuration) / §9.3 — compile-time checks of a
//! fan-out's field mappings and its projection round-trip warnings.

use openarmature_graph::{CompileError, CompileWarning, State};
use serde_json::Value;

use super::FanOutNode;

impl<P: State, C: State> FanOutNode<P, C> {
    pub(super) fn check_fields(&self, name: &str, parent: &P) -> Result<(), CompileError> {
        let undeclared =
            |side: &'static str, field: &str| CompileError::MappingReferencesUndeclaredField {
                node: name.to_owned(),
                side,
                field: field.to_owned(),
            };
        let parent_fields = parent.field_names();
        let child = self.graph.defaults();
        let child_fields = child.field_names();
        let p = |f: &str| {
            if parent_fields.iter().any(|x| x == f) {
                Ok(())
            } else {
                Err(undeclared("parent", f))
            }
        };
        let c = |f: &str| {
            if child_fields.iter().any(|x| x == f) {
                Ok(())
            } else {
                Err(undeclared("subgraph", f))
            }
        };
        p(&self.target_field)?;
        c(&self.collect_field)?;
        if let Some((items_field, _)) = &self.items {
            p(items_field)?;
            if !matches!(parent.field_json(items_field), Some(Value::Array(_))) {
                return Err(CompileError::Node {
                    node: name.to_owned(),
                    category: "fan_out_field_not_list",
                    message: format!("items_field `{items_field}` is not list-typed"),
                });
            }
        }
        if let Some(item_field) = &self.item_field {
            c(item_field)?;
        }
        for field in self.errors_field.iter() {
            p(field)?;
        }
        if let Some(field) = &self.count_field {
            p(field)?;
            if !parent
                .field_json(field)
                .is_some_and(|v| v.is_i64() || v.is_u64())
            {
                return Err(undeclared("parent (int-typed)", field));
            }
        }
        for (sub, par) in &self.inputs {
            c(sub)?;
            p(par)?;
        }
        for (par, sub) in &self.extra_outputs {
            p(par)?;
            c(sub)?;
        }
        Ok(())
    }

    pub(super) fn round_trip_warnings(&self, name: &str, parent: &P) -> Vec<CompileWarning> {
        let mut warnings = Vec::new();
        let mut warn = |field: &str| {
            if parent.reducer_round_trip_idempotent(field) == Some(false)
                && !warnings.iter().any(|w| matches!(w, CompileWarning::ProjectionReducerRoundTrip { field: f, .. } if f == field))
            {
                warnings.push(CompileWarning::ProjectionReducerRoundTrip {
                    node: name.to_owned(),
                    field: field.to_owned(),
                    reducer: parent.reducer_name(field).unwrap_or_default(),
                });
            }
        };
        // Projection-map channel: in through `inputs`, out through `extra_outputs`,
        // via the same subgraph field.
        for (sub_in, par_in) in &self.inputs {
            if self
                .extra_outputs
                .iter()
                .any(|(par_out, sub_out)| par_out == par_in && sub_out == sub_in)
            {
                warn(par_in);
            }
        }
        // Collect channel: `collect_field` seeded from `target_field`.
        let seeded_by_inputs = self
            .inputs
            .iter()
            .any(|(sub, par)| *sub == self.collect_field && *par == self.target_field);
        let seeded_by_items = matches!(&self.items, Some((items_field, _)) if *items_field == self.target_field)
            && self.item_field.as_deref() == Some(self.collect_field.as_str());
        if seeded_by_inputs || seeded_by_items {
            warn(&self.target_field);
        }
        warnings
    }
}
