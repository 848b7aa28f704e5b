//! Spec: graph-engine §2 *Edge*, *END*, *Compiled graph* — building and compile-time
//! validation.

use std::collections::{HashSet, VecDeque};
use std::fmt;
use std::sync::{Arc, RwLock};

use indexmap::IndexMap;
use serde_json::Value;

use crate::checkpoint::runtime::CheckpointConfig;
use crate::checkpoint::{CheckpointError, Checkpointer, MigrationRegistry};

use crate::compiled::{CompiledGraph, CompiledNode, Inner, ResolvedEdge};
use crate::error::{BoxError, CompileError, CompileWarning};
use crate::middleware::Middleware;
use crate::node::Node;
use crate::observer::{ObserverErrorSink, Registration};
use crate::queue::Registry;
use crate::state::State;

/// A routing destination: a node name or the [`END`] sentinel.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// A declared node.
    Node(String),
    /// Halt the run (distinct from any node name, so a node may be called `"END"`).
    End,
}

/// The engine's halt sentinel.
pub const END: Target = Target::End;

impl From<&str> for Target {
    fn from(name: &str) -> Self {
        Target::Node(name.to_owned())
    }
}

impl From<String> for Target {
    fn from(name: String) -> Self {
        Target::Node(name)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Node(n) => f.write_str(n),
            Target::End => f.write_str("END"),
        }
    }
}

/// A conditional edge function: evaluated on the post-update state.
pub type EdgeFn<S> = Arc<dyn Fn(&S) -> Result<Target, BoxError> + Send + Sync>;

pub(crate) enum Edge<S: State> {
    Static(Target),
    Conditional {
        f: EdgeFn<S>,
        /// Destinations the function may return, used only for reachability.
        hints: Option<Vec<Target>>,
    },
}

struct NodeDecl<S: State> {
    node: Arc<dyn Node<S>>,
    middleware: Vec<Arc<dyn Middleware<S>>>,
}

/// Declares a graph, then [`GraphBuilder::compile`]s it.
///
/// # Examples
/// ```
/// use std::sync::Arc;
/// use openarmature_graph::{state, GraphBuilder, NodeCtx, END};
///
/// state! {
///     /// The pipeline's state.
///     #[derive(Default)]
///     pub struct Doc => DocUpdate {
///         /// Visited nodes.
///         pub log: Vec<String> => append,
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let graph = GraphBuilder::new(Doc::default())
///     .add_node("a", |_s: Arc<Doc>, _c: NodeCtx| async { Ok(DocUpdate::default().log(vec!["a".into()])) })
///     .add_edge("a", END)
///     .entry("a")
///     .compile()
///     .unwrap();
/// let out = graph.invoke(Doc::default()).await.unwrap();
/// assert_eq!(out.log, vec!["a".to_string()]);
/// # });
/// ```
pub struct GraphBuilder<S: State> {
    defaults: S,
    nodes: IndexMap<String, NodeDecl<S>>,
    duplicate: Option<String>,
    undeclared_middleware: Option<String>,
    edges: Vec<(String, Edge<S>)>,
    entry: Option<String>,
    graph_middleware: Vec<Arc<dyn Middleware<S>>>,
    observers: Vec<Registration>,
    sink: Option<ObserverErrorSink>,
    checkpoint: CheckpointSetup,
    sessions: Option<crate::session::SessionConfig>,
}

/// What the builder collected for pipeline-utilities §10.
#[derive(Default)]
struct CheckpointSetup {
    checkpointer: Option<Arc<dyn Checkpointer>>,
    schema_version: String,
    migrations: MigrationRegistry,
    error: Option<CheckpointError>,
}

impl<S: State> GraphBuilder<S> {
    /// Starts a graph whose schema defaults are `defaults` (a subgraph starts from
    /// these when nothing is projected in).
    pub fn new(defaults: S) -> Self {
        GraphBuilder {
            defaults,
            nodes: IndexMap::new(),
            duplicate: None,
            undeclared_middleware: None,
            edges: Vec::new(),
            entry: None,
            graph_middleware: Vec::new(),
            observers: Vec::new(),
            sink: None,
            checkpoint: CheckpointSetup {
                schema_version: crate::checkpoint::UNVERSIONED.to_owned(),
                ..CheckpointSetup::default()
            },
            sessions: None,
        }
    }

    /// Declares a node.
    pub fn add_node(self, name: impl Into<String>, node: impl Node<S>) -> Self {
        self.add_shared_node(name, Arc::new(node))
    }

    /// Declares a node from a shared implementation.
    pub fn add_shared_node(mut self, name: impl Into<String>, node: Arc<dyn Node<S>>) -> Self {
        let name = name.into();
        if self.nodes.contains_key(&name) {
            self.duplicate.get_or_insert(name);
            return self;
        }
        self.nodes.insert(
            name,
            NodeDecl {
                node,
                middleware: Vec::new(),
            },
        );
        self
    }

    /// Appends per-node middleware to `node` (the first added is outermost).
    /// Middleware for an undeclared node is a `dangling_edge` at compile time.
    ///
    /// Takes the middleware by value; pass an `Arc` (an `Arc<M>` or an
    /// `Arc<dyn Middleware<S>>` is a middleware too) to share one instance.
    pub fn node_middleware(mut self, node: &str, middleware: impl Middleware<S>) -> Self {
        match self.nodes.get_mut(node) {
            Some(decl) => decl.middleware.push(Arc::new(middleware)),
            None => {
                self.undeclared_middleware
                    .get_or_insert_with(|| node.to_owned());
            }
        }
        self
    }

    /// Appends per-graph middleware, wrapping every node's own chain (first added is
    /// outermost).
    pub fn graph_middleware(mut self, middleware: impl Middleware<S>) -> Self {
        self.graph_middleware.push(Arc::new(middleware));
        self
    }

    /// A static edge.
    pub fn add_edge(mut self, from: impl Into<String>, to: impl Into<Target>) -> Self {
        self.edges.push((from.into(), Edge::Static(to.into())));
        self
    }

    /// A conditional edge. `hints` lists the destinations `f` may return; they are
    /// used only for the reachability check (`None`: every node counts as reachable
    /// from here). An undeclared destination returned at run time is a
    /// `routing_error`.
    pub fn add_conditional_edge<F>(
        mut self,
        from: impl Into<String>,
        f: F,
        hints: Option<Vec<Target>>,
    ) -> Self
    where
        F: Fn(&S) -> Result<Target, BoxError> + Send + Sync + 'static,
    {
        self.edges.push((
            from.into(),
            Edge::Conditional {
                f: Arc::new(f),
                hints,
            },
        ));
        self
    }

    /// Declares the entry node (required: there is no implicit first node).
    pub fn entry(mut self, name: impl Into<String>) -> Self {
        self.entry = Some(name.into());
        self
    }

    /// Registers the graph's Checkpointer (pipeline-utilities §10.1.1): the engine saves
    /// a record at every completed node attempt, and `InvokeOptions::resume_invocation`
    /// resumes from one. At most one per graph; a later call replaces an earlier one.
    /// Only the outermost graph's Checkpointer is used.
    ///
    /// Takes the checkpointer by value; pass an `Arc` to keep a handle (an
    /// `Arc<C>` or `Arc<dyn Checkpointer>` is a checkpointer too).
    pub fn checkpointer(mut self, checkpointer: impl Checkpointer) -> Self {
        self.checkpoint.checkpointer = Some(Arc::new(checkpointer));
        self
    }

    /// Declares the state's schema version (pipeline-utilities §10.2), written on every
    /// checkpoint record and compared on resume. Undeclared:
    /// [`crate::checkpoint::UNVERSIONED`].
    pub fn schema_version(mut self, version: impl Into<String>) -> Self {
        self.checkpoint.schema_version = version.into();
        self
    }

    /// Registers a state migration (pipeline-utilities §10.12) from `from_version` to
    /// `to_version`, applied to a loaded record's states (as JSON) on resume. A
    /// duplicate pair, or several shortest chains to the declared version, fails
    /// [`GraphBuilder::compile`] with `checkpoint_state_migration_chain_ambiguous`.
    pub fn state_migration<F>(
        mut self,
        from_version: impl Into<String>,
        to_version: impl Into<String>,
        migrate: F,
    ) -> Self
    where
        F: Fn(Value) -> Result<Value, BoxError> + Send + Sync + 'static,
    {
        let result =
            self.checkpoint
                .migrations
                .register(from_version, to_version, Arc::new(migrate));
        if let (Err(e), None) = (result, &self.checkpoint.error) {
            self.checkpoint.error = Some(e);
        }
        self
    }

    /// Registers the graph's SessionStore and session rules (sessions §3–§8): an
    /// invocation given [`crate::InvokeOptions::session_id`] loads the session at entry
    /// and saves it at `END`. At most one per graph; a later call replaces an earlier
    /// one. Only the outermost graph's registration is used. See [`crate::session`].
    pub fn sessions(mut self, config: crate::session::SessionConfig) -> Self {
        self.sessions = Some(config);
        self
    }

    /// Attaches an observer to the compiled graph (graph-attached registration).
    pub fn observer(mut self, registration: Registration) -> Self {
        self.observers.push(registration);
        self
    }

    /// Where observer failures go (default: one line on standard error).
    pub fn on_observer_error(mut self, sink: ObserverErrorSink) -> Self {
        self.sink = Some(sink);
        self
    }

    /// Validates the graph and freezes it.
    ///
    /// # Errors
    /// The first [`CompileError`] found, checked in this order: reducer
    /// configuration, duplicate nodes, entry, edges, outgoing-edge count,
    /// reachability, node checks (subgraph projections).
    pub fn compile(self) -> Result<CompiledGraph<S>, CompileError> {
        self.defaults.check_schema()?;
        if let Some(node) = self.duplicate {
            return Err(CompileError::DuplicateNode { node });
        }
        if let Some(node) = self.undeclared_middleware {
            return Err(CompileError::DanglingEdge {
                from: "<middleware>".into(),
                to: node,
            });
        }
        let sessions = match self.sessions {
            Some(c) => Some(c.compile(&self.defaults, &self.checkpoint.schema_version)?),
            None => None,
        };
        let checkpoint = self.checkpoint.compile()?;
        // Paused records go to the registered Checkpointer, else to a store the
        // compiled graph owns (suspension §8.5).
        let paused: Arc<dyn Checkpointer> = match &checkpoint {
            Some(c) => Arc::clone(&c.checkpointer),
            None => Arc::new(crate::checkpoint::InMemoryCheckpointer::new()),
        };
        let entry = self.entry.clone().ok_or(CompileError::NoDeclaredEntry)?;
        let entry_index =
            self.nodes
                .get_index_of(&entry)
                .ok_or_else(|| CompileError::DanglingEdge {
                    from: "<entry>".into(),
                    to: entry.clone(),
                })?;

        let mut edges: Vec<Option<Edge<S>>> = (0..self.nodes.len()).map(|_| None).collect();
        for (from, edge) in self.edges {
            let index =
                self.nodes
                    .get_index_of(&from)
                    .ok_or_else(|| CompileError::DanglingEdge {
                        from: from.clone(),
                        to: from.clone(),
                    })?;
            if let Edge::Static(Target::Node(to)) = &edge {
                if !self.nodes.contains_key(to) {
                    return Err(CompileError::DanglingEdge {
                        from,
                        to: to.clone(),
                    });
                }
            }
            if edges[index].is_some() {
                return Err(CompileError::MultipleOutgoingEdges { node: from });
            }
            edges[index] = Some(edge);
        }

        check_reachability(&self.nodes, &edges, entry_index)?;

        let mut warnings: Vec<CompileWarning> = Vec::new();
        for (name, decl) in &self.nodes {
            warnings.extend(decl.node.check(name, &self.defaults)?);
        }

        let names: Vec<String> = self.nodes.keys().cloned().collect();
        let nodes = self
            .nodes
            .into_iter()
            .zip(edges)
            .map(|((name, decl), edge)| {
                let edge = match edge {
                    None | Some(Edge::Static(Target::End)) => ResolvedEdge::End,
                    Some(Edge::Static(Target::Node(to))) => {
                        ResolvedEdge::To(names.iter().position(|n| *n == to).unwrap_or(entry_index))
                    }
                    Some(Edge::Conditional { f, .. }) => ResolvedEdge::Conditional(f),
                };
                let chain = self
                    .graph_middleware
                    .iter()
                    .cloned()
                    .chain(decl.middleware)
                    .collect();
                CompiledNode {
                    namespace: Arc::from([name.clone()]),
                    name: Arc::from(name.as_str()),
                    node: decl.node,
                    chain,
                    edge,
                }
            })
            .collect();

        Ok(CompiledGraph {
            inner: Arc::new(Inner {
                nodes,
                entry: entry_index,
                defaults: self.defaults,
                observers: RwLock::new(
                    self.observers
                        .into_iter()
                        .map(|registration| crate::compiled::Attached {
                            registration,
                            attached: 0,
                            detached: None,
                        })
                        .collect(),
                ),
                registry: Arc::new(Registry::default()),
                sink: self.sink.unwrap_or_else(default_sink),
                warnings,
                checkpoint,
                sessions,
                paused,
            }),
        })
    }
}

impl CheckpointSetup {
    /// Validates the migrations; the config when a Checkpointer is registered.
    fn compile(self) -> Result<Option<Arc<CheckpointConfig>>, CompileError> {
        let ambiguous = |e: CheckpointError| match e {
            CheckpointError::ChainAmbiguous {
                from_version,
                to_version,
            } => CompileError::CheckpointStateMigrationChainAmbiguous {
                from_version,
                to_version,
            },
            other => CompileError::CheckpointStateMigrationChainAmbiguous {
                from_version: None,
                to_version: Some(other.to_string()),
            },
        };
        if let Some(e) = self.error {
            return Err(ambiguous(e));
        }
        self.migrations
            .check_unambiguous(&self.schema_version)
            .map_err(ambiguous)?;
        Ok(self.checkpointer.map(|checkpointer| {
            Arc::new(CheckpointConfig {
                checkpointer,
                schema_version: self.schema_version,
                migrations: self.migrations,
            })
        }))
    }
}

fn default_sink() -> ObserverErrorSink {
    Arc::new(|name: &str, err: &BoxError| {
        eprintln!("openarmature: observer `{name}` failed: {err}");
    })
}

fn check_reachability<S: State>(
    nodes: &IndexMap<String, NodeDecl<S>>,
    edges: &[Option<Edge<S>>],
    entry: usize,
) -> Result<(), CompileError> {
    let mut seen = HashSet::from([entry]);
    let mut queue = VecDeque::from([entry]);
    while let Some(i) = queue.pop_front() {
        let next: Vec<usize> = match &edges[i] {
            None | Some(Edge::Static(Target::End)) => Vec::new(),
            Some(Edge::Static(Target::Node(to))) => nodes.get_index_of(to).into_iter().collect(),
            Some(Edge::Conditional {
                hints: Some(hints), ..
            }) => hints
                .iter()
                .filter_map(|t| match t {
                    Target::Node(n) => nodes.get_index_of(n),
                    Target::End => None,
                })
                .collect(),
            Some(Edge::Conditional { hints: None, .. }) => (0..nodes.len()).collect(),
        };
        for j in next {
            if seen.insert(j) {
                queue.push_back(j);
            }
        }
    }
    match nodes.keys().enumerate().find(|(i, _)| !seen.contains(i)) {
        Some((_, name)) => Err(CompileError::UnreachableNode { node: name.clone() }),
        None => Ok(()),
    }
}
