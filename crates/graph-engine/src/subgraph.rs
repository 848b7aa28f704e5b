//! Spec: graph-engine §2 *Subgraph*, *Explicit input/output mapping*, *Declared
//! same-name projection boundary*, *Reducer round-trip warning*.

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::Value;

use crate::compiled::CompiledGraph;
use crate::error::{BoxError, CompileError, CompileWarning, NodeError, RuntimeCategory};
use crate::node::{Boundary, Node, NodeCtx, NodeFuture};
use crate::observer::StateRef;
use crate::state::State;

/// A failure inside a subgraph, as seen by the parent: a graph-engine §4 carrier.
/// It keeps the inner §4 category, the failing inner node's namespace and the
/// subgraph's state at the point of failure; its source is the original cause (the
/// inner node's own error, a `MergeError`, …), so a cause-chain walk sees exactly one
/// carrier link per subgraph boundary.
#[derive(Debug)]
pub struct SubgraphFailure {
    category: RuntimeCategory,
    node: String,
    namespace: Vec<String>,
    state: Option<StateRef>,
    inner: BoxError,
}

impl SubgraphFailure {
    /// A failure inside a subgraph run: `category` at the subgraph's boundary, the
    /// inner `node` at which it surfaced, that node's full `namespace` (outermost
    /// first), the subgraph's state at the failure when known, and the original cause.
    /// The engine builds these for subgraphs it runs; a composite node that runs its
    /// subgraph elsewhere (a fan-out dispatcher sending an instance to a remote
    /// worker) builds one from the remote report, so the failure keeps the same shape
    /// and the fan-out node's level does not record it as its own.
    pub fn new(
        category: RuntimeCategory,
        node: String,
        namespace: Vec<String>,
        state: Option<StateRef>,
        inner: BoxError,
    ) -> Self {
        SubgraphFailure {
            category,
            node,
            namespace,
            state,
            inner,
        }
    }

    /// The original cause (the inner node's error, a `MergeError`, …).
    pub fn into_source(self) -> BoxError {
        self.inner
    }

    /// The inner failure's category.
    pub fn category(&self) -> RuntimeCategory {
        self.category
    }

    /// The namespace of the node that failed inside the subgraph.
    pub fn namespace(&self) -> &[String] {
        &self.namespace
    }

    /// The subgraph node (in the subgraph) at which the failure surfaced.
    pub fn inner_node(&self) -> &str {
        &self.node
    }

    /// The subgraph's state at the point of failure (absent when the failure
    /// happened while projecting in or out).
    pub fn inner_state(&self) -> Option<&StateRef> {
        self.state.as_ref()
    }
}

impl fmt::Display for SubgraphFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} in subgraph at `{}`: {}",
            self.category,
            self.namespace.join("/"),
            self.inner
        )
    }
}

impl crate::Categorized for SubgraphFailure {
    fn category(&self) -> Option<crate::Category> {
        Some(self.category.as_category())
    }
}

impl StdError for SubgraphFailure {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(self.inner.as_ref())
    }
}

/// A compiled graph used as a node of a parent graph.
///
/// Projection (what crosses the boundary) is one of:
/// - the default: nothing in (the subgraph starts from its own defaults);
///   same-name fields merged out through the parent's reducers;
/// - explicit maps: [`SubgraphNode::inputs`] (subgraph field ← parent field,
///   additive) and/or [`SubgraphNode::outputs`] (parent field ← subgraph field,
///   replacing name matching);
/// - declared same-name sets: [`SubgraphNode::projects_in`] /
///   [`SubgraphNode::projects_out`], a complete boundary (an omitted set is empty).
///
/// Mixing the maps with the sets is the `conflicting_projection_forms` compile error.
pub struct SubgraphNode<P: State, C: State> {
    graph: CompiledGraph<C>,
    inputs: Option<IndexMap<String, String>>,
    outputs: Option<IndexMap<String, String>>,
    projects_in: Option<Vec<String>>,
    projects_out: Option<Vec<String>>,
    _parent: std::marker::PhantomData<fn(P) -> P>,
}

impl<P: State, C: State> SubgraphNode<P, C> {
    /// The default projection.
    pub fn new(graph: CompiledGraph<C>) -> Self {
        SubgraphNode {
            graph,
            inputs: None,
            outputs: None,
            projects_in: None,
            projects_out: None,
            _parent: std::marker::PhantomData,
        }
    }

    /// Explicit `inputs`: `(subgraph_field, parent_field)` pairs copied in at entry.
    pub fn inputs<I, A, B>(mut self, pairs: I) -> Self
    where
        I: IntoIterator<Item = (A, B)>,
        A: Into<String>,
        B: Into<String>,
    {
        self.inputs = Some(
            pairs
                .into_iter()
                .map(|(a, b)| (a.into(), b.into()))
                .collect(),
        );
        self
    }

    /// Explicit `outputs`: `(parent_field, subgraph_field)` pairs merged out at exit.
    pub fn outputs<I, A, B>(mut self, pairs: I) -> Self
    where
        I: IntoIterator<Item = (A, B)>,
        A: Into<String>,
        B: Into<String>,
    {
        self.outputs = Some(
            pairs
                .into_iter()
                .map(|(a, b)| (a.into(), b.into()))
                .collect(),
        );
        self
    }

    /// Declared same-name in-set.
    pub fn projects_in<I: IntoIterator<Item = F>, F: Into<String>>(mut self, fields: I) -> Self {
        self.projects_in = Some(fields.into_iter().map(Into::into).collect());
        self
    }

    /// Declared same-name out-set.
    pub fn projects_out<I: IntoIterator<Item = F>, F: Into<String>>(mut self, fields: I) -> Self {
        self.projects_out = Some(fields.into_iter().map(Into::into).collect());
        self
    }

    fn declared(&self) -> bool {
        self.projects_in.is_some() || self.projects_out.is_some()
    }

    /// `(subgraph_field, parent_field)` pairs projected in.
    fn in_pairs(&self) -> Vec<(String, String)> {
        if self.declared() {
            return same_name(self.projects_in.as_deref());
        }
        self.inputs
            .as_ref()
            .map(|m| m.iter().map(|(s, p)| (s.clone(), p.clone())).collect())
            .unwrap_or_default()
    }

    /// `(parent_field, subgraph_field)` pairs projected out.
    fn out_pairs(&self, parent: &P) -> Vec<(String, String)> {
        if self.declared() {
            return same_name(self.projects_out.as_deref());
        }
        match &self.outputs {
            Some(m) => m.iter().map(|(p, s)| (p.clone(), s.clone())).collect(),
            None => {
                let parent_fields = parent.field_names();
                self.graph
                    .defaults()
                    .field_names()
                    .into_iter()
                    .filter(|f| parent_fields.contains(f))
                    .map(|f| (f.clone(), f))
                    .collect()
            }
        }
    }

    fn fail(&self, category: RuntimeCategory, namespace: Vec<String>, inner: BoxError) -> BoxError {
        let node = namespace.last().cloned().unwrap_or_default();
        Box::new(SubgraphFailure {
            category,
            node,
            namespace,
            state: None,
            inner,
        })
    }
}

fn same_name(set: Option<&[String]>) -> Vec<(String, String)> {
    set.unwrap_or_default()
        .iter()
        .map(|f| (f.clone(), f.clone()))
        .collect()
}

fn undeclared(node: &str, side: &'static str, field: &str) -> CompileError {
    CompileError::MappingReferencesUndeclaredField {
        node: node.to_owned(),
        side,
        field: field.to_owned(),
    }
}

impl<P: State, C: State> SubgraphNode<P, C> {
    /// One run of the subgraph as a node, failing with the engine's boxed errors.
    async fn run_boxed(&self, state: Arc<P>, ctx: NodeCtx) -> Result<P::Update, BoxError> {
        let mut child = self.graph.defaults().clone();
        for (sub_field, parent_field) in self.in_pairs() {
            let value = state.field_json(&parent_field).unwrap_or(Value::Null);
            child = child.with_field_json(&sub_field, value).map_err(|e| {
                self.fail(
                    RuntimeCategory::StateValidationError,
                    ctx.namespace.to_vec(),
                    Box::new(e),
                )
            })?;
        }

        let nested = ctx.enter(Arc::clone(&state) as StateRef, Boundary::Subgraph);
        let done = self.graph.run_within(child, &nested).await?;
        let fields = self
            .out_pairs(&state)
            .into_iter()
            .map(|(p, s)| (p, done.field_json(&s).unwrap_or(Value::Null)))
            .collect();
        state.update_from_json(fields).map_err(|e| {
            self.fail(
                RuntimeCategory::StateValidationError,
                ctx.namespace.to_vec(),
                Box::new(e),
            )
        })
    }
}

impl<P: State, C: State> Node<P> for SubgraphNode<P, C> {
    fn run(&self, state: Arc<P>, ctx: NodeCtx) -> NodeFuture<'_, P> {
        Box::pin(async move { self.run_boxed(state, ctx).await.map_err(NodeError::from) })
    }

    fn emits_node_events(&self) -> bool {
        false
    }

    fn check(&self, name: &str, parent: &P) -> Result<Vec<CompileWarning>, CompileError> {
        if self.declared() && (self.inputs.is_some() || self.outputs.is_some()) {
            return Err(CompileError::ConflictingProjectionForms {
                node: name.to_owned(),
            });
        }
        let parent_fields = parent.field_names();
        let child_fields = self.graph.defaults().field_names();
        let has = |fields: &[String], f: &str| fields.iter().any(|x| x == f);
        for (s, p) in self.inputs.iter().flatten() {
            if !has(&parent_fields, p) {
                return Err(undeclared(name, "parent", p));
            }
            if !has(&child_fields, s) {
                return Err(undeclared(name, "subgraph", s));
            }
        }
        for (p, s) in self.outputs.iter().flatten() {
            if !has(&parent_fields, p) {
                return Err(undeclared(name, "parent", p));
            }
            if !has(&child_fields, s) {
                return Err(undeclared(name, "subgraph", s));
            }
        }
        for f in self
            .projects_in
            .iter()
            .chain(self.projects_out.iter())
            .flatten()
        {
            if !has(&parent_fields, f) {
                return Err(undeclared(name, "parent", f));
            }
            if !has(&child_fields, f) {
                return Err(undeclared(name, "subgraph", f));
            }
        }

        // Round trip: a parent field copied in to subgraph field `s` and merged back
        // out from the same `s` into the same parent field.
        let outs = self.out_pairs(parent);
        let mut warnings = Vec::new();
        for (s_in, p_in) in self.in_pairs() {
            let round_trips = outs
                .iter()
                .any(|(p_out, s_out)| *p_out == p_in && *s_out == s_in);
            if round_trips && parent.reducer_round_trip_idempotent(&p_in) == Some(false) {
                warnings.push(CompileWarning::ProjectionReducerRoundTrip {
                    node: name.to_owned(),
                    reducer: parent.reducer_name(&p_in).unwrap_or_default(),
                    field: p_in,
                });
            }
        }
        Ok(warnings)
    }
}
