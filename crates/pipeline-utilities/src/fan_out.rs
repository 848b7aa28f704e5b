//! Spec: pipeline-utilities §9 — parallel fan-out.

use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use openarmature_graph::checkpoint::{FanOutTracker, SavedContribution};
use openarmature_graph::{
    category_of, is_carrier, Boundary, BoxError, CategorizedError, CompileError, CompileWarning,
    CompiledGraph, FanOutConfig, Middleware, Node, NodeConfig, NodeCtx, State, StateRef,
};
use serde_json::{json, Map, Value};

use crate::isolation::FailureIsolationMiddleware;

/// How a fan-out treats instance failures (§9.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrorPolicy {
    /// The first failure cancels the siblings and propagates (default).
    #[default]
    FailFast,
    /// Every instance runs; failures are recorded in `errors_field` and skipped.
    Collect,
}

impl ErrorPolicy {
    /// `"fail_fast"` / `"collect"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorPolicy::FailFast => "fail_fast",
            ErrorPolicy::Collect => "collect",
        }
    }
}

/// What a fan-out does when it resolves zero instances (§9.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnEmpty {
    /// Raise `fan_out_empty` (default).
    #[default]
    Raise,
    /// Run nothing and merge empty contributions.
    Noop,
}

/// A value resolved from the parent state at fan-out entry.
pub type StateFn<P, T> = Arc<dyn Fn(&P) -> Result<T, BoxError> + Send + Sync>;

/// An instance count or concurrency bound: fixed, or computed from the parent state.
pub enum Resolve<P, T> {
    /// A fixed value.
    Fixed(T),
    /// Computed once at fan-out entry (must be a pure function of the state).
    Computed(StateFn<P, T>),
}

impl<P, T: Clone> Resolve<P, T> {
    fn resolve(&self, state: &P) -> Result<T, BoxError> {
        match self {
            Resolve::Fixed(v) => Ok(v.clone()),
            Resolve::Computed(f) => f(state),
        }
    }
}

fn fail(category: &str, message: String) -> BoxError {
    Box::new(CategorizedError::new(Some(category), message))
}

/// A fan-out node (§9): runs a compiled subgraph once per item (or `count` times)
/// with bounded concurrency, then merges every instance's `collect_field` into the
/// parent's `target_field` in instance order, whatever the completion order.
///
/// Instances are futures polled by the node itself — no spawned tasks — so dropping
/// the invocation (or a fail-fast error) cancels every running instance at once.
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use openarmature_graph::{state, CompiledGraph, GraphBuilder, NodeCtx, END};
/// use openarmature_pipeline::FanOutNode;
///
/// state! {
///     /// One instance.
///     #[derive(Default)]
///     pub struct Item => ItemUpdate { /// Input.
///         pub x: i64, /// Output.
///         pub y: i64 }
/// }
/// state! {
///     /// The parent.
///     #[derive(Default)]
///     pub struct Batch => BatchUpdate { /// Inputs.
///         pub xs: Vec<i64>, /// Outputs, in input order.
///         pub ys: Vec<i64> => append }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let double: CompiledGraph<Item> = GraphBuilder::new(Item::default())
///     .add_node("double", |s: Arc<Item>, _: NodeCtx| async move { Ok(ItemUpdate::default().y(s.x * 2)) })
///     .add_edge("double", END)
///     .entry("double")
///     .compile()
///     .unwrap();
/// let graph = GraphBuilder::new(Batch::default())
///     .add_node("fan", FanOutNode::<Batch, Item>::over_items(double, "xs", "x", "y", "ys").concurrency(Some(4)))
///     .add_edge("fan", END)
///     .entry("fan")
///     .compile()
///     .unwrap();
/// let out = graph.invoke(Batch { xs: vec![1, 2, 3], ..Batch::default() }).await.unwrap();
/// assert_eq!(out.ys, vec![2, 4, 6]);
/// # });
/// ```
pub struct FanOutNode<P: State, C: State> {
    graph: CompiledGraph<C>,
    items: Option<(String, Option<String>)>,
    count: Option<Resolve<P, i64>>,
    item_field: Option<String>,
    collect_field: String,
    target_field: String,
    concurrency: Resolve<P, Option<i64>>,
    error_policy: ErrorPolicy,
    errors_field: Option<String>,
    on_empty: OnEmpty,
    count_field: Option<String>,
    inputs: Vec<(String, String)>,
    extra_outputs: Vec<(String, String)>,
    instance_middleware: Vec<Arc<dyn Middleware<C>>>,
}

impl<P: State, C: State> FanOutNode<P, C> {
    /// A fan-out with no mode chosen yet: set one with [`FanOutNode::items`] or
    /// [`FanOutNode::count`] (neither or both is `fan_out_count_mode_ambiguous` at
    /// compile time).
    pub fn new(
        graph: CompiledGraph<C>,
        collect_field: impl Into<String>,
        target_field: impl Into<String>,
    ) -> Self {
        FanOutNode {
            graph,
            items: None,
            count: None,
            item_field: None,
            collect_field: collect_field.into(),
            target_field: target_field.into(),
            concurrency: Resolve::Fixed(Some(10)),
            error_policy: ErrorPolicy::FailFast,
            errors_field: None,
            on_empty: OnEmpty::Raise,
            count_field: None,
            inputs: Vec::new(),
            extra_outputs: Vec::new(),
            instance_middleware: Vec::new(),
        }
    }

    /// `items_field` mode: one instance per element of the parent's `items_field`,
    /// the element assigned to the subgraph's `item_field`.
    pub fn over_items(
        graph: CompiledGraph<C>,
        items_field: impl Into<String>,
        item_field: impl Into<String>,
        collect_field: impl Into<String>,
        target_field: impl Into<String>,
    ) -> Self {
        Self::new(graph, collect_field, target_field).items(items_field, item_field)
    }

    /// Sets `items_field` / `item_field`.
    pub fn items(mut self, items_field: impl Into<String>, item_field: impl Into<String>) -> Self {
        self.items = Some((items_field.into(), None));
        self.item_field = Some(item_field.into());
        self
    }

    /// Sets `item_field` alone (a misconfiguration in `count` mode, reported at
    /// compile time).
    pub fn item_field(mut self, item_field: impl Into<String>) -> Self {
        self.item_field = Some(item_field.into());
        self
    }

    /// `count` mode with a fixed count.
    pub fn count(mut self, count: i64) -> Self {
        self.count = Some(Resolve::Fixed(count));
        self
    }

    /// `count` mode with a count computed from the parent state at entry.
    pub fn count_with(
        mut self,
        count: impl Fn(&P) -> Result<i64, BoxError> + Send + Sync + 'static,
    ) -> Self {
        self.count = Some(Resolve::Computed(Arc::new(count)));
        self
    }

    /// A fixed concurrency bound (`None` = unbounded; default 10).
    pub fn concurrency(mut self, bound: Option<i64>) -> Self {
        self.concurrency = Resolve::Fixed(bound);
        self
    }

    /// A concurrency bound computed from the parent state at entry.
    pub fn concurrency_with(
        mut self,
        bound: impl Fn(&P) -> Result<Option<i64>, BoxError> + Send + Sync + 'static,
    ) -> Self {
        self.concurrency = Resolve::Computed(Arc::new(bound));
        self
    }

    /// The error policy (default fail-fast).
    pub fn error_policy(mut self, policy: ErrorPolicy) -> Self {
        self.error_policy = policy;
        self
    }

    /// Where `collect` records failures, one string mapping each:
    /// `{fan_out_index, category, message}` (the index as a decimal string).
    pub fn errors_field(mut self, field: impl Into<String>) -> Self {
        self.errors_field = Some(field.into());
        self
    }

    /// What an empty fan-out does (default: raise `fan_out_empty`).
    pub fn on_empty(mut self, on_empty: OnEmpty) -> Self {
        self.on_empty = on_empty;
        self
    }

    /// A parent int field receiving the resolved instance count.
    pub fn count_field(mut self, field: impl Into<String>) -> Self {
        self.count_field = Some(field.into());
        self
    }

    /// Extra `(subgraph_field, parent_field)` pairs copied into every instance.
    pub fn inputs<I: IntoIterator<Item = (A, B)>, A: Into<String>, B: Into<String>>(
        mut self,
        pairs: I,
    ) -> Self {
        self.inputs = pairs
            .into_iter()
            .map(|(a, b)| (a.into(), b.into()))
            .collect();
        self
    }

    /// Extra `(parent_field, subgraph_field)` pairs: each parent field receives the
    /// list of per-instance values (instance order, `null` where an instance's
    /// contribution lacks the field), merged once through its reducer.
    pub fn extra_outputs<I: IntoIterator<Item = (A, B)>, A: Into<String>, B: Into<String>>(
        mut self,
        pairs: I,
    ) -> Self {
        self.extra_outputs = pairs
            .into_iter()
            .map(|(a, b)| (a.into(), b.into()))
            .collect();
        self
    }

    /// Appends instance middleware (outermost first): it wraps each instance's whole
    /// subgraph run (§9.7); a retry here re-runs the instance from scratch.
    pub fn instance_middleware(mut self, middleware: Arc<dyn Middleware<C>>) -> Self {
        self.instance_middleware.push(middleware);
        self
    }

    /// Resolves the instance inputs: the items (or `count` nulls) at entry.
    fn resolve_items(&self, state: &P) -> Result<Vec<Option<Value>>, BoxError> {
        if let Some((items_field, _)) = &self.items {
            return match state.field_json(items_field) {
                Some(Value::Array(items)) => Ok(items.into_iter().map(Some).collect()),
                other => Err(fail(
                    "fan_out_field_not_list",
                    format!("items_field `{items_field}` is not a list: {other:?}"),
                )),
            };
        }
        let count = match &self.count {
            Some(count) => count.resolve(state)?,
            None => 0,
        };
        let count = usize::try_from(count).map_err(|_| {
            fail(
                "fan_out_invalid_count",
                format!("fan-out count must be ≥ 0, got {count}"),
            )
        })?;
        Ok(vec![None; count])
    }

    fn resolve_concurrency(&self, state: &P) -> Result<Option<usize>, BoxError> {
        match self.concurrency.resolve(state)? {
            None => Ok(None),
            Some(n) if n >= 1 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
            Some(n) => Err(fail(
                "fan_out_invalid_concurrency",
                format!("fan-out concurrency must be a positive integer, got {n}"),
            )),
        }
    }

    /// One instance's initial subgraph state.
    fn instance_state(&self, parent: &P, item: Option<Value>) -> Result<C, BoxError> {
        let mut child = self.graph.defaults().clone();
        if let (Some(item), Some(field)) = (item, &self.item_field) {
            child = child.with_field_json(field, item)?;
        }
        for (sub, par) in &self.inputs {
            child = child.with_field_json(sub, parent.field_json(par).unwrap_or(Value::Null))?;
        }
        Ok(child)
    }

    /// The instance's contribution, in subgraph space: `collect_field` and the
    /// `extra_outputs` subgraph fields of its final state.
    fn project(&self, done: &C) -> Result<C::Update, BoxError> {
        let mut fields = vec![(
            self.collect_field.clone(),
            done.field_json(&self.collect_field).unwrap_or(Value::Null),
        )];
        for (_, sub) in &self.extra_outputs {
            fields.push((sub.clone(), done.field_json(sub).unwrap_or(Value::Null)));
        }
        Ok(done.update_from_json(fields)?)
    }

    async fn run_instance(
        &self,
        parent: &Arc<P>,
        ctx: &NodeCtx,
        index: usize,
        item: Option<Value>,
    ) -> Result<C::Update, BoxError> {
        let initial = self.instance_state(parent, item)?;
        let instance_ctx = ctx.enter(
            Arc::clone(parent) as StateRef,
            Boundary::FanOutInstance(index),
        );
        let graph = &self.graph;
        let target =
            move |state: Arc<C>, ictx: NodeCtx| -> BoxFuture<'_, Result<C::Update, BoxError>> {
                Box::pin(async move {
                    let done = graph.run_within((*state).clone(), &ictx).await?;
                    self.project(&done)
                })
            };
        openarmature_graph::run_chain(
            &self.instance_middleware,
            Arc::new(initial),
            instance_ctx,
            &target,
        )
        .await
    }

    fn fan_in(
        &self,
        parent: &P,
        count: usize,
        results: Vec<(usize, Done)>,
    ) -> Result<P::Update, BoxError> {
        let mut collected = Vec::new();
        // One list per extra parent field: the per-instance values in instance
        // order, merged once through the parent's reducer (like `target_field`).
        let mut extra: Vec<Vec<Value>> = vec![Vec::new(); self.extra_outputs.len()];
        let mut errors = Vec::new();
        for (_, result) in results {
            match result {
                Done::Ok(contribution) => {
                    let read =
                        |field: &str| contribution.get(field).cloned().unwrap_or(Value::Null);
                    collected.push(read(&self.collect_field));
                    for (slot, (_, sub)) in extra.iter_mut().zip(&self.extra_outputs) {
                        slot.push(read(sub));
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

    /// A rolled-forward contribution (§10.11.2: `result_is_error` routes it), in the
    /// shape a fresh instance produces.
    fn rolled_forward(&self, saved: &SavedContribution) -> Done {
        if saved.result_is_error {
            return Done::Collected(saved.result.clone());
        }
        let mut fields = Map::new();
        fields.insert(self.collect_field.clone(), saved.result.clone());
        for (par, sub) in &self.extra_outputs {
            let value = saved.extra_outputs.get(par).cloned().unwrap_or(Value::Null);
            fields.insert(sub.clone(), value);
        }
        Done::Ok(fields)
    }

    /// Runs instance `index` and records its outcome with `tracker`: a success, or
    /// (collect policy) its error record. A fail-fast failure or a failed save is
    /// returned as `Err`.
    async fn run_tracked(
        &self,
        parent: &Arc<P>,
        ctx: &NodeCtx,
        tracker: Option<&FanOutTracker>,
        (index, item): (usize, Option<Value>),
    ) -> Result<Done, BoxError> {
        if let Some(t) = tracker {
            t.start(index);
        }
        match self.run_instance(parent, ctx, index, item).await {
            Ok(update) => {
                let fields = match C::update_json(&update) {
                    Value::Object(fields) => fields,
                    _ => Map::new(),
                };
                if let Some(t) = tracker {
                    let read = |f: &str| fields.get(f).cloned().unwrap_or(Value::Null);
                    let extras = self
                        .extra_outputs
                        .iter()
                        .map(|(par, sub)| (par.clone(), read(sub)))
                        .collect();
                    t.record_success(index, read(&self.collect_field), extras)
                        .await?;
                }
                Ok(Done::Ok(fields))
            }
            Err(error) if self.error_policy == ErrorPolicy::FailFast => Err(carrier(error)),
            Err(error) => {
                let record = json!({
                    "fan_out_index": index.to_string(),
                    "category": category_of(&*error).unwrap_or("node_exception"),
                    "message": error.to_string(),
                });
                if let Some(t) = tracker {
                    t.record_error(index, record.clone()).await?;
                }
                Ok(Done::Collected(record))
            }
        }
    }

    fn check_fields(&self, name: &str, parent: &P) -> Result<(), CompileError> {
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

    fn round_trip_warnings(&self, name: &str, parent: &P) -> Vec<CompileWarning> {
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

impl<P: State, C: State> Node<P> for FanOutNode<P, C> {
    fn run(&self, state: Arc<P>, ctx: NodeCtx) -> BoxFuture<'_, Result<P::Update, BoxError>> {
        Box::pin(async move {
            // Reuse what the engine resolved at entry (callables run once, §9.2).
            let resolved = match ctx.node_config() {
                Some(NodeConfig::FanOut(c)) => Some((c.item_count, c.concurrency)),
                _ => None,
            };
            let items = match (&self.items, resolved) {
                (None, Some((count, _))) => vec![None; count],
                _ => self.resolve_items(&state)?,
            };
            let bound = match resolved {
                Some((_, bound)) => bound,
                None => self.resolve_concurrency(&state)?,
            };
            let count = items.len();
            if count == 0 {
                if self.on_empty == OnEmpty::Raise {
                    return Err(fail(
                        "fan_out_empty",
                        format!("fan-out `{}` resolved zero instances", ctx.node_name()),
                    ));
                }
                return self.fan_in(&state, 0, Vec::new());
            }
            // Per-instance checkpoint progress (§10.11): `None` without a Checkpointer.
            let tracker = ctx.fan_out_tracker(&*state, count)?;
            let tracker = tracker.as_ref();
            let limit = bound.unwrap_or(count).max(1);
            let (parent, node_ctx) = (&state, &ctx);
            let launch = move |next: (usize, Option<Value>)| async move {
                (
                    next.0,
                    self.run_tracked(parent, node_ctx, tracker, next).await,
                )
            };
            let mut results = Vec::with_capacity(count);
            // A resumed run skips the instances the record marks completed: their
            // contributions roll forward unchanged.
            let mut items = items.into_iter().enumerate();
            let mut pending = |results: &mut Vec<(usize, Done)>| loop {
                let next = items.next()?;
                match tracker.and_then(|t| t.completed(next.0)) {
                    Some(saved) => results.push((next.0, self.rolled_forward(saved))),
                    None => return Some(next),
                }
            };
            let mut running = FuturesUnordered::new();
            // Start in index order, keep up to `limit` in flight.
            while running.len() < limit {
                match pending(&mut results) {
                    Some(next) => running.push(launch(next)),
                    None => break,
                }
            }
            while let Some((index, result)) = running.next().await {
                match result {
                    Ok(done) => results.push((index, done)),
                    // Dropping the set cancels every sibling still running.
                    Err(error) => {
                        drop(running);
                        return Err(error);
                    }
                }
                if let Some(next) = pending(&mut results) {
                    running.push(launch(next));
                }
            }
            results.sort_by_key(|(index, _)| *index);
            self.fan_in(&state, count, results)
        })
    }

    fn event_config(&self, name: &str, state: &P) -> Option<NodeConfig> {
        let item_count = match &self.items {
            Some((items_field, _)) => match state.field_json(items_field) {
                Some(Value::Array(items)) => items.len(),
                _ => return None,
            },
            None => self.resolve_items(state).ok()?.len(),
        };
        let concurrency = self.resolve_concurrency(state).ok()?;
        Some(NodeConfig::FanOut(FanOutConfig {
            item_count,
            concurrency,
            error_policy: self.error_policy.as_str().to_owned(),
            parent_node_name: name.to_owned(),
        }))
    }

    fn check(&self, name: &str, parent: &P) -> Result<Vec<CompileWarning>, CompileError> {
        let ambiguous = |message: &str| CompileError::Node {
            node: name.to_owned(),
            category: "fan_out_count_mode_ambiguous",
            message: message.to_owned(),
        };
        match (&self.items, &self.count) {
            (Some(_), Some(_)) => return Err(ambiguous("both items_field and count are set")),
            (None, None) => return Err(ambiguous("neither items_field nor count is set")),
            (None, Some(_)) if self.item_field.is_some() => {
                return Err(ambiguous("item_field must be absent in count mode"))
            }
            _ => {}
        }
        self.check_fields(name, parent)?;
        for middleware in &self.instance_middleware {
            let isolation = middleware
                .as_any()
                .and_then(|m| m.downcast_ref::<FailureIsolationMiddleware<C>>());
            if let Some(fields) =
                isolation.and_then(FailureIsolationMiddleware::static_update_fields)
            {
                if !fields.contains(&self.collect_field) {
                    return Err(CompileError::Node {
                        node: name.to_owned(),
                        category: "fan_out_degraded_update_missing_collect_field",
                        message: format!(
                            "the static degraded_update of instance failure isolation does not set collect_field `{}`",
                            self.collect_field
                        ),
                    });
                }
            }
        }
        Ok(self.round_trip_warnings(name, parent))
    }
}

/// One instance's contribution to the fan-in, in subgraph space.
enum Done {
    /// `collect_field` and the `extra_outputs` subgraph fields.
    Ok(Map<String, Value>),
    /// A collected failure's error record (`errors_field` entry).
    Collected(Value),
}

/// A fail-fast instance error propagates as the offending instance's error, wrapped
/// in one `node_exception` carrier (a subgraph failure already is one).
fn carrier(error: BoxError) -> BoxError {
    if is_carrier(&*error) {
        error
    } else {
        Box::new(openarmature_graph::Carrier::new(
            "node_exception",
            "fan-out instance failed",
            error,
        ))
    }
}
