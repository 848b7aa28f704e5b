//! An LLM attempt span is stamped from the attempt event's own time (`at`), not from
//! when the observer got to it: a slow observer ahead in the serial queue must not
//! stretch the span.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use openarmature_core::vocab::llm::LlmUsage;
use openarmature_graph::{observer_fn, InvokeOptions, NodeCtx, ObserverEvent, Registration};
use openarmature_observability::attributes as a;
use openarmature_observability::OtelObserver;

use crate::support::single_node;
use crate::support::{reply, report_completed, request, span_capture, Doc, DocUpdate};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_observer_does_not_move_the_llm_span_end() {
    let (exporter, provider) = span_capture();
    let dispatched: Arc<Mutex<Option<SystemTime>>> = Arc::default();
    let mark = Arc::clone(&dispatched);
    let graph = single_node::<Doc>("ask", move |_s: Arc<Doc>, ctx: NodeCtx| {
        let mark = Arc::clone(&mark);
        async move {
            let response = reply(LlmUsage::default(), "stop");
            report_completed(&ctx, request("call-1"), response, 5.0);
            *mark.lock().unwrap() = Some(SystemTime::now());
            Ok(DocUpdate::default().done(true))
        }
    });
    // Graph-attached observers are delivered first: this one holds the queue.
    graph.attach_observer(Registration::new(
        "slow",
        observer_fn(|e: Arc<ObserverEvent>| async move {
            if matches!(*e, ObserverEvent::LlmAttempt(_)) {
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            Ok(())
        }),
    ));
    let otel = OtelObserver::builder(&provider).build();
    otel.invoke(&graph, Doc::default(), InvokeOptions::default())
        .await
        .unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let llm = spans.iter().find(|s| s.name == a::LLM_SPAN).unwrap();
    let dispatched = dispatched.lock().unwrap().unwrap();
    let late = llm.end_time.duration_since(dispatched).unwrap_or_default();
    assert!(
        late < Duration::from_millis(150),
        "span ended {late:?} after the attempt was reported"
    );
    assert!(llm.start_time <= llm.end_time);
}
