//! Spec: pipeline-utilities §2 — the middleware seam the engine owns.
//!
//! A middleware wraps one node attempt chain: it may transform the state going in,
//! the update coming out, call `next` several times (retry) or not at all
//! (short-circuit). Per-graph middleware wraps per-node middleware.

use std::sync::Arc;

use crate::error::NodeError;
use crate::node::{NodeCtx, NodeFuture};
use crate::state::State;

/// One link of a node's middleware chain.
pub trait Middleware<S: State>: Send + Sync + 'static {
    /// Handles one call; `next` runs the rest of the chain and finally the node.
    fn call<'a>(&'a self, state: Arc<S>, ctx: NodeCtx, next: Next<'a, S>) -> NodeFuture<'a, S>;

    /// The concrete middleware, for compile-time checks by composite nodes (e.g. a
    /// fan-out inspecting a failure-isolation middleware's static degraded update).
    /// The default exposes nothing.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
}

/// A shared middleware is a middleware: `Arc<M>` and `Arc<dyn Middleware<S>>` register
/// like the middleware itself.
impl<S: State, M: Middleware<S> + ?Sized> Middleware<S> for Arc<M> {
    fn call<'a>(&'a self, state: Arc<S>, ctx: NodeCtx, next: Next<'a, S>) -> NodeFuture<'a, S> {
        (**self).call(state, ctx, next)
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        (**self).as_any()
    }
}

/// A [`Middleware`] made from a closure (see [`middleware_fn`]).
pub struct FnMiddleware<F>(F);

/// Wraps a closure as a [`Middleware`]: it gets the state, the node context and
/// `next` (the rest of the chain) and returns the boxed future of the attempt's
/// outcome. The future may hold `next` but not borrow the closure, so clone what it
/// captures into it.
///
/// # Examples
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use openarmature_graph::{middleware_fn, Middleware};
/// # openarmature_graph::state! { #[derive(Default)] pub struct S => SUpdate { pub n: u64, } }
/// let calls = Arc::new(AtomicUsize::new(0));
/// let counting = middleware_fn(move |state: Arc<S>, ctx, next| {
///     calls.fetch_add(1, Ordering::Relaxed);
///     Box::pin(async move { next.run(state, ctx).await })
/// });
/// # fn registers<M: Middleware<S>>(_: M) {}
/// # registers(counting);
/// ```
pub fn middleware_fn<S, F>(f: F) -> FnMiddleware<F>
where
    S: State,
    F: for<'a> Fn(Arc<S>, NodeCtx, Next<'a, S>) -> NodeFuture<'a, S> + Send + Sync + 'static,
{
    FnMiddleware(f)
}

impl<S, F> Middleware<S> for FnMiddleware<F>
where
    S: State,
    F: for<'a> Fn(Arc<S>, NodeCtx, Next<'a, S>) -> NodeFuture<'a, S> + Send + Sync + 'static,
{
    fn call<'a>(&'a self, state: Arc<S>, ctx: NodeCtx, next: Next<'a, S>) -> NodeFuture<'a, S> {
        (self.0)(state, ctx, next)
    }
}

/// The target a chain wraps when it is not a graph node: what [`run_chain`] calls
/// at the inner end (a fan-out instance's subgraph run, a branch's invocation).
pub type ChainTarget<'a, S> = dyn Fn(Arc<S>, NodeCtx) -> NodeFuture<'a, S> + Send + Sync + 'a;

struct TargetTerminal<'a, S: State>(&'a ChainTarget<'a, S>);

impl<S: State> Terminal<S> for TargetTerminal<'_, S> {
    fn run<'b>(&'b self, state: Arc<S>, ctx: NodeCtx) -> NodeFuture<'b, S> {
        Box::pin(async move {
            // §3.4 per-attempt scoping: a failed attempt's metadata writes are
            // discarded (an instance re-run by its retry middleware starts over).
            let cell = Arc::clone(&ctx.scope.metadata);
            let before = cell.snapshot();
            let result = (self.0)(state, ctx.unscoped()).await;
            if result.is_err() {
                cell.restore(before);
            }
            result
        })
    }

    fn attempt_failed(&self) {}
}

/// Runs `chain` (outermost first) around `target` — the way composite nodes wrap a
/// unit of work that is not a graph node (pipeline-utilities §9.7 instance
/// middleware, §11.7 branch middleware). Re-attempting middleware in the chain
/// re-runs `target`, and `target` sees the attempt index in its context. The chain
/// runs with `ctx` as the ambient context (`get_invocation_metadata` inside the
/// chain reads `ctx`'s metadata), and a failed attempt of `target` has its metadata
/// writes discarded (observability §3.4).
pub async fn run_chain<'a, S: State>(
    chain: &'a [Arc<dyn Middleware<S>>],
    state: Arc<S>,
    ctx: NodeCtx,
    target: &'a ChainTarget<'a, S>,
) -> Result<S::Update, NodeError> {
    let terminal = TargetTerminal(target);
    crate::metadata::scoped(
        Some(ctx.clone()),
        Next::new(chain, &terminal).run(state, ctx),
    )
    .await
}

/// The innermost step of a chain: dispatches events and runs the node.
pub(crate) trait Terminal<S: State>: Send + Sync {
    fn run<'a>(&'a self, state: Arc<S>, ctx: NodeCtx) -> NodeFuture<'a, S>;

    /// A re-attempting middleware saw the current attempt fail: close it.
    fn attempt_failed(&self);
}

/// A cursor over the rest of a middleware chain. `Copy`, so a retry can call it
/// once per attempt.
pub struct Next<'a, S: State> {
    rest: &'a [Arc<dyn Middleware<S>>],
    terminal: &'a dyn Terminal<S>,
}

impl<S: State> Clone for Next<'_, S> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: State> Copy for Next<'_, S> {}

impl<'a, S: State> Next<'a, S> {
    pub(crate) fn new(chain: &'a [Arc<dyn Middleware<S>>], terminal: &'a dyn Terminal<S>) -> Self {
        Next {
            rest: chain,
            terminal,
        }
    }

    /// Runs the remaining middleware, then the node.
    ///
    /// When `ctx` came from [`NodeCtx::with_attempt_index`] (a re-attempting
    /// middleware, such as retry, starting an attempt), a failure returned through
    /// this call closes that attempt: its `completed` event is dispatched with the
    /// error before the caller decides what to do next.
    pub fn run(self, state: Arc<S>, ctx: NodeCtx) -> NodeFuture<'a, S> {
        let scoped = ctx.attempt_scoped;
        let ctx = ctx.unscoped();
        let terminal = self.terminal;
        let call = match self.rest.split_first() {
            Some((head, rest)) => head.call(state, ctx, Next { rest, terminal }),
            None => terminal.run(state, ctx),
        };
        if !scoped {
            return call;
        }
        Box::pin(async move {
            let result = call.await;
            if result.is_err() {
                terminal.attempt_failed();
            }
            result
        })
    }
}
