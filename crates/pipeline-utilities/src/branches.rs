//! Spec: pipeline-utilities §11 — parallel branches.

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use indexmap::IndexMap;
use openarmature_graph::{
    category_of, erase, run_chain, run_unit, strip_subgraph_carrier, Boundary, Carrier, Category,
    CompileError, CompileWarning, CompiledGraph, Middleware, Node, NodeConfig, NodeCtx, NodeError,
    NodeFuture, ParallelBranchesConfig, State, StateRef,
};
use serde_json::{json, Value};

use crate::fan_out::ErrorPolicy;

/// The work one branch does: a subgraph ([`SubgraphBranch`]) or an inline callable
/// ([`CallBranch`]). Returns the branch's contribution, a parent partial update.
pub trait BranchWork<P: State>: Send + Sync + 'static {
    /// Runs the branch inside `ctx` (already entered for this branch).
    fn run<'a>(&'a self, name: &'a str, parent: Arc<P>, ctx: NodeCtx) -> NodeFuture<'a, P>;

    /// Compile-time checks against the parent's state.
    ///
    /// # Errors
    /// A [`CompileError`] for a misconfigured branch.
    fn check(
        &self,
        node: &str,
        branch: &str,
        parent: &P,
    ) -> Result<Vec<CompileWarning>, CompileError>;
}

/// A subgraph branch: parent fields projected in through `inputs`, exit values
/// projected out through `outputs`, the whole run wrapped by the branch middleware.
pub struct SubgraphBranch<P: State, C: State> {
    graph: CompiledGraph<C>,
    inputs: Vec<(String, String)>,
    outputs: Vec<(String, String)>,
    middleware: Vec<Arc<dyn Middleware<C>>>,
    _parent: std::marker::PhantomData<fn(P) -> P>,
}

impl<P: State, C: State> SubgraphBranch<P, C> {
    /// A branch running `graph` from its defaults.
    pub fn new(graph: CompiledGraph<C>) -> Self {
        SubgraphBranch {
            graph,
            inputs: Vec::new(),
            outputs: Vec::new(),
            middleware: Vec::new(),
            _parent: std::marker::PhantomData,
        }
    }

    /// `(subgraph_field, parent_field)` pairs copied in at dispatch.
    pub fn inputs<I: IntoIterator<Item = (A, B)>, A: Into<String>, B: Into<String>>(
        mut self,
        pairs: I,
    ) -> Self {
        self.inputs = crate::field_pairs(pairs);
        self
    }

    /// `(parent_field, subgraph_field)` pairs merged out at exit.
    pub fn outputs<I: IntoIterator<Item = (A, B)>, A: Into<String>, B: Into<String>>(
        mut self,
        pairs: I,
    ) -> Self {
        self.outputs = crate::field_pairs(pairs);
        self
    }

    /// Appends branch middleware (outermost first), wrapping the whole subgraph run.
    pub fn middleware(mut self, middleware: Arc<dyn Middleware<C>>) -> Self {
        self.middleware.push(middleware);
        self
    }
}

impl<P: State, C: State> BranchWork<P> for SubgraphBranch<P, C> {
    fn run<'a>(&'a self, name: &'a str, parent: Arc<P>, ctx: NodeCtx) -> NodeFuture<'a, P> {
        Box::pin(async move {
            let mut initial = self.graph.defaults().clone();
            for (sub, par) in &self.inputs {
                initial =
                    initial.with_field_json(sub, parent.field_json(par).unwrap_or(Value::Null))?;
            }
            let branch_ctx = ctx.enter(
                Arc::clone(&parent) as StateRef,
                Boundary::Branch(name.to_owned()),
            );
            let graph = &self.graph;
            let outputs = &self.outputs;
            let target = move |state: Arc<C>, bctx: NodeCtx| -> NodeFuture<'_, C> {
                Box::pin(async move {
                    let done = graph.run_within((*state).clone(), &bctx).await?;
                    let fields = outputs
                        .iter()
                        .map(|(_, sub)| (sub.clone(), done.field_json(sub).unwrap_or(Value::Null)))
                        .collect();
                    Ok(done.update_from_json(fields)?)
                })
            };
            let update =
                run_chain(&self.middleware, Arc::new(initial), branch_ctx, &target).await?;
            // Project out what the (possibly degraded) update covers; an uncovered
            // output contributes nothing (§11.7).
            let produced = C::update_json(&update);
            let fields = self
                .outputs
                .iter()
                .filter_map(|(par, sub)| produced.get(sub).map(|v| (par.clone(), v.clone())))
                .collect();
            Ok(parent.update_from_json(fields)?)
        })
    }

    fn check(
        &self,
        node: &str,
        _branch: &str,
        parent: &P,
    ) -> Result<Vec<CompileWarning>, CompileError> {
        let undeclared =
            |side: &'static str, field: &str| CompileError::MappingReferencesUndeclaredField {
                node: node.to_owned(),
                side,
                field: field.to_owned(),
            };
        let parent_fields = parent.field_names();
        let child_fields = self.graph.defaults().field_names();
        let has = |fields: &[String], f: &str| fields.iter().any(|x| x == f);
        for (sub, par) in &self.inputs {
            if !has(&parent_fields, par) {
                return Err(undeclared("parent", par));
            }
            if !has(&child_fields, sub) {
                return Err(undeclared("subgraph", sub));
            }
        }
        for (par, sub) in &self.outputs {
            if !has(&parent_fields, par) {
                return Err(undeclared("parent", par));
            }
            if !has(&child_fields, sub) {
                return Err(undeclared("subgraph", sub));
            }
        }
        let mut warnings = Vec::new();
        for (sub_in, par_in) in &self.inputs {
            let round_trip = self.outputs.iter().any(|(p, s)| p == par_in && s == sub_in);
            if round_trip && parent.reducer_round_trip_idempotent(par_in) == Some(false) {
                warnings.push(CompileWarning::ProjectionReducerRoundTrip {
                    node: node.to_owned(),
                    field: par_in.clone(),
                    reducer: parent.reducer_name(par_in).unwrap_or_default(),
                });
            }
        }
        Ok(warnings)
    }
}

/// The function an inline-callable branch runs: parent state in, parent update out.
pub type BranchFn<P> = Arc<
    dyn Fn(Arc<P>, NodeCtx) -> BoxFuture<'static, Result<<P as State>::Update, NodeError>>
        + Send
        + Sync,
>;

/// An inline-callable branch (§11.1.1): reads the parent state and returns a parent
/// partial update; it reports itself as one synthetic `started` / `completed` pair
/// named after the branch.
pub struct CallBranch<P: State> {
    call: BranchFn<P>,
    middleware: Vec<Arc<dyn Middleware<P>>>,
}

impl<P: State> CallBranch<P> {
    /// A branch running `call`.
    pub fn new<F, Fut>(call: F) -> Self
    where
        F: Fn(Arc<P>, NodeCtx) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<P::Update, NodeError>> + Send + 'static,
    {
        CallBranch {
            call: Arc::new(move |s, c| Box::pin(call(s, c))),
            middleware: Vec::new(),
        }
    }

    /// Appends branch middleware (outermost first), wrapping the callable.
    pub fn middleware(mut self, middleware: Arc<dyn Middleware<P>>) -> Self {
        self.middleware.push(middleware);
        self
    }
}

impl<P: State> BranchWork<P> for CallBranch<P> {
    fn run<'a>(&'a self, name: &'a str, parent: Arc<P>, ctx: NodeCtx) -> NodeFuture<'a, P> {
        Box::pin(async move {
            let branch_ctx = ctx.enter(
                Arc::clone(&parent) as StateRef,
                Boundary::Branch(name.to_owned()),
            );
            let call = &self.call;
            let target = move |state: Arc<P>, bctx: NodeCtx| -> NodeFuture<'_, P> {
                Box::pin(async move { run_unit(&bctx, name, state, |s, c| call(s, c)).await })
            };
            run_chain(&self.middleware, parent, branch_ctx, &target).await
        })
    }

    fn check(
        &self,
        _node: &str,
        _branch: &str,
        _parent: &P,
    ) -> Result<Vec<CompileWarning>, CompileError> {
        Ok(Vec::new())
    }
}

type When<P> = Arc<dyn Fn(&P) -> bool + Send + Sync>;

/// One declared branch: exactly one piece of work, and an optional `when`.
pub struct Branch<P: State> {
    work: Vec<Arc<dyn BranchWork<P>>>,
    when: Option<When<P>>,
}

impl<P: State> Branch<P> {
    /// A branch doing `work`.
    pub fn new(work: impl BranchWork<P>) -> Self {
        Branch {
            work: vec![Arc::new(work)],
            when: None,
        }
    }

    /// A subgraph branch.
    pub fn subgraph<C: State>(branch: SubgraphBranch<P, C>) -> Self {
        Self::new(branch)
    }

    /// An inline-callable branch.
    pub fn call(branch: CallBranch<P>) -> Self {
        Self::new(branch)
    }

    /// A branch declared with no work (rejected at compile time as
    /// `parallel_branches_invalid_branch_spec`).
    pub fn empty() -> Self {
        Branch {
            work: Vec::new(),
            when: None,
        }
    }

    /// Adds another piece of work (two is rejected at compile time, §11.1.1).
    pub fn also(mut self, work: impl BranchWork<P>) -> Self {
        self.work.push(Arc::new(work));
        self
    }

    /// Dispatches the branch only when `predicate(parent_state)` holds (§11.10).
    pub fn when(mut self, predicate: impl Fn(&P) -> bool + Send + Sync + 'static) -> Self {
        self.when = Some(Arc::new(predicate));
        self
    }

    fn dispatched(&self, state: &P) -> bool {
        self.when.as_ref().is_none_or(|w| w(state))
    }
}

/// A parallel-branches node (§11): runs heterogeneous branches concurrently and
/// merges their contributions in declaration order, whatever the completion order.
/// A fail-fast branch failure cancels the others and propagates as
/// `parallel_branches_branch_failed` (a carrier naming the branch).
pub struct ParallelBranchesNode<P: State> {
    branches: IndexMap<String, Branch<P>>,
    error_policy: ErrorPolicy,
    errors_field: Option<String>,
}

impl<P: State> Default for ParallelBranchesNode<P> {
    fn default() -> Self {
        ParallelBranchesNode {
            branches: IndexMap::new(),
            error_policy: ErrorPolicy::FailFast,
            errors_field: None,
        }
    }
}

impl<P: State> ParallelBranchesNode<P> {
    /// A node with no branches yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares a branch (declaration order is dispatch and merge order).
    pub fn branch(mut self, name: impl Into<String>, branch: Branch<P>) -> Self {
        self.branches.insert(name.into(), branch);
        self
    }

    /// The error policy (default fail-fast).
    pub fn error_policy(mut self, policy: ErrorPolicy) -> Self {
        self.error_policy = policy;
        self
    }

    /// Where `collect` records failures: `{branch_name, category, message}` each.
    pub fn errors_field(mut self, field: impl Into<String>) -> Self {
        self.errors_field = Some(field.into());
        self
    }
}

impl<P: State> Node<P> for ParallelBranchesNode<P> {
    fn run(&self, state: Arc<P>, ctx: NodeCtx) -> NodeFuture<'_, P> {
        Box::pin(async move {
            // Reuse the dispatch decision the engine resolved at entry (`when` runs
            // once per dispatch, §11.10).
            let dispatched: Vec<bool> = match ctx.node_config() {
                Some(NodeConfig::ParallelBranches(c)) => self
                    .branches
                    .keys()
                    .map(|n| c.dispatched.contains(n))
                    .collect(),
                _ => self
                    .branches
                    .values()
                    .map(|b| b.dispatched(&state))
                    .collect(),
            };
            // Suspension §8.3: a branch of a collecting node cannot suspend.
            let ctx = match self.error_policy {
                ErrorPolicy::Collect => ctx.forbid_suspension(
                    "suspend() inside a branch of a parallel-branches node with error_policy collect (suspension §8.3)",
                ),
                ErrorPolicy::FailFast => ctx,
            };
            let mut running = FuturesUnordered::new();
            for (position, (name, branch)) in self.branches.iter().enumerate() {
                if !dispatched[position] {
                    continue;
                }
                let Some(work) = branch.work.first() else {
                    continue;
                };
                let (parent, node_ctx) = (Arc::clone(&state), ctx.clone());
                running
                    .push(async move { (position, name, work.run(name, parent, node_ctx).await) });
            }
            let mut results = Vec::new();
            while let Some((position, name, result)) = running.next().await {
                let result = match result {
                    Err(error) if self.error_policy == ErrorPolicy::FailFast => {
                        drop(running);
                        let failed = Carrier::new(
                            Category::PARALLEL_BRANCHES_BRANCH_FAILED,
                            format!("branch `{name}` failed"),
                            strip_subgraph_carrier(erase(error)),
                        )
                        .with_branch(name.clone());
                        return Err(failed.into());
                    }
                    other => other,
                };
                results.push((position, name, result));
            }
            results.sort_by_key(|(position, _, _)| *position);
            let mut fields: Vec<(String, Value)> = Vec::new();
            let mut errors = Vec::new();
            for (_, name, result) in results {
                match result {
                    Ok(update) => {
                        if let Value::Object(map) = P::update_json(&update) {
                            fields.extend(map);
                        }
                    }
                    Err(error) => errors.push(json!({
                        "branch_name": name,
                        "category": category_of(&error).map_or("node_exception", |c| c.as_str()),
                        "message": error.to_string(),
                    })),
                }
            }
            if let Some(field) = &self.errors_field {
                fields.push((field.clone(), Value::Array(errors)));
            }
            Ok(state.update_from_json(fields)?)
        })
    }

    fn event_config(&self, name: &str, state: &P) -> Option<NodeConfig> {
        let dispatched: Vec<String> = self
            .branches
            .iter()
            .filter(|(_, b)| b.dispatched(state))
            .map(|(n, _)| n.clone())
            .collect();
        Some(NodeConfig::ParallelBranches(ParallelBranchesConfig {
            branch_names: self.branches.keys().cloned().collect(),
            branch_count: dispatched.len(),
            dispatched,
            error_policy: self.error_policy.as_str().to_owned(),
            parent_node_name: name.to_owned(),
        }))
    }

    fn check(&self, name: &str, parent: &P) -> Result<Vec<CompileWarning>, CompileError> {
        if self.branches.is_empty() {
            return Err(CompileError::Node {
                node: name.to_owned(),
                category: "parallel_branches_no_branches",
                message: "a parallel-branches node needs at least one branch".into(),
            });
        }
        if let Some(field) = &self.errors_field {
            if !parent.field_names().contains(field) {
                return Err(CompileError::MappingReferencesUndeclaredField {
                    node: name.to_owned(),
                    side: "parent",
                    field: field.clone(),
                });
            }
        }
        let mut warnings = Vec::new();
        for (branch_name, branch) in &self.branches {
            let [work] = branch.work.as_slice() else {
                return Err(CompileError::Node {
                    node: name.to_owned(),
                    category: "parallel_branches_invalid_branch_spec",
                    message: format!(
                        "branch `{branch_name}` must declare exactly one of subgraph or call"
                    ),
                });
            };
            warnings.extend(work.check(name, branch_name, parent)?);
        }
        Ok(warnings)
    }
}
