//! Cancellation by dropping the `invoke` future, and §5 determinism.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openarmature_graph::{state, GraphBuilder, InvokeOptions, NodeCtx, NodeError, Target, END};
use serde_json::Value;

use crate::observe::{collector, event_json};

state! {
    /// A looping counter.
    #[derive(Default, PartialEq)]
    pub struct Loop => LoopUpdate {
        /// Iterations so far.
        pub n: i64,
        /// Visited nodes.
        pub log: Vec<String> => append,
        /// Recent values.
        pub recent: Vec<i64> => bounded_append(2),
    }
}

#[tokio::test(start_paused = true)]
async fn dropping_the_invoke_future_stops_the_run() {
    let b_finished = Arc::new(AtomicUsize::new(0));
    let c_ran = Arc::new(AtomicUsize::new(0));
    let (bf, cr) = (Arc::clone(&b_finished), Arc::clone(&c_ran));
    let events = Arc::new(Mutex::new(Vec::new()));
    let graph = GraphBuilder::new(Loop::default())
        .add_node("a", |_s: Arc<Loop>, _c: NodeCtx| async move {
            Ok(LoopUpdate::default().log(vec!["a".into()]))
        })
        .add_node("b", move |_s: Arc<Loop>, _c: NodeCtx| {
            let bf = Arc::clone(&bf);
            async move {
                tokio::time::sleep(Duration::from_secs(10)).await;
                bf.fetch_add(1, Ordering::SeqCst);
                Ok(LoopUpdate::default().log(vec!["b".into()]))
            }
        })
        .add_node("c", move |_s: Arc<Loop>, _c: NodeCtx| {
            cr.fetch_add(1, Ordering::SeqCst);
            futures::future::ready(Ok::<_, NodeError>(LoopUpdate::default()))
        })
        .add_edge("a", "b")
        .add_edge("b", "c")
        .entry("a")
        .observer(collector("collector", &events))
        .compile()
        .unwrap();

    let result = tokio::time::timeout(Duration::from_secs(1), graph.invoke(Loop::default())).await;
    assert!(
        result.is_err(),
        "the run must still be in b when the timeout fires"
    );
    // Let virtual time run well past b's sleep.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(b_finished.load(Ordering::SeqCst), 0, "b's body was dropped");
    assert_eq!(
        c_ran.load(Ordering::SeqCst),
        0,
        "no node starts after cancellation"
    );

    // The queue was closed: drain completes and has seen a's pair and b's start.
    let summary = tokio::time::timeout(Duration::from_secs(60), graph.drain(None))
        .await
        .expect("drain completes after a cancelled invocation");
    assert!(!summary.timeout_reached);
    let shape: Vec<(String, &str)> = events
        .lock()
        .unwrap()
        .iter()
        .map(|e| (e.node_name.to_string(), e.phase.as_str()))
        .collect();
    assert_eq!(
        shape,
        vec![
            ("a".to_owned(), "started"),
            ("a".to_owned(), "completed"),
            ("b".to_owned(), "started"),
        ]
    );

    // The graph is still usable.
    let out = tokio::time::timeout(Duration::from_secs(60), graph.invoke(Loop::default()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.log, vec!["a", "b"]);
    assert_eq!(c_ran.load(Ordering::SeqCst), 1);
}

fn looping_graph() -> openarmature_graph::CompiledGraph<Loop> {
    GraphBuilder::new(Loop::default())
        .add_node("tick", |s: Arc<Loop>, _c: NodeCtx| async move {
            Ok(LoopUpdate::default()
                .n(s.n + 1)
                .log(vec![format!("tick{}", s.n)])
                .recent(vec![s.n * 10]))
        })
        .add_node("odd", |s: Arc<Loop>, _c: NodeCtx| async move {
            Ok(LoopUpdate::default().log(vec![format!("odd{}", s.n)]))
        })
        .add_node("even", |s: Arc<Loop>, _c: NodeCtx| async move {
            Ok(LoopUpdate::default().log(vec![format!("even{}", s.n)]))
        })
        .add_conditional_edge(
            "tick",
            |s: &Loop| {
                Ok(if s.n >= 5 {
                    END
                } else if s.n % 2 == 1 {
                    Target::from("odd")
                } else {
                    Target::from("even")
                })
            },
            Some(vec![Target::from("odd"), Target::from("even"), END]),
        )
        .add_edge("odd", "tick")
        .add_edge("even", "tick")
        .entry("tick")
        .compile()
        .unwrap()
}

async fn run_once(graph: &openarmature_graph::CompiledGraph<Loop>) -> (Loop, Vec<Value>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let done = graph
        .invoke_with(
            Loop::default(),
            InvokeOptions::default()
                .invocation_id("fixed-id")
                .observer(collector("collector", &events)),
        )
        .await
        .unwrap();
    graph.drain_events_for(&done.invocation_id, None).await;
    let json = events.lock().unwrap().iter().map(event_json).collect();
    (done.state, json)
}

#[tokio::test(start_paused = true)]
async fn same_inputs_give_the_same_final_state_and_event_sequence() {
    let graph = looping_graph();
    let (s1, e1) = run_once(&graph).await;
    let (s2, e2) = run_once(&graph).await;
    assert_eq!(s1, s2);
    assert_eq!(e1, e2);
    // And across separately compiled copies of the same definition.
    let (s3, e3) = run_once(&looping_graph()).await;
    assert_eq!(s1, s3);
    assert_eq!(e1, e3);

    assert_eq!(s1.n, 5);
    assert_eq!(
        s1.log,
        vec!["tick0", "odd1", "tick1", "even2", "tick2", "odd3", "tick3", "even4", "tick4"]
    );
    assert_eq!(s1.recent, vec![30, 40]);
    assert_eq!(e1.len(), 2 * 9);
    let steps: Vec<u64> = e1.iter().map(|e| e["step"].as_u64().unwrap()).collect();
    let expected: Vec<u64> = (0..9).flat_map(|i| [i, i]).collect();
    assert_eq!(steps, expected);
}

#[tokio::test(start_paused = true)]
async fn minted_invocation_ids_are_distinct_and_on_every_event() {
    let graph = looping_graph();
    let events = Arc::new(Mutex::new(Vec::new()));
    graph.attach_observer(collector("collector", &events));
    let a = graph
        .invoke_with(Loop::default(), InvokeOptions::default())
        .await
        .unwrap();
    let b = graph
        .invoke_with(Loop::default(), InvokeOptions::default())
        .await
        .unwrap();
    assert_ne!(a.invocation_id, b.invocation_id);
    assert!(uuid_like(&a.invocation_id), "{}", a.invocation_id);
    graph.drain(None).await;
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 36);
    assert!(events[..18]
        .iter()
        .all(|e| *e.invocation_id == *a.invocation_id));
    assert!(events[18..]
        .iter()
        .all(|e| *e.invocation_id == *b.invocation_id));
}

fn uuid_like(s: &str) -> bool {
    s.len() == 36 && s.chars().filter(|c| *c == '-').count() == 4
}

#[tokio::test(start_paused = true)]
async fn concurrent_invocations_do_not_share_state_or_events() {
    let graph = GraphBuilder::new(Loop::default())
        .add_node("slow", |s: Arc<Loop>, _c: NodeCtx| async move {
            tokio::time::sleep(Duration::from_millis(10 * u64::try_from(s.n).unwrap())).await;
            Ok(LoopUpdate::default().log(vec![format!("slow{}", s.n)]))
        })
        .entry("slow")
        .compile()
        .unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    graph.attach_observer(collector("collector", &events));
    let runs = (1..=3).map(|n| {
        graph.invoke_with(
            Loop {
                n,
                ..Loop::default()
            },
            InvokeOptions::default().invocation_id(format!("inv{n}")),
        )
    });
    let outs = futures::future::join_all(runs).await;
    for (i, out) in outs.into_iter().enumerate() {
        let out = out.unwrap();
        assert_eq!(out.invocation_id, format!("inv{}", i + 1));
        assert_eq!(out.state.log, vec![format!("slow{}", i + 1)]);
    }
    graph.drain(None).await;
    let events = events.lock().unwrap();
    assert_eq!(events.len(), 6);
    for e in events.iter() {
        // Each invocation numbers its own steps from 0.
        assert_eq!(e.step, 0);
        let n = e.pre_state.to_json()["n"].as_i64().unwrap();
        assert_eq!(*e.invocation_id, format!("inv{n}"));
    }
}
