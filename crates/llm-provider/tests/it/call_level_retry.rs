//! llm-provider §7.1 call-level retry over real HTTP, and the graph-engine §6 typed
//! events a call inside a node dispatches.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use openarmature_core::vocab::llm::LlmAttemptOutcome;
use openarmature_graph::{
    category_of, state, GraphBuilder, InvokeOptions, NodeCtx, ObserverEvent, END,
};
use openarmature_llm::{
    AttemptRecord, CompletionRequest, ErrorCategory, LlmError, LlmRetryConfig, Message,
    OpenAiProvider, Provider, RetryReason, RuntimeConfig, StructuredOutputInvalid,
};
use openarmature_pipeline::retry::{Constant, RetryConfig, Sleeper};
use openarmature_pipeline::RetryMiddleware;
use serde_json::{json, Value};

use crate::support::{completion, Step};

fn down(message: &str) -> Step {
    Step::json(
        503,
        json!({"error": {"type": "service_unavailable", "message": message}}),
    )
}

#[derive(Clone, Default)]
struct Sleeps(Arc<Mutex<Vec<Duration>>>);

impl Sleeper for Sleeps {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        self.0.lock().unwrap().push(duration);
        Box::pin(async {})
    }
}

fn retry(max: u32, sleeps: &Sleeps) -> RetryConfig {
    RetryConfig::default()
        .max_attempts(max)
        .backoff(Constant(Duration::from_millis(3)))
        .sleeper(sleeps.clone())
}

type Log = Arc<Mutex<Vec<(u32, Option<RetryReason>, Option<ErrorCategory>, usize)>>>;

fn recording(request: CompletionRequest) -> (CompletionRequest, Log) {
    let log: Log = Arc::default();
    let sink = Arc::clone(&log);
    let request = request.on_attempt(move |r: &AttemptRecord<'_>| {
        sink.lock().unwrap().push((
            r.attempt_index,
            r.retry_reason,
            r.outcome.err().map(|e| e.category()),
            r.messages.len(),
        ));
    });
    (request, log)
}

use crate::support::openai as provider;

fn person_schema() -> Value {
    json!({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
           "required": ["name", "age"], "additionalProperties": false})
}

#[tokio::test]
async fn without_retry_a_transient_error_is_sent_once() {
    let (server, p) = provider(vec![down("down"), Step::json(200, completion("ok"))]).await;
    let e = p
        .complete(&CompletionRequest::new(vec![Message::user("go")]))
        .await
        .unwrap_err();
    assert_eq!(e.category(), ErrorCategory::ProviderUnavailable);
    assert_eq!(
        server.request_count(),
        1,
        "providers never retry on their own"
    );
}

#[tokio::test]
async fn a_zero_backoff_retries_without_the_sleeper() {
    // Issue 19: a zero delay must not take a timer round trip; the sleeper would be it.
    let sleeps = Sleeps::default();
    let config = RetryConfig::default()
        .max_attempts(3)
        .backoff(Constant(Duration::ZERO))
        .sleeper(sleeps.clone());
    let (server, p) = provider(vec![
        down("d0"),
        down("d1"),
        Step::json(200, completion("ok")),
    ])
    .await;
    let request = CompletionRequest::new(vec![Message::user("go")]).retry(config);
    let response = p.complete(&request).await.unwrap();
    assert_eq!(response.content(), Some("ok"));
    assert_eq!(server.request_count(), 3);
    assert!(
        sleeps.0.lock().unwrap().is_empty(),
        "no sleep for a zero delay"
    );
}

#[tokio::test]
async fn the_same_record_as_retry_middleware_retries_transients() {
    let sleeps = Sleeps::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen_in = Arc::clone(&seen);
    let config =
        retry(3, &sleeps).on_retry(move |e: Arc<dyn std::error::Error + Send + Sync>, i| {
            let seen = Arc::clone(&seen_in);
            async move {
                // The engine's view: a categorized error carrying the typed one.
                let category = category_of(&*e).map(|c| c.as_str().to_owned());
                let typed = LlmError::find_in(&*e).map(|l| l.to_string());
                seen.lock().unwrap().push((i, category, typed));
            }
        });
    // RetryMiddleware takes the same record.
    let _node_level = RetryMiddleware::new(config.clone());
    let (server, p) = provider(vec![
        down("d0"),
        down("d1"),
        Step::json(200, completion("ok")),
    ])
    .await;
    let (request, log) = recording(CompletionRequest::new(vec![Message::user("go")]).retry(config));
    let response = p.complete(&request).await.unwrap();
    assert_eq!(response.content(), Some("ok"));
    assert_eq!(server.request_count(), 3);
    assert_eq!(
        *log.lock().unwrap(),
        vec![
            (0, None, Some(ErrorCategory::ProviderUnavailable), 1),
            (
                1,
                Some(RetryReason::Transient),
                Some(ErrorCategory::ProviderUnavailable),
                1
            ),
            (2, Some(RetryReason::Transient), None, 1),
        ]
    );
    assert_eq!(*sleeps.0.lock().unwrap(), vec![Duration::from_millis(3); 2]);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[0],
        (0, Some("provider_unavailable".into()), Some("d0".into()))
    );
}

#[tokio::test]
async fn non_transient_and_exhaustion_stop_the_loop() {
    let sleeps = Sleeps::default();
    let (server, p) = provider(vec![
        Step::json(400, json!({"error": {"message": "bad"}})),
        down("x"),
    ])
    .await;
    let request = CompletionRequest::new(vec![Message::user("go")]).retry(retry(3, &sleeps));
    let e = p.complete(&request).await.unwrap_err();
    assert_eq!(
        (e.category(), e.to_string().as_str()),
        (ErrorCategory::ProviderInvalidRequest, "bad")
    );
    assert_eq!(server.request_count(), 1);
    assert!(sleeps.0.lock().unwrap().is_empty());

    let (server, p) = provider(vec![down("one"), down("two")]).await;
    let request = CompletionRequest::new(vec![Message::user("go")]).retry(retry(2, &sleeps));
    let e = p.complete(&request).await.unwrap_err();
    assert_eq!(e.to_string(), "two", "the final error propagates");
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn override_schedule_applies_to_retries_and_carries_forward() {
    let sleeps = Sleeps::default();
    let (server, p) = provider(vec![
        down("a"),
        down("b"),
        down("c"),
        Step::json(200, completion("ok")),
    ])
    .await;
    let base = RuntimeConfig::default().temperature(0.0).max_tokens(9);
    let request = CompletionRequest::new(vec![Message::user("go")])
        .config(base.clone())
        .retry(
            LlmRetryConfig::from(retry(4, &sleeps)).per_attempt_override(vec![
                RuntimeConfig::default().temperature(0.3),
                RuntimeConfig::default().temperature(0.6),
            ]),
        );
    p.complete(&request).await.unwrap();
    let temps: Vec<Value> = server
        .bodies()
        .iter()
        .map(|b| b["temperature"].clone())
        .collect();
    assert_eq!(temps, vec![json!(0.0), json!(0.3), json!(0.6), json!(0.6)]);
    assert!(server.bodies().iter().all(|b| b["max_tokens"] == json!(9)));
    assert_eq!(request.config, base, "the caller's config is untouched");
}

#[tokio::test]
async fn reask_appends_pairs_and_never_builds_on_the_terminal_attempt() {
    let sleeps = Sleeps::default();
    let built = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&built);
    let (server, p) = provider(vec![
        Step::json(200, completion(r#"{"name":"A"}"#)),
        down("blip"),
        Step::json(200, completion(r#"{"name":"A","age":"x"}"#)),
    ])
    .await;
    let messages = vec![Message::user("person")];
    let (request, log) = recording(
        CompletionRequest::new(messages.clone())
            .response_schema(person_schema())
            .retry(LlmRetryConfig::from(retry(3, &sleeps)).reask(
                move |f: &StructuredOutputInvalid| {
                    counter.fetch_add(1, Ordering::SeqCst);
                    format!("fix: {}", f.output_content)
                },
            )),
    );
    let e = p.complete(&request).await.unwrap_err();
    let surface = e.structured_output().expect("structured_output_invalid");
    assert_eq!(surface.output_content, r#"{"name":"A","age":"x"}"#);
    assert!(
        surface.error_message.contains("/age"),
        "{}",
        surface.error_message
    );
    assert_eq!(surface.usage.total_tokens, Some(4));
    assert_eq!(
        built.load(Ordering::SeqCst),
        1,
        "no builder call after the last attempt"
    );
    assert_eq!(
        *log.lock().unwrap(),
        vec![
            (0, None, Some(ErrorCategory::StructuredOutputInvalid), 1),
            (
                1,
                Some(RetryReason::Reask),
                Some(ErrorCategory::ProviderUnavailable),
                3
            ),
            (
                2,
                Some(RetryReason::Transient),
                Some(ErrorCategory::StructuredOutputInvalid),
                3
            ),
        ]
    );
    let bodies = server.bodies();
    assert_eq!(
        bodies[1]["messages"], bodies[2]["messages"],
        "a transient retry appends nothing"
    );
    assert_eq!(
        bodies[1]["messages"][1],
        json!({"role": "assistant", "content": r#"{"name":"A"}"#})
    );
    assert_eq!(
        bodies[1]["messages"][2],
        json!({"role": "user", "content": r#"fix: {"name":"A"}"#})
    );
    assert_eq!(
        request.messages, messages,
        "the caller's messages are untouched"
    );
}

state! {
    /// A node's state for the integration tests.
    #[derive(Default, PartialEq)]
    pub struct S => SUpdate {
        /// The model's answer.
        pub answer: String,
    }
}

use crate::support::{recorder, Recorded};

/// Runs `graph` once with a recording observer and drains it: the answer and the
/// events delivered.
async fn run_recorded(graph: &openarmature_graph::CompiledGraph<S>) -> (String, Recorded) {
    let (reg, events) = recorder();
    let out = graph
        .invoke_with(S::default(), InvokeOptions::default().observer(reg))
        .await
        .unwrap();
    graph.drain(None).await;
    (out.state.answer.clone(), events)
}

fn asking_graph(
    p: OpenAiProvider,
    call_retry: Option<RetryConfig>,
    node_retry: Option<RetryConfig>,
) -> openarmature_graph::CompiledGraph<S> {
    let p = Arc::new(p);
    let mut builder = GraphBuilder::new(S::default())
        .add_node("ask", move |_s: Arc<S>, ctx: NodeCtx| {
            let p = Arc::clone(&p);
            let call_retry = call_retry.clone();
            async move {
                let mut request = CompletionRequest::new(vec![Message::user("hi")]).in_node(&ctx);
                if let Some(r) = call_retry {
                    request = request.retry(r);
                }
                let response = p.complete(&request).await?;
                Ok(SUpdate::default().answer(response.content().unwrap_or_default().to_owned()))
            }
        })
        .add_edge("ask", END)
        .entry("ask");
    if let Some(r) = node_retry {
        builder = builder.node_middleware("ask", Arc::new(RetryMiddleware::new(r)));
    }
    builder.compile().unwrap()
}

#[tokio::test]
async fn a_call_in_a_node_dispatches_attempt_and_terminal_events() {
    let sleeps = Sleeps::default();
    let (_server, p) = provider(vec![down("d0"), Step::json(200, completion("hello"))]).await;
    let graph = asking_graph(p, Some(retry(2, &sleeps)), None);
    let (answer, events) = run_recorded(&graph).await;
    assert_eq!(answer, "hello");
    let events = events.lock().unwrap();
    let llm: Vec<&ObserverEvent> = events
        .iter()
        .map(|e| &**e)
        .filter(|e| !matches!(e, ObserverEvent::Node(_)))
        .collect();
    assert_eq!(llm.len(), 3, "{llm:#?}");
    let (
        ObserverEvent::LlmAttempt(a0),
        ObserverEvent::LlmAttempt(a1),
        ObserverEvent::LlmCompletion(done),
    ) = (llm[0], llm[1], llm[2])
    else {
        panic!("unexpected order: {llm:#?}");
    };
    assert_eq!((a0.attempt_index, a0.retry_reason), (0, None));
    assert!(
        matches!(&a0.outcome, LlmAttemptOutcome::Failed { failure, .. } if failure.error_category == "provider_unavailable" && failure.error_type.as_deref() == Some("service_unavailable") && failure.retry_after.is_none())
    );
    assert_eq!(
        (a1.attempt_index, a1.retry_reason),
        (1, Some(RetryReason::Transient))
    );
    assert_eq!(a0.request.call_id, done.request.call_id);
    assert_eq!(&*done.site.node_name, "ask");
    assert_eq!(done.site.lineage.attempt_index, 0, "node-level index");
    assert_eq!(&*done.request.model, "gpt-test");
    assert_eq!(done.response.output_content.as_deref(), Some("hello"));
    assert_eq!(done.response.usage.total_tokens, Some(4));
    // The node's completed event comes after the LLM events.
    let last = events.last().unwrap();
    assert!(matches!(&**last, ObserverEvent::Node(n) if n.node_name.as_ref() == "ask"));
}

#[tokio::test]
async fn node_level_retry_classifies_llm_errors_through_the_bridge() {
    let sleeps = Sleeps::default();
    let rate_limited = Step::Respond {
        status: 429,
        headers: vec![("Retry-After".into(), "1".into())],
        body: br#"{"error": {"message": "slow down"}}"#.to_vec(),
    };
    let (server, p) = provider(vec![rate_limited, Step::json(200, completion("hi"))]).await;
    let graph = asking_graph(p, None, Some(retry(2, &sleeps)));
    let (answer, events) = run_recorded(&graph).await;
    assert_eq!(answer, "hi");
    assert_eq!(server.request_count(), 2);
    let failed = events
        .lock()
        .unwrap()
        .iter()
        .filter(|e| matches!(&***e, ObserverEvent::LlmFailed(f) if f.failure.error_category == "provider_rate_limit"))
        .count();
    assert_eq!(
        failed, 1,
        "one terminal failure event for the first node attempt"
    );
    // The events carry the wait the provider asked for.
    let asked: Vec<Option<Duration>> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match &**e {
            ObserverEvent::LlmAttempt(a) => match &a.outcome {
                LlmAttemptOutcome::Failed { failure, .. } => Some(failure.retry_after),
                _ => None,
            },
            ObserverEvent::LlmFailed(f) => Some(f.failure.retry_after),
            _ => None,
        })
        .collect();
    assert_eq!(asked, [Some(Duration::from_secs(1)); 2]);
}

#[tokio::test]
async fn a_failed_call_surfaces_its_category_on_the_graph_error() {
    let (_server, p) = provider(vec![Step::json(
        401,
        json!({"error": {"message": "bad key"}}),
    )])
    .await;
    let graph = asking_graph(p, None, None);
    let err = graph.invoke(S::default()).await.unwrap_err();
    let classified = openarmature_pipeline::classify(err.cause());
    assert_eq!(
        classified.category.as_deref(),
        Some("provider_authentication")
    );
    assert_eq!(err.original_message(), "bad key");
}

#[tokio::test]
async fn a_bare_question_mark_keeps_the_llm_category_for_node_retry() {
    let sleeps = Sleeps::default();
    let (server, p) = provider(vec![down("d0"), Step::json(200, completion("hi"))]).await;
    let p = Arc::new(p);
    let graph = GraphBuilder::new(S::default())
        .add_node("ask", move |_s: Arc<S>, _ctx: NodeCtx| {
            let p = Arc::clone(&p);
            async move {
                let request = CompletionRequest::new(vec![Message::user("hi")]);
                // No bridge: the boxed LlmError is recognised by the registered probe.
                let response = p.complete(&request).await?;
                Ok(SUpdate::default().answer(response.content().unwrap_or_default().to_owned()))
            }
        })
        .node_middleware("ask", Arc::new(RetryMiddleware::new(retry(2, &sleeps))))
        .add_edge("ask", END)
        .entry("ask")
        .compile()
        .unwrap();
    let out = graph.invoke(S::default()).await.unwrap();
    assert_eq!(out.answer, "hi");
    assert_eq!(
        server.request_count(),
        2,
        "the default classifier retried it"
    );
}

#[tokio::test]
async fn a_call_without_in_node_reports_to_the_running_node() {
    let sleeps = Sleeps::default();
    let (_server, p) = provider(vec![down("d0"), Step::json(200, completion("hello"))]).await;
    let p = Arc::new(p);
    let call_retry = retry(2, &sleeps);
    let graph = GraphBuilder::new(S::default())
        .add_node("ask", move |_s: Arc<S>, _ctx: NodeCtx| {
            let (p, call_retry) = (Arc::clone(&p), call_retry.clone());
            async move {
                // No `.in_node(&ctx)`: the engine's ambient context is picked up.
                let request = CompletionRequest::new(vec![Message::user("hi")]).retry(call_retry);
                let response = p.complete(&request).await?;
                Ok(SUpdate::default().answer(response.content().unwrap_or_default().to_owned()))
            }
        })
        // Registered by value: no `Arc::new` around the middleware.
        .node_middleware(
            "ask",
            RetryMiddleware::new(RetryConfig::default().max_attempts(1)),
        )
        .add_edge("ask", END)
        .entry("ask")
        .compile()
        .unwrap();
    let (answer, events) = run_recorded(&graph).await;
    assert_eq!(answer, "hello");
    let events = events.lock().unwrap();
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|e| match &**e {
            ObserverEvent::LlmAttempt(_) => Some("attempt"),
            ObserverEvent::LlmCompletion(c) => {
                assert_eq!(&*c.site.node_name, "ask");
                Some("completion")
            }
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["attempt", "attempt", "completion"]);
    // Outside any node there is no ambient context: the same call emits nothing.
    assert!(openarmature_graph::current_node().is_none());
}
