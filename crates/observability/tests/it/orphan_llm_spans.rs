//! observability §5.5 *Lineage-resolved parent*, the orphan fallback: an LLM call a
//! node middleware makes outside the node body (the node's span is not open yet, or
//! no longer) parents under the nearest enclosing wrapper span of the call's own
//! lineage — the branch dispatch span, or the innermost fan-out instance span under
//! mixed nesting — never the parallel-branches node span or the invocation span.
//!
//! The parent must not depend on scheduling: the wrapper yields to the runtime
//! (several times, on a multi-threaded runtime) before calling, and the result is
//! the same.
//!
//! A post-phase call (after `next` returns) is not an orphan here: graph-engine §6
//! dispatches `completed` after the reducer merge, which follows the whole chain, so
//! the calling node's span is still open and the call exact-matches it.

use std::sync::Arc;

use futures::future::BoxFuture;

use openarmature_graph::{
    state, CompiledGraph, GraphBuilder, InvokeOptions, Middleware, Next, NodeCtx, NodeError, State,
    END,
};
use openarmature_llm::{CompletionRequest, Message, Provider, Usage};
use openarmature_observability::attributes as a;
use openarmature_observability::OtelObserver;
use openarmature_pipeline::{Branch, FanOutNode, ParallelBranchesNode, SubgraphBranch};
use opentelemetry_sdk::trace::SpanData;

use crate::support::single_node;
use crate::support::{ok_response, span_capture, text, ScriptedProvider};

state! {
    /// The invoked graph's state.
    #[derive(Default)]
    pub struct Outer => OuterUpdate {
        /// Items the `work` branch fans out over.
        pub xs: Vec<i64>,
    }
}

state! {
    /// The `work` branch: a fan-out over `xs`.
    #[derive(Default)]
    pub struct Work => WorkUpdate {
        /// The items.
        pub xs: Vec<i64>,
        /// Collected results.
        pub ys: Vec<i64> => append,
    }
}

state! {
    /// A leaf run: one `guard` node.
    #[derive(Default)]
    pub struct Leaf => LeafUpdate {
        /// The item.
        pub x: i64,
        /// The result.
        pub y: i64,
    }
}

/// Answers every call with the same completion, after yielding once.
fn always() -> ScriptedProvider {
    ScriptedProvider::answering(|| {
        Box::pin(async {
            tokio::task::yield_now().await;
            Ok(ok_response(Usage::default()))
        })
    })
}

/// A guardrail-style middleware: one LLM call on the node's behalf, before `next`
/// (`pre`) or after it, after yielding `yields` times.
struct Guard {
    pre: bool,
    yields: usize,
}

impl Guard {
    async fn side_call(&self, ctx: &NodeCtx) -> Result<(), NodeError> {
        for _ in 0..self.yields {
            tokio::task::yield_now().await;
        }
        let request = CompletionRequest::new(vec![Message::user("check")]).in_node(ctx);
        always().complete(&request).await?;
        Ok(())
    }
}

impl<S: State> Middleware<S> for Guard {
    fn call<'a>(
        &'a self,
        state: Arc<S>,
        ctx: NodeCtx,
        next: Next<'a, S>,
    ) -> BoxFuture<'a, Result<S::Update, NodeError>> {
        Box::pin(async move {
            if self.pre {
                self.side_call(&ctx).await?;
            }
            let update = next.run(state, ctx.clone()).await?;
            if !self.pre {
                self.side_call(&ctx).await?;
            }
            Ok(update)
        })
    }
}

fn leaf(guard: Guard) -> CompiledGraph<Leaf> {
    GraphBuilder::new(Leaf::default())
        .add_node("guard", |s: Arc<Leaf>, _c: NodeCtx| async move {
            Ok::<_, NodeError>(LeafUpdate::default().y(s.x))
        })
        .node_middleware("guard", Arc::new(guard))
        .add_edge("guard", END)
        .entry("guard")
        .compile()
        .unwrap()
}

async fn spans(graph: &CompiledGraph<Outer>) -> Vec<SpanData> {
    let (exporter, provider) = span_capture();
    let otel = OtelObserver::builder(&provider).build();
    let initial = Outer { xs: vec![7] };
    otel.invoke(graph, initial, InvokeOptions::default())
        .await
        .unwrap();
    graph.drain(None).await;
    exporter.get_finished_spans().unwrap()
}

fn parent<'s>(spans: &'s [SpanData], s: &SpanData) -> &'s SpanData {
    spans
        .iter()
        .find(|p| p.span_context.span_id() == s.parent_span_id)
        .unwrap_or_else(|| panic!("`{}` has no exported parent", s.name))
}

fn llm_spans(spans: &[SpanData]) -> Vec<&SpanData> {
    spans.iter().filter(|s| s.name == a::LLM_SPAN).collect()
}

/// Two subgraph branches, each a `guard` leaf with its wrapper call.
fn two_branches(pre: bool, yields: usize) -> CompiledGraph<Outer> {
    let node = ParallelBranchesNode::new()
        .branch(
            "a",
            Branch::subgraph(SubgraphBranch::new(leaf(Guard { pre, yields }))),
        )
        .branch(
            "b",
            Branch::subgraph(SubgraphBranch::new(leaf(Guard { pre, yields }))),
        );
    single_node::<Outer>("dispatcher", node)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_branch_orphan_parents_under_its_own_dispatch_span() {
    for yields in [0, 1, 8] {
        let pre = true;
        let spans = spans(&two_branches(pre, yields)).await;
        let calls = llm_spans(&spans);
        assert_eq!(calls.len(), 2, "pre {pre}, yields {yields}");
        let mut branches = Vec::new();
        for call in calls {
            let dispatch = parent(&spans, call);
            let branch = text(dispatch, a::NODE_BRANCH_NAME)
                .unwrap_or_else(|| panic!("parent `{}` is no dispatch span", dispatch.name));
            assert_eq!(
                text(dispatch, a::PARALLEL_BRANCHES_PARENT_NODE_NAME).as_deref(),
                Some("dispatcher")
            );
            // A sibling of its branch's `guard` span, not its child.
            let guard = spans
                .iter()
                .find(|s| {
                    s.name == "guard" && text(s, a::NODE_BRANCH_NAME).as_deref() == Some(&*branch)
                })
                .expect("the branch's guard span");
            assert_eq!(guard.parent_span_id, call.parent_span_id);
            branches.push(branch);
        }
        branches.sort();
        assert_eq!(branches, ["a", "b"], "pre {pre}, yields {yields}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_phase_call_parents_under_the_still_open_node_span() {
    let spans = spans(&two_branches(false, 8)).await;
    let calls = llm_spans(&spans);
    assert_eq!(calls.len(), 2);
    let mut branches: Vec<String> = calls
        .iter()
        .map(|call| {
            let node = parent(&spans, call);
            assert_eq!(node.name, "guard");
            text(node, a::NODE_BRANCH_NAME).unwrap()
        })
        .collect();
    branches.sort();
    assert_eq!(branches, ["a", "b"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_nesting_orphan_parents_under_the_innermost_instance() {
    for yields in [0, 1, 8] {
        let work = single_node::<Work>(
            "fan",
            FanOutNode::over_items(leaf(Guard { pre: true, yields }), "xs", "x", "y", "ys"),
        );
        let idle = single_node::<Leaf>("idle", |_s: Arc<Leaf>, _c: NodeCtx| async {
            Ok::<_, NodeError>(LeafUpdate::default())
        });
        let node = ParallelBranchesNode::new()
            .branch(
                "work",
                Branch::subgraph(SubgraphBranch::new(work).inputs([("xs", "xs")])),
            )
            .branch("idle", Branch::subgraph(SubgraphBranch::new(idle)));
        let graph = single_node::<Outer>("dispatcher", node);
        let spans = spans(&graph).await;
        let calls = llm_spans(&spans);
        assert_eq!(calls.len(), 1, "yields {yields}");
        let instance = parent(&spans, calls[0]);
        assert_eq!(
            text(instance, a::FAN_OUT_PARENT_NODE_NAME).as_deref(),
            Some("fan"),
            "yields {yields}: the orphan is under `{}`",
            instance.name
        );
        let fan_node = parent(&spans, instance);
        let dispatch = parent(&spans, fan_node);
        assert_eq!(text(dispatch, a::NODE_BRANCH_NAME).as_deref(), Some("work"));
    }
}
