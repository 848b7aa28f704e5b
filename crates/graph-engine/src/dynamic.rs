//! Spec: graph-engine §2 *State* — a state whose schema is built at run time.
//!
//! [`DynState`] is an ordered record of JSON values described by a [`DynSchema`]:
//! what the conformance adapter builds from fixture YAML, and what Rust users reach
//! for when the shape of their state is only known at run time.

use std::fmt;
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::{Map, Value};

use crate::error::{CompileError, MergeError, StateValidationError};
use crate::reducers::Reducer;
use crate::state::State;

/// A field's declared type.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FieldType {
    /// Any JSON value.
    Any,
    /// A string.
    String,
    /// An integer.
    Int,
    /// Any number.
    Float,
    /// A boolean.
    Bool,
    /// A list, optionally of one element type.
    List(Option<Box<FieldType>>),
    /// A string-keyed mapping, optionally of one value type.
    Dict(Option<Box<FieldType>>),
    /// A named record type; validated as any mapping.
    Record(String),
}

impl FieldType {
    /// Parses the fixture spelling: `string | int | float | bool | any | list |
    /// list<T> | dict | dict<K,V> | <record-name>`.
    ///
    /// # Errors
    /// A message for an unparseable spelling (unbalanced `<>`, empty name).
    pub fn parse(spec: &str) -> Result<FieldType, String> {
        let s = spec.trim();
        if let Some(inner) = generic_arg(s, "list")? {
            return Ok(FieldType::List(Some(Box::new(FieldType::parse(inner)?))));
        }
        if let Some(inner) = generic_arg(s, "dict")? {
            let value = match split_top_level_comma(inner) {
                Some((_key, value)) => value,
                None => return Err(format!("dict type `{spec}` needs two arguments <K,V>")),
            };
            return Ok(FieldType::Dict(Some(Box::new(FieldType::parse(value)?))));
        }
        Ok(match s {
            "any" => FieldType::Any,
            "string" | "str" => FieldType::String,
            "int" => FieldType::Int,
            "float" => FieldType::Float,
            "bool" => FieldType::Bool,
            "list" => FieldType::List(None),
            "dict" => FieldType::Dict(None),
            "" => return Err("empty type".into()),
            other if other.contains(['<', '>', ',']) => {
                return Err(format!("unparseable type `{other}`"))
            }
            other => FieldType::Record(other.to_owned()),
        })
    }

    /// Whether `value` fits the type (`null` only fits `any` and records).
    pub fn accepts(&self, value: &Value) -> bool {
        match (self, value) {
            (FieldType::Any, _) | (FieldType::Record(_), _) => true,
            (FieldType::String, Value::String(_)) => true,
            (FieldType::Int, Value::Number(n)) => n.is_i64() || n.is_u64(),
            (FieldType::Float, Value::Number(_)) => true,
            (FieldType::Bool, Value::Bool(_)) => true,
            (FieldType::List(elem), Value::Array(items)) => match elem {
                Some(t) => items.iter().all(|i| t.accepts(i)),
                None => true,
            },
            (FieldType::Dict(val), Value::Object(m)) => match val {
                Some(t) => m.values().all(|v| t.accepts(v)),
                None => true,
            },
            _ => false,
        }
    }
}

fn generic_arg<'a>(s: &'a str, head: &str) -> Result<Option<&'a str>, String> {
    match s.strip_prefix(head).map(str::trim_start) {
        Some(rest) if rest.starts_with('<') => {
            match rest.strip_prefix('<').and_then(|r| r.strip_suffix('>')) {
                Some(inner) => Ok(Some(inner)),
                None => Err(format!("unbalanced type arguments in `{s}`")),
            }
        }
        _ => Ok(None),
    }
}

fn split_top_level_comma(s: &str) -> Option<(&str, &str)> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => return Some((&s[..i], &s[i + 1..])),
            _ => {}
        }
    }
    None
}

/// One declared field.
#[derive(Debug, Clone)]
pub struct FieldSpec {
    /// The declared type.
    pub ty: FieldType,
    /// The schema default.
    pub default: Value,
    /// The field's reducer.
    pub reducer: Reducer,
}

/// The schema of a [`DynState`]: ordered fields with types, defaults and reducers.
///
/// Problems found while building (a second reducer for one field, an invalid reducer
/// configuration) are kept and reported when a graph using the schema compiles.
#[derive(Debug, Clone, Default)]
pub struct DynSchema {
    fields: IndexMap<String, FieldSpec>,
    problems: Vec<CompileError>,
}

impl DynSchema {
    /// Starts an empty schema.
    pub fn builder() -> DynSchemaBuilder {
        DynSchemaBuilder::default()
    }

    /// The declared fields, in declaration order.
    pub fn fields(&self) -> &IndexMap<String, FieldSpec> {
        &self.fields
    }

    /// The state holding every field's default.
    pub fn defaults(self: &Arc<Self>) -> DynState {
        DynState {
            values: self.fields.values().map(|f| f.default.clone()).collect(),
            schema: Arc::clone(self),
        }
    }

    /// Defaults overlaid with `values` (a JSON mapping of declared fields).
    ///
    /// # Errors
    /// When `values` is not a mapping, names an undeclared field, or a value has the
    /// wrong type.
    pub fn state_from_json(
        self: &Arc<Self>,
        values: &Value,
    ) -> Result<DynState, StateValidationError> {
        let mut state = self.defaults();
        match values {
            Value::Null => {}
            Value::Object(map) => {
                for (name, value) in map {
                    state = state.with_field_json(name, value.clone())?;
                }
            }
            other => {
                return Err(StateValidationError::field(
                    "<state>",
                    format!("initial state must be a mapping, got {other}"),
                ))
            }
        }
        Ok(state)
    }
}

/// Builds a [`DynSchema`].
#[derive(Debug, Default)]
pub struct DynSchemaBuilder {
    schema: DynSchema,
    reducer_declared: Vec<String>,
}

impl DynSchemaBuilder {
    /// Declares a field with the default reducer (`last_write_wins`).
    pub fn field(mut self, name: impl Into<String>, ty: FieldType, default: Value) -> Self {
        self.schema.fields.insert(
            name.into(),
            FieldSpec {
                ty,
                default,
                reducer: Reducer::LastWriteWins,
            },
        );
        self
    }

    /// Declares `field`'s reducer. Declaring a second reducer for one field is the
    /// `conflicting_reducers` compile error.
    pub fn reducer(mut self, field: &str, reducer: Reducer) -> Self {
        if self.reducer_declared.iter().any(|f| f == field) {
            self.schema
                .problems
                .push(CompileError::ConflictingReducers {
                    field: field.to_owned(),
                });
            return self;
        }
        self.reducer_declared.push(field.to_owned());
        match self.schema.fields.get_mut(field) {
            Some(spec) => spec.reducer = reducer,
            None => self
                .schema
                .problems
                .push(CompileError::ReducerConfigurationInvalid {
                    field: field.to_owned(),
                    message: "reducer declared for an undeclared field".into(),
                }),
        }
        self
    }

    /// Records a reducer construction failure (e.g. from [`Reducer::bounded_append`])
    /// for `field`, to be reported at compile time.
    pub fn reducer_result(self, field: &str, reducer: Result<Reducer, CompileError>) -> Self {
        match reducer {
            Ok(r) => self.reducer(field, r),
            Err(err) => {
                let mut this = self;
                this.schema.problems.push(match err {
                    CompileError::ReducerConfigurationInvalid { message, .. } => {
                        CompileError::ReducerConfigurationInvalid {
                            field: field.to_owned(),
                            message,
                        }
                    }
                    other => other,
                });
                this
            }
        }
    }

    /// Finishes the schema.
    pub fn build(self) -> Arc<DynSchema> {
        Arc::new(self.schema)
    }
}

/// A state described by a [`DynSchema`]: one JSON value per declared field.
#[derive(Clone)]
pub struct DynState {
    schema: Arc<DynSchema>,
    values: Vec<Value>,
}

impl fmt::Debug for DynState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DynState({})", State::to_json(self))
    }
}

impl PartialEq for DynState {
    fn eq(&self, other: &Self) -> bool {
        State::to_json(self) == State::to_json(other)
    }
}

impl DynState {
    /// The schema.
    pub fn schema(&self) -> &Arc<DynSchema> {
        &self.schema
    }

    /// One field's value.
    pub fn get(&self, field: &str) -> Option<&Value> {
        self.schema
            .fields
            .get_index_of(field)
            .and_then(|i| self.values.get(i))
    }
}

/// A partial update to a [`DynState`]: `(field, value)` pairs applied in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DynUpdate {
    /// The written fields, in write order.
    pub fields: Vec<(String, Value)>,
}

impl DynUpdate {
    /// An empty update.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one field write.
    pub fn set(mut self, field: impl Into<String>, value: Value) -> Self {
        self.fields.push((field.into(), value));
        self
    }

    /// Builds an update from a JSON mapping (`None` if `value` is not a mapping).
    pub fn from_json(value: Value) -> Option<Self> {
        match value {
            Value::Object(map) => Some(DynUpdate {
                fields: map.into_iter().collect(),
            }),
            _ => None,
        }
    }
}

impl State for DynState {
    type Update = DynUpdate;

    fn merge(&self, update: DynUpdate) -> Result<Self, MergeError> {
        let mut next = self.clone();
        for (field, value) in update.fields {
            let Some((index, _, spec)) = self.schema.fields.get_full(&field) else {
                return Err(MergeError {
                    reducer: "<none>".into(),
                    source: format!("update names undeclared field `{field}`").into(),
                    field,
                });
            };
            let merged = spec
                .reducer
                .apply(&next.values[index], value)
                .map_err(|source| MergeError {
                    field: field.clone(),
                    reducer: spec.reducer.name(),
                    source,
                })?;
            next.values[index] = merged;
        }
        Ok(next)
    }

    fn update_json(update: &DynUpdate) -> Value {
        Value::Object(update.fields.iter().cloned().collect())
    }

    fn update_field_json(update: &DynUpdate, field: &str) -> Option<Value> {
        // The last write of a repeated field, as `update_json`'s map keeps it.
        update
            .fields
            .iter()
            .rev()
            .find(|(name, _)| name == field)
            .map(|(_, value)| value.clone())
    }

    fn to_json(&self) -> Value {
        let mut map = Map::with_capacity(self.values.len());
        for (name, value) in self.schema.fields.keys().zip(&self.values) {
            map.insert(name.clone(), value.clone());
        }
        Value::Object(map)
    }

    fn validate(&self) -> Result<(), StateValidationError> {
        let mut err = StateValidationError {
            fields: Vec::new(),
            problems: Vec::new(),
        };
        for ((name, spec), value) in self.schema.fields.iter().zip(&self.values) {
            if !spec.ty.accepts(value) {
                err.fields.push(name.clone());
                err.problems.push(format!(
                    "`{name}`: {value} does not match type {:?}",
                    spec.ty
                ));
            }
        }
        if err.fields.is_empty() {
            Ok(())
        } else {
            Err(err)
        }
    }

    fn check_schema(&self) -> Result<(), CompileError> {
        match self.schema.problems.first() {
            Some(problem) => Err(problem.clone()),
            None => Ok(()),
        }
    }

    fn field_names(&self) -> Vec<String> {
        self.schema.fields.keys().cloned().collect()
    }

    fn reducer_name(&self, field: &str) -> Option<String> {
        self.schema.fields.get(field).map(|f| f.reducer.name())
    }

    fn reducer_round_trip_idempotent(&self, field: &str) -> Option<bool> {
        self.schema
            .fields
            .get(field)
            .and_then(|f| f.reducer.round_trip_idempotent())
    }

    fn field_json(&self, field: &str) -> Option<Value> {
        self.get(field).cloned()
    }

    fn with_field_json(&self, field: &str, value: Value) -> Result<Self, StateValidationError> {
        let Some((index, _, spec)) = self.schema.fields.get_full(field) else {
            return Err(StateValidationError::field(
                field,
                "not declared in the state schema",
            ));
        };
        if !spec.ty.accepts(&value) {
            return Err(StateValidationError::field(
                field,
                format!("{value} does not match type {:?}", spec.ty),
            ));
        }
        let mut next = self.clone();
        next.values[index] = value;
        Ok(next)
    }

    fn update_from_json(
        &self,
        fields: Vec<(String, Value)>,
    ) -> Result<DynUpdate, StateValidationError> {
        for (name, _) in &fields {
            if !self.schema.fields.contains_key(name) {
                return Err(StateValidationError::field(
                    name.clone(),
                    "not declared in the state schema",
                ));
            }
        }
        Ok(DynUpdate { fields })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_types() {
        assert_eq!(
            FieldType::parse("list<string>").unwrap(),
            FieldType::List(Some(Box::new(FieldType::String)))
        );
        assert_eq!(
            FieldType::parse("dict<string, list<int>>").unwrap(),
            FieldType::Dict(Some(Box::new(FieldType::List(Some(Box::new(
                FieldType::Int
            ))))))
        );
        assert!(FieldType::parse("list<int").is_err());
    }

    #[test]
    fn merge_applies_reducers_and_keeps_prior() {
        let schema = DynSchema::builder()
            .field(
                "log",
                FieldType::parse("list<string>").unwrap(),
                json!(["s"]),
            )
            .reducer("log", Reducer::Append)
            .field("v", FieldType::Int, json!(0))
            .build();
        let s0 = schema.defaults();
        let s1 = s0
            .merge(DynUpdate::new().set("log", json!(["a"])).set("v", json!(2)))
            .unwrap();
        assert_eq!(State::to_json(&s1), json!({"log": ["s", "a"], "v": 2}));
        assert_eq!(State::to_json(&s0), json!({"log": ["s"], "v": 0}));
        assert!(s1.with_field_json("v", json!("x")).is_err());
    }

    #[test]
    fn second_reducer_is_reported_at_compile_time() {
        let schema = DynSchema::builder()
            .field("v", FieldType::List(None), json!([]))
            .reducer("v", Reducer::Append)
            .reducer("v", Reducer::LastWriteWins)
            .build();
        assert_eq!(
            schema.defaults().check_schema().unwrap_err().category(),
            "conflicting_reducers"
        );
    }
}
