//! Spec: graph-engine §2 *State*, *Reducer*.
//!
//! The [`State`] trait is the one seam both state kinds go through: typed structs
//! declared with [`crate::state!`] and the schema-driven [`crate::DynState`].

use std::any::Any;
use std::fmt::Debug;

use serde_json::Value;

use crate::error::{CompileError, MergeError, StateValidationError};

/// A graph's state: a record of named fields, each with one reducer.
///
/// Implementations are immutable values: [`State::merge`] returns a new state and
/// never mutates `self`. The engine shares states as `Arc<S>`, so observers and
/// nodes only ever see shared references (graph-engine §6 *State immutability*).
///
/// Most users never implement this by hand: use [`crate::state!`] for typed state
/// or [`crate::DynState`] for a schema built at run time.
pub trait State: Clone + Debug + Send + Sync + 'static {
    /// A partial update: the fields a node returns, each optional.
    type Update: Clone + Default + Send + 'static;

    /// Merges `update` into a copy of `self` using each field's reducer.
    ///
    /// # Errors
    /// A [`MergeError`] naming the field and reducer when a reducer rejects the update.
    fn merge(&self, update: Self::Update) -> Result<Self, MergeError>;

    /// A JSON snapshot of the whole state (for observers, logs and the harness).
    fn to_json(&self) -> Value;

    /// A JSON rendering of a partial update: a mapping of the fields it writes
    /// (used by framework events such as failure isolation's `post_state`).
    fn update_json(update: &Self::Update) -> Value;

    /// One field of a partial update as JSON (what [`State::update_json`] maps
    /// `field` to): `None` when the update does not write it. Composite nodes read an
    /// instance's contribution with it, one field at a time.
    fn update_field_json(update: &Self::Update, field: &str) -> Option<Value> {
        match Self::update_json(update) {
            Value::Object(mut fields) => fields.remove(field),
            _ => None,
        }
    }

    /// Validates the state against its schema (called at graph entry, after every
    /// merge, and at exit).
    ///
    /// # Errors
    /// A [`StateValidationError`] naming the offending fields.
    fn validate(&self) -> Result<(), StateValidationError> {
        Ok(())
    }

    /// Checks reducer configuration at compile time (`reducer_configuration_invalid`,
    /// `conflicting_reducers`).
    ///
    /// # Errors
    /// The first [`CompileError`] found.
    fn check_schema(&self) -> Result<(), CompileError> {
        Ok(())
    }

    /// The declared field names, in declaration order.
    fn field_names(&self) -> Vec<String>;

    /// The reducer name of `field` (`last_write_wins`, `append`, …), `None` if undeclared.
    fn reducer_name(&self, field: &str) -> Option<String>;

    /// Whether `field`'s reducer re-applies an already merged value without change
    /// (for the `projection_reducer_round_trip` warning); `None` when unknown.
    fn reducer_round_trip_idempotent(&self, field: &str) -> Option<bool> {
        self.reducer_name(field)
            .and_then(|r| is_round_trip_idempotent(&r))
    }

    /// One field's current value as JSON (used by subgraph projection).
    fn field_json(&self, field: &str) -> Option<Value>;

    /// A copy of `self` with `field` set to `value` (projection in).
    ///
    /// # Errors
    /// When the field is undeclared or the value has the wrong type.
    fn with_field_json(&self, field: &str, value: Value) -> Result<Self, StateValidationError>;

    /// Builds a partial update from `(field, value)` pairs (projection out). A field
    /// may repeat: the result must equal merging the pairs in order (typed state
    /// combines them per reducer; a custom reducer keeps the last value).
    ///
    /// # Errors
    /// When a field is undeclared or a value does not fit the field's update type.
    fn update_from_json(
        &self,
        fields: Vec<(String, Value)>,
    ) -> Result<Self::Update, StateValidationError>;
}

/// A type-erased, immutable view of some graph's state, as carried by observer events
/// (`pre_state`, `post_state`, `parent_states`). Subgraphs may use other state types,
/// so events erase the type; downcast with [`StateView::as_any`].
pub trait StateView: Debug + Send + Sync + 'static {
    /// The state as JSON.
    fn to_json(&self) -> Value;
    /// The concrete state, for downcasting.
    fn as_any(&self) -> &dyn Any;
}

impl<S: State> StateView for S {
    fn to_json(&self) -> Value {
        State::to_json(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Canonical reducers that re-apply an already merged value without changing the
/// field (graph-engine §2 *Reducer round-trip warning*).
pub fn is_round_trip_idempotent(reducer: &str) -> Option<bool> {
    match reducer {
        "last_write_wins" | "merge" | "merge_by_key" | "dedupe_append" => Some(true),
        "append" | "concat_flatten" | "bounded_append" | "merge_all" => Some(false),
        _ => None,
    }
}
