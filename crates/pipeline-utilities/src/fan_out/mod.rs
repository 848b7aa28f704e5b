//! Spec: pipeline-utilities §9 — parallel fan-out.
//!
//! The [`FanOutNode`] record and its builder, with the policy enums it takes. The
//! node's behaviour lives in the submodules: [`node`] (the `Node` impl),
//! [`instance`] (running one instance), [`resume`] (per-instance checkpoint
//! progress), [`fan_in`] (merging the contributions) and [`check`] (compile-time
//! checks).

mod check;
mod fan_in;
mod instance;
mod node;
mod resume;

use std::num::NonZeroUsize;
use std::sync::Arc;

use openarmature_graph::{CategorizedError, CompiledGraph, Middleware, NodeError, State};

use crate::dispatch::FanOutDispatcher;

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

/// The concurrency bound of a fan-out that sets none (§9.2).
const DEFAULT_CONCURRENCY: usize = 10;

/// A value resolved from the parent state at fan-out entry.
pub type StateFn<P, T> = Arc<dyn Fn(&P) -> Result<T, NodeError> + Send + Sync>;

/// An instance count or concurrency bound: fixed, or computed from the parent state.
pub enum Resolve<P, T> {
    /// A fixed value.
    Fixed(T),
    /// Computed once at fan-out entry (must be a pure function of the state).
    Computed(StateFn<P, T>),
}

impl<P, T: Clone> Resolve<P, T> {
    fn resolve(&self, state: &P) -> Result<T, NodeError> {
        match self {
            Resolve::Fixed(v) => Ok(v.clone()),
            Resolve::Computed(f) => f(state),
        }
    }
}

fn fail(category: &str, message: String) -> NodeError {
    CategorizedError::new(openarmature_graph::Category::from_name(category), message).into()
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
/// use std::num::NonZeroUsize;
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
///     .add_node("fan", FanOutNode::<Batch, Item>::over_items(double, "xs", "x", "y", "ys").concurrency(NonZeroUsize::new(4)))
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
    count: Option<Resolve<P, usize>>,
    item_field: Option<String>,
    collect_field: String,
    target_field: String,
    concurrency: Resolve<P, Option<NonZeroUsize>>,
    error_policy: ErrorPolicy,
    errors_field: Option<String>,
    on_empty: OnEmpty,
    count_field: Option<String>,
    inputs: Vec<(String, String)>,
    extra_outputs: Vec<(String, String)>,
    instance_middleware: Vec<Arc<dyn Middleware<C>>>,
    dispatcher: Option<Arc<dyn FanOutDispatcher<C>>>,
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
            concurrency: Resolve::Fixed(NonZeroUsize::new(DEFAULT_CONCURRENCY)),
            error_policy: ErrorPolicy::FailFast,
            errors_field: None,
            on_empty: OnEmpty::Raise,
            count_field: None,
            inputs: Vec::new(),
            extra_outputs: Vec::new(),
            instance_middleware: Vec::new(),
            dispatcher: None,
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

    /// `count` mode with a fixed count (`0` resolves zero instances: see
    /// [`FanOutNode::on_empty`]).
    pub fn count(mut self, count: usize) -> Self {
        self.count = Some(Resolve::Fixed(count));
        self
    }

    /// `count` mode with a count computed from the parent state at entry. A count
    /// that cannot be computed is the callable's error (a state value that is
    /// negative is the spec's `fan_out_invalid_count`:
    /// [`Category::FAN_OUT_INVALID_COUNT`](openarmature_graph::Category::FAN_OUT_INVALID_COUNT)).
    pub fn count_with(
        mut self,
        count: impl Fn(&P) -> Result<usize, NodeError> + Send + Sync + 'static,
    ) -> Self {
        self.count = Some(Resolve::Computed(Arc::new(count)));
        self
    }

    /// A fixed concurrency bound (`None` = unbounded; default 10). Zero is not a
    /// bound, so the type rules it out.
    pub fn concurrency(mut self, bound: Option<NonZeroUsize>) -> Self {
        self.concurrency = Resolve::Fixed(bound);
        self
    }

    /// A concurrency bound computed from the parent state at entry (`None` =
    /// unbounded). A bound that cannot be computed is the callable's error (a state
    /// value that is zero or negative is the spec's `fan_out_invalid_concurrency`:
    /// [`Category::FAN_OUT_INVALID_CONCURRENCY`](openarmature_graph::Category::FAN_OUT_INVALID_CONCURRENCY)).
    pub fn concurrency_with(
        mut self,
        bound: impl Fn(&P) -> Result<Option<NonZeroUsize>, NodeError> + Send + Sync + 'static,
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
        self.inputs = crate::field_pairs(pairs);
        self
    }

    /// Extra `(parent_field, subgraph_field)` pairs: each parent field receives the
    /// list of per-instance values (instance order, `null` where an instance's
    /// contribution lacks the field), merged once through its reducer.
    pub fn extra_outputs<I: IntoIterator<Item = (A, B)>, A: Into<String>, B: Into<String>>(
        mut self,
        pairs: I,
    ) -> Self {
        self.extra_outputs = crate::field_pairs(pairs);
        self
    }

    /// Appends instance middleware (outermost first): it wraps each instance's whole
    /// subgraph run (§9.7); a retry here re-runs the instance from scratch.
    pub fn instance_middleware(mut self, middleware: Arc<dyn Middleware<C>>) -> Self {
        self.instance_middleware.push(middleware);
        self
    }

    /// Where the instances' subgraph runs happen (default: in this process, nested in
    /// the invocation, as [`InProcessDispatcher`](crate::dispatch::InProcessDispatcher)
    /// does). The instance middleware, the concurrency bound, the error policy, the
    /// per-instance checkpoint progress and the fan-in stay here whatever the
    /// dispatcher: see [`crate::dispatch`].
    pub fn dispatcher(mut self, dispatcher: Arc<dyn FanOutDispatcher<C>>) -> Self {
        self.dispatcher = Some(dispatcher);
        self
    }
}
