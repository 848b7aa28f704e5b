//! observability §8.4.1 with pipeline-utilities §10.4: a resumed invocation gets its
//! own Langfuse trace (under the id the engine mints for it), its `trace.input` is
//! the input hook over the restored checkpoint state, its `trace.output` the hook
//! over its final state, and the first trace is left as it was.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use openarmature_graph::checkpoint::InMemoryCheckpointer;
use openarmature_graph::{state, CompiledGraph, GraphBuilder, InvokeOptions, NodeCtx, State, END};
use openarmature_observability::langfuse::{trace_id_for, LangfuseObserver, TraceOptions};
use serde_json::json;

state! {
    /// Which nodes ran.
    #[derive(Default)]
    pub struct Flags => FlagsUpdate {
        /// `a` ran.
        pub a_ran: bool,
        /// `b` ran.
        pub b_ran: bool,
    }
}

/// `a` then `b`; `b` fails the first time it runs. Every completed node is saved.
fn graph() -> CompiledGraph<Flags> {
    let failed_once = Arc::new(AtomicBool::new(false));
    GraphBuilder::new(Flags::default())
        .checkpointer(Arc::new(InMemoryCheckpointer::new()))
        .add_node("a", |_s: Arc<Flags>, _c: NodeCtx| async move {
            Ok(FlagsUpdate::default().a_ran(true))
        })
        .add_node("b", move |_s: Arc<Flags>, _c: NodeCtx| {
            let first = !failed_once.swap(true, Ordering::SeqCst);
            async move {
                if first {
                    return Err("b fails once".into());
                }
                Ok(FlagsUpdate::default().b_ran(true))
            }
        })
        .add_edge("a", "b")
        .add_edge("b", END)
        .entry("a")
        .compile()
        .unwrap()
}

fn observer() -> LangfuseObserver {
    LangfuseObserver::builder()
        .trace_input_from_state(|s| Some(s.to_json()))
        .trace_output_from_state(|s| Some(s.to_json()))
        .build()
}

#[tokio::test]
async fn invoke_traced_resume_gets_its_own_trace_with_restored_input() {
    let graph = graph();
    let lf = observer();
    let first = lf
        .invoke_traced(
            &graph,
            Flags::default(),
            InvokeOptions::default(),
            TraceOptions::default().name("first"),
        )
        .await
        .unwrap_err();
    let openarmature_observability::InvokeError::Graph(first) = first else {
        unreachable!("the caller metadata is empty")
    };
    let first_id = first.invocation_id().to_owned();
    let before = lf.traces();
    assert_eq!(before.len(), 1);
    assert_eq!(
        before[0].input,
        Some(json!({"a_ran": false, "b_ran": false}))
    );
    assert_eq!(
        before[0].output,
        Some(json!({"a_ran": true, "b_ran": false}))
    );

    let resumed = lf
        .invoke_traced(
            &graph,
            Flags::default(),
            InvokeOptions::default().resume_invocation(first_id.clone()),
            TraceOptions::default().name("resumed"),
        )
        .await
        .unwrap();
    assert_ne!(resumed.invocation_id, first_id);
    assert_eq!(
        resumed.state.to_json(),
        json!({"a_ran": true, "b_ran": true})
    );

    let traces = lf.traces();
    assert_eq!(traces.len(), 2);
    assert_eq!(traces[0], before[0], "the first trace is not mutated");
    let second = &traces[1];
    assert_eq!(second.id, trace_id_for(&resumed.invocation_id));
    assert_eq!(
        second.name, "resumed",
        "the call's trace options reach the resumed trace"
    );
    assert_eq!(second.input, Some(json!({"a_ran": true, "b_ran": false})));
    assert_eq!(second.output, Some(json!({"a_ran": true, "b_ran": true})));
    assert_eq!(
        second.metadata.get("correlation_id"),
        traces[0].metadata.get("correlation_id")
    );
}

#[tokio::test]
async fn registered_observer_takes_the_resumed_input_from_the_lifecycle_event() {
    let graph = graph();
    let lf = observer();
    let options = || InvokeOptions::default().observer(lf.registration());
    let first = graph
        .invoke_with(Flags::default(), options())
        .await
        .unwrap_err();
    let resumed = graph
        .invoke_with(
            // The caller's state is discarded on resume: the hook must not see it.
            Flags::default().with_b_ran_for_test(),
            options().resume_invocation(first.invocation_id()),
        )
        .await
        .unwrap();
    graph.drain(None).await;
    let traces = lf.traces();
    let second = traces
        .iter()
        .find(|t| t.id == trace_id_for(&resumed.invocation_id))
        .expect("the resumed trace");
    assert_eq!(second.input, Some(json!({"a_ran": true, "b_ran": false})));
}

/// A caller state that differs from both the defaults and the restored state.
trait ForTest {
    fn with_b_ran_for_test(self) -> Self;
}

impl ForTest for Flags {
    fn with_b_ran_for_test(mut self) -> Self {
        self.b_ran = true;
        self
    }
}
