//! Spec: observability §5.5 *Lineage-resolved parent* (the orphan fallback) and the
//! `calls_llm_from_wrapper` primitive defined by the header of observability fixture
//! 133 (used by 133, 152, 153; reported there for conformance-adapter §5.1);
//! register O13.
//!
//! `calls_llm_from_wrapper: {phase: pre | post, messages, model?}` wraps the node in
//! a node middleware (innermost of the extension's) that makes exactly one real
//! `complete()` call against the case's mock provider, on the node's behalf
//! (`CompletionRequest::in_node` with the middleware's context):
//!
//! - `pre` (the default): before `next`, so the node's `started` event (and span)
//!   has not happened yet;
//! - `post`: after `next` returns. The 133 header expects the node's span closed by
//!   then, but graph-engine §6 dispatches `completed` after the reducer merge, which
//!   follows the whole chain: the span is still open and the call exact-matches it
//!   (register O13; no fixture uses `post`).
//!
//! The reply is not written to state (a guardrail-style side call); a failed call
//! fails the node with the provider's error. The node's own body runs inside `next`.
//! The calls are recorded as made from a wrapper, which is how the orphan
//! invariants ([`super::lineage_invariants`]) know which provider spans are orphans.

use std::sync::Arc;

use openarmature_graph::{DynState, Middleware, Next, NodeCtx, NodeFuture};

use super::llm::{LlmCall, LlmHarness};
use crate::yaml::Y;
use crate::AdapterError;

/// The node key this module handles.
pub(crate) const KEY: &str = "calls_llm_from_wrapper";

/// When the wrapper makes its call, relative to the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Pre,
    Post,
}

/// The middleware a `calls_llm_from_wrapper` directive installs.
struct WrapperCall {
    phase: Phase,
    call: LlmCall,
}

impl Middleware<DynState> for WrapperCall {
    fn call<'a>(
        &'a self,
        state: Arc<DynState>,
        ctx: NodeCtx,
        next: Next<'a, DynState>,
    ) -> NodeFuture<'a, DynState> {
        Box::pin(async move {
            if self.phase == Phase::Pre {
                self.call.complete(&ctx, None, true).await?;
            }
            let update = next.run(state, ctx.clone()).await?;
            if self.phase == Phase::Post {
                self.call.complete(&ctx, None, true).await?;
            }
            Ok(update)
        })
    }
}

/// The middleware of a node's `calls_llm_from_wrapper` directive, if it has one.
pub(crate) fn middleware(
    spec: &Y<'_>,
    llm: Option<&Arc<LlmHarness>>,
) -> Result<Vec<Arc<dyn Middleware<DynState>>>, AdapterError> {
    let Some(y) = spec.get(KEY) else {
        return Ok(Vec::new());
    };
    y.check_keys(&["phase", "messages", "model"])?;
    let phase = match y.get("phase") {
        None => Phase::Pre,
        Some(p) => match p.str()? {
            "pre" => Phase::Pre,
            "post" => Phase::Post,
            other => return Err(p.invalid(format!("phase `{other}` (pre or post)"))),
        },
    };
    if y.get("messages").is_none() {
        return Err(y.invalid("calls_llm_from_wrapper needs `messages`"));
    }
    let harness = llm.ok_or_else(|| y.invalid("calls_llm_from_wrapper without a mock provider"))?;
    Ok(vec![Arc::new(WrapperCall {
        phase,
        call: harness.side_call(&y)?,
    })])
}
