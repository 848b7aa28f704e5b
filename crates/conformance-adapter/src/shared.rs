//! Spec: conformance-adapter §5 — what every capability runner shares, so that no
//! runner imports another for it: the poison-tolerant lock over the harness's
//! recorders, the node a directive wraps around a fixture node, and the runtime of
//! a case that talks to a mock server.

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use openarmature_graph::{
    CompileError, CompileWarning, DynState, DynUpdate, GraphBuilder, Node, NodeConfig, NodeCtx,
    NodeError, NodeFuture, Target, END,
};

use crate::failure::{Check, Failure, FailureKind};
use crate::yaml::Y;
use crate::AdapterError;

/// Runs `case` on a fresh unpaused current-thread runtime with I/O, in a thread of
/// its own named `name` (a case that talks to a mock HTTP server needs real time and
/// sockets; the runner's own runtime has a paused clock).
pub(crate) async fn on_own_runtime<F, Fut>(name: &str, case: F) -> Check
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future<Output = Check>,
{
    let harness = |m: String| Failure::new(FailureKind::Harness, m);
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            let result = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime.block_on(case()),
                Err(e) => Err(harness(format!("cannot start a runtime: {e}"))),
            };
            let _ = tx.send(result);
        })
        .map_err(|e| harness(format!("cannot start the case thread: {e}")))?;
    rx.await
        .map_err(|_| harness(format!("the {name} thread panicked")))?
}

/// A fixture's destination name as an edge target (`END` is the end).
pub(crate) fn target(name: &str) -> Target {
    if name == "END" {
        END
    } else {
        Target::from(name)
    }
}

/// An `{if_field, equals, then, else}` condition on the edge from `from`: `then`
/// when the post-update state's `if_field` equals `equals`, else `else`. With
/// `hinted`, the two destinations are the edge's reachability hints.
pub(crate) fn if_field_edge(
    builder: GraphBuilder<DynState>,
    from: String,
    cond: &Y<'_>,
    hinted: bool,
) -> Result<GraphBuilder<DynState>, AdapterError> {
    cond.check_keys(&["if_field", "equals", "then", "else"])?;
    let field = cond.req("if_field")?.str()?.to_owned();
    let equals = cond.req("equals")?.json()?;
    let then = target(cond.req("then")?.str()?);
    let otherwise = target(cond.req("else")?.str()?);
    let hints = hinted.then(|| vec![then.clone(), otherwise.clone()]);
    Ok(builder.add_conditional_edge(
        from,
        move |s: &DynState| {
            let hit = s
                .get(&field)
                .is_some_and(|v| crate::matchers::json_eq(v, &equals));
            Ok(if hit { then.clone() } else { otherwise.clone() })
        },
        hints,
    ))
}

/// Locks a recorder; a poisoned lock still yields its data (a failed case must not
/// hide what was recorded before the panic).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A harness directive wrapped around a fixture node: it runs its own steps with the
/// inner node inside and otherwise *is* the inner node (the inner node's event
/// configuration, event emission and compile checks are its own). Registered as a
/// node through [`Around`].
pub(crate) trait AroundNode: Send + Sync + 'static {
    /// The fixture node inside the directive.
    fn inner(&self) -> &Arc<dyn Node<DynState>>;

    /// Runs one attempt: the directive's steps and the inner node.
    fn run(
        &self,
        state: Arc<DynState>,
        ctx: NodeCtx,
    ) -> impl Future<Output = Result<DynUpdate, NodeError>> + Send;
}

/// An [`AroundNode`] as a node.
pub(crate) struct Around<N>(pub(crate) N);

impl<N: AroundNode> Around<N> {
    /// `directive` as the node the graph registers.
    pub(crate) fn node(directive: N) -> Arc<dyn Node<DynState>> {
        Arc::new(Self(directive))
    }
}

impl<N: AroundNode> Node<DynState> for Around<N> {
    fn run(&self, state: Arc<DynState>, ctx: NodeCtx) -> NodeFuture<'_, DynState> {
        Box::pin(AroundNode::run(&self.0, state, ctx))
    }

    fn event_config(&self, name: &str, state: &DynState) -> Option<NodeConfig> {
        self.0.inner().event_config(name, state)
    }

    fn emits_node_events(&self) -> bool {
        self.0.inner().emits_node_events()
    }

    fn check(&self, name: &str, parent: &DynState) -> Result<Vec<CompileWarning>, CompileError> {
        self.0.inner().check(name, parent)
    }
}

/// A fixture's log level (`TRACE` … `FATAL`, with the `WARNING` and `CRITICAL` aliases)
/// as an OpenTelemetry severity.
pub(crate) fn severity(y: &Y<'_>) -> Result<opentelemetry::logs::Severity, AdapterError> {
    use opentelemetry::logs::Severity;
    Ok(match y.str()? {
        "TRACE" => Severity::Trace,
        "DEBUG" => Severity::Debug,
        "INFO" => Severity::Info,
        "WARN" | "WARNING" => Severity::Warn,
        "ERROR" => Severity::Error,
        "FATAL" | "CRITICAL" => Severity::Fatal,
        other => {
            return Err(AdapterError::DirectiveUnknown {
                file: y.file.to_path_buf(),
                directive: format!("log level `{other}`"),
                location: y.location().to_owned(),
            })
        }
    })
}
