//! Graph shapes and middleware several test modules build.

use std::sync::Arc;

use openarmature_graph::{Middleware, Next, NodeCtx, NodeFuture, State};

/// Calls `next` up to `attempts` times, with the attempt index set, until one
/// succeeds; when none does, the last attempt's error.
pub struct Reattempt {
    /// How many times `next` may run.
    pub attempts: u32,
}

impl<S: State> Middleware<S> for Reattempt {
    fn call<'a>(&'a self, state: Arc<S>, ctx: NodeCtx, next: Next<'a, S>) -> NodeFuture<'a, S> {
        Box::pin(async move {
            let mut last = None;
            for i in 0..self.attempts {
                match next
                    .run(Arc::clone(&state), ctx.with_attempt_index(i))
                    .await
                {
                    Ok(update) => return Ok(update),
                    Err(err) => last = Some(err),
                }
            }
            Err(last.unwrap_or_else(|| "no attempts".into()))
        })
    }
}
