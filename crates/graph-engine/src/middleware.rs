//! Spec: pipeline-utilities §2 — the middleware seam the engine owns.
//!
//! A middleware wraps one node attempt chain: it may transform the state going in,
//! the update coming out, call `next` several times (retry) or not at all
//! (short-circuit). Per-graph middleware wraps per-node middleware.

use std::sync::Arc;

use futures::future::BoxFuture;

use crate::error::BoxError;
use crate::node::NodeCtx;
use crate::state::State;

/// One link of a node's middleware chain.
pub trait Middleware<S: State>: Send + Sync + 'static {
    /// Handles one call; `next` runs the rest of the chain and finally the node.
    fn call<'a>(
        &'a self,
        state: Arc<S>,
        ctx: NodeCtx,
        next: Next<'a, S>,
    ) -> BoxFuture<'a, Result<S::Update, BoxError>>;
}

/// The innermost step of a chain: dispatches events and runs the node.
pub(crate) trait Terminal<S: State>: Send + Sync {
    fn run<'a>(&'a self, state: Arc<S>, ctx: NodeCtx)
        -> BoxFuture<'a, Result<S::Update, BoxError>>;

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
    pub fn run(self, state: Arc<S>, ctx: NodeCtx) -> BoxFuture<'a, Result<S::Update, BoxError>> {
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
