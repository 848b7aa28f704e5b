//! The HTTP harness over a real socket, driven by a real HTTP client.
#![allow(clippy::unwrap_used, clippy::panic, missing_docs)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use openarmature_core::vocab::llm::{LlmDeltaKind, LlmTokenEvent};
use openarmature_graph::session::{InMemorySessionStore, SessionConfig};
use openarmature_graph::suspension::{suspend, SignalDescriptor};
use openarmature_graph::{
    observer_fn, state, CompiledGraph, GraphBuilder, NodeCtx, ObserverEvent, Registration, Target,
    END,
};
use openarmature_harness::Harness;
use openarmature_harness_chat::ChatHarness;
use openarmature_harness_http::{chat_router, serve, workflow_router, Limits, Shutdown};
use openarmature_llm::Message;
use serde_json::{json, Value};

state! {
    /// A conversation.
    #[derive(Default)]
    pub struct Chat => ChatUpdate {
        /// History.
        pub messages: Vec<Message> => append,
        /// Set by the approval callback.
        pub approved: bool,
    }
}

state! {
    /// A one-number workflow.
    #[derive(Default)]
    pub struct Calc => CalcUpdate { pub n: i64 }
}

struct Server {
    base: String,
    shutdown: Shutdown,
    done: tokio::task::JoinHandle<std::io::Result<()>>,
}

async fn start(router: axum::Router, shutdown: Shutdown) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let done = tokio::spawn(serve(listener, router, shutdown.clone()));
    Server {
        base,
        shutdown,
        done,
    }
}

/// A turn whose message is "hold" adds a permit here when its node starts...
static HOLD_ENTERED: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);
/// ...and waits for one here before it goes on.
static HOLD_RELEASE: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);

/// Replies "seen N" (N user messages so far) after `delay`, streaming two tokens;
/// a message containing "approve" instead asks and suspends until approved; a
/// message "hold" waits for `HOLD_RELEASE` first.
fn chat_graph(delay: Duration, peak: Arc<AtomicUsize>) -> CompiledGraph<Chat> {
    let running = Arc::new(AtomicUsize::new(0));
    GraphBuilder::new(Chat::default())
        .add_node("reply", move |s: Arc<Chat>, ctx: NodeCtx| {
            let (running, peak) = (Arc::clone(&running), Arc::clone(&peak));
            async move {
                if s.messages
                    .last()
                    .is_some_and(|m| m.to_json()["content"] == "hold")
                {
                    HOLD_ENTERED.add_permits(1);
                    HOLD_RELEASE.acquire().await.unwrap().forget();
                }
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(delay).await;
                running.fetch_sub(1, Ordering::SeqCst);
                let last = s
                    .messages
                    .last()
                    .and_then(|m| m.to_json()["content"].as_str().map(str::to_owned));
                if last.as_deref().is_some_and(|t| t.contains("approve")) {
                    return Ok(ChatUpdate::default().messages(vec![Message::assistant("Approve?")]));
                }
                for (i, piece) in ["seen ", "it"].iter().enumerate() {
                    let e = LlmTokenEvent::new(
                        ctx.call_site(),
                        "test",
                        "m",
                        "c",
                        i as u32,
                        LlmDeltaKind::Content,
                        *piece,
                    );
                    ctx.dispatch_event(ObserverEvent::LlmToken(e));
                }
                let users = s.messages.iter().filter(|m| m.role() == "user").count();
                Ok(ChatUpdate::default()
                    .messages(vec![Message::assistant(format!("seen {users}"))]))
            }
        })
        .add_node("gate", |_s: Arc<Chat>, _c: NodeCtx| async move {
            suspend::<ChatUpdate>(SignalDescriptor::new("approval"))
        })
        .add_node("act", |s: Arc<Chat>, _c: NodeCtx| async move {
            let slowly = s
                .messages
                .iter()
                .any(|m| m.to_json()["content"] == "please approve slowly");
            if slowly {
                tokio::time::sleep(Duration::from_millis(400)).await;
            }
            let text = if s.approved { "Done." } else { "Denied." };
            Ok(ChatUpdate::default().messages(vec![Message::assistant(text)]))
        })
        .add_conditional_edge(
            "reply",
            |s: &Chat| {
                let asked = s
                    .messages
                    .last()
                    .is_some_and(|m| m.to_json()["content"] == "Approve?");
                Ok(if asked {
                    Target::Node("gate".into())
                } else {
                    END
                })
            },
            None,
        )
        .add_edge("gate", "act")
        .add_edge("act", END)
        .entry("reply")
        .sessions(SessionConfig::new(Arc::new(InMemorySessionStore::new())))
        .compile()
        .unwrap()
}

async fn chat_server(delay: Duration, limits: Limits) -> (Server, Arc<AtomicUsize>) {
    let peak = Arc::new(AtomicUsize::new(0));
    let chat = ChatHarness::new(chat_graph(delay, Arc::clone(&peak))).unwrap();
    let shutdown = Shutdown::new();
    (
        start(chat_router(chat, limits, shutdown.clone()), shutdown).await,
        peak,
    )
}

async fn post(
    client: &reqwest::Client,
    url: String,
    body: impl Into<reqwest::Body>,
) -> (u16, Value) {
    let r = client
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

fn user(text: &str) -> String {
    json!({"role": "user", "content": text}).to_string()
}

#[tokio::test]
async fn a_stateless_request_runs_the_workflow_once() {
    let graph = GraphBuilder::new(Calc::default())
        .add_node("double", |s: Arc<Calc>, _c: NodeCtx| async move {
            Ok(CalcUpdate::default().n(s.n * 2))
        })
        .add_edge("double", END)
        .entry("double")
        .compile()
        .unwrap();
    let harness = Harness::stateless(graph, |p: &Value| {
        Ok(Calc {
            n: p["n"].as_i64().ok_or("`n` must be an integer")?,
        })
    });
    let shutdown = Shutdown::new();
    let server = start(
        workflow_router(harness, Limits::default(), shutdown.clone()),
        shutdown,
    )
    .await;
    let client = reqwest::Client::new();
    let (status, body) = post(&client, format!("{}/invoke", server.base), r#"{"n": 21}"#).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["shape"], "completion_response");
    assert_eq!(body["payload"]["n"], 42);
    let (status, body) = post(&client, format!("{}/invoke", server.base), r#"{"n": "x"}"#).await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["payload"]["bucket"], "user_correctable");
}

#[tokio::test]
async fn a_two_turn_chat_keeps_its_history() {
    let (server, _) = chat_server(Duration::ZERO, Limits::default()).await;
    let client = reqwest::Client::new();
    let url = format!("{}/chat/c1/messages", server.base);
    let (status, first) = post(&client, url.clone(), user("hi")).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["dispatch_path"], "3.1");
    assert_eq!(
        first["replies"],
        json!([{"role": "assistant", "content": "seen 1"}])
    );
    let (_, second) = post(&client, url, user("again")).await;
    assert_eq!(second["dispatch_path"], "3.2");
    assert_eq!(second["replies"][0]["content"], "seen 2");
    assert_eq!(
        second["final_state"]["messages"].as_array().unwrap().len(),
        4
    );
}

/// Reads an SSE response until an event named `name` arrives; returns its data.
async fn next_event(resp: &mut reqwest::Response, buf: &mut String, name: &str) -> Value {
    loop {
        if let Some(at) = buf.find(&format!("event: {name}\n")) {
            let rest = &buf[at..];
            if let Some(end) = rest.find("\n\n") {
                let block = rest[..end].to_owned();
                *buf = rest[end + 2..].to_owned();
                let data = block
                    .lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .unwrap();
                return serde_json::from_str(data).unwrap();
            }
        }
        let chunk = tokio::time::timeout(Duration::from_secs(10), resp.chunk())
            .await
            .unwrap()
            .unwrap();
        buf.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
    }
}

#[tokio::test]
async fn a_suspended_turn_is_resumed_by_the_callback_from_a_second_client() {
    let (server, _) = chat_server(Duration::ZERO, Limits::default()).await;
    let (alice, operator) = (reqwest::Client::new(), reqwest::Client::new());
    let mut events = alice
        .get(format!("{}/chat/s/events", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), 200);
    let (status, paused) = post(
        &alice,
        format!("{}/chat/s/messages", server.base),
        user("please approve"),
    )
    .await;
    assert_eq!(status, 202, "{paused}");
    assert_eq!(
        paused["pending_messages"],
        json!([{"role": "assistant", "content": "Approve?"}])
    );
    let id = paused["invocation_id"].as_str().unwrap();

    let (status, done) = post(
        &operator,
        format!("{}/callback/{id}", server.base),
        r#"{"approved": true}"#,
    )
    .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["dispatch_path"], "3.3");
    assert_eq!(
        done["replies"],
        json!([{"role": "assistant", "content": "Done."}])
    );
    // The listener stream of the first client received the same resumed turn.
    let mut buf = String::new();
    let heard = next_event(&mut events, &mut buf, "turn").await;
    assert_eq!(heard, done);
    // The same callback again finds nothing to resume.
    let (status, again) = post(
        &operator,
        format!("{}/callback/{id}", server.base),
        r#"{"approved": true}"#,
    )
    .await;
    assert_eq!(status, 404, "{again}");
    assert_eq!(again["error_category"], "harness_signal_correlation_failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callback_past_the_turn_timeout_still_finishes_the_resumed_turn() {
    // The resumed run takes 400 ms, the turn timeout is 100 ms: the callback answers
    // 504, and the resume (whose paused record is already claimed) goes on to its end
    // instead of being dropped half-way; the session's listener hears it.
    let limits = Limits::default().turn_timeout(Duration::from_millis(100));
    let (server, _) = chat_server(Duration::ZERO, limits).await;
    let client = reqwest::Client::new();
    let mut events = client
        .get(format!("{}/chat/slow/events", server.base))
        .send()
        .await
        .unwrap();
    let (status, paused) = post(
        &client,
        format!("{}/chat/slow/messages", server.base),
        user("please approve slowly"),
    )
    .await;
    assert_eq!(status, 202, "{paused}");
    let id = paused["invocation_id"].as_str().unwrap();
    let (status, late) = post(
        &client,
        format!("{}/callback/{id}", server.base),
        r#"{"approved": true}"#,
    )
    .await;
    assert_eq!(status, 504, "{late}");
    assert_eq!(late["error"]["category"], "turn_timeout");
    let mut buf = String::new();
    let heard = next_event(&mut events, &mut buf, "turn").await;
    assert_eq!(heard["outcome"], "completed", "{heard}");
    assert_eq!(heard["replies"][0]["content"], "Done.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sends_on_one_session_are_serialized() {
    let (server, peak) = chat_server(Duration::from_millis(40), Limits::default()).await;
    let client = reqwest::Client::new();
    let sends = (0..4).map(|i| {
        let (client, url) = (
            client.clone(),
            format!("{}/chat/busy/messages", server.base),
        );
        tokio::spawn(async move { post(&client, url, user(&format!("m{i}"))).await })
    });
    let mut seen = Vec::new();
    for s in sends {
        let (status, body) = s.await.unwrap();
        assert_eq!(status, 200, "{body}");
        seen.push(body["replies"][0]["content"].as_str().unwrap().to_owned());
    }
    seen.sort();
    assert_eq!(seen, ["seen 1", "seen 2", "seen 3", "seen 4"]);
    assert_eq!(peak.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn bad_input_gets_a_typed_4xx_and_loses_nothing() {
    let (server, _) = chat_server(Duration::ZERO, Limits::default().max_body_bytes(1024)).await;
    let client = reqwest::Client::new();
    let url = format!("{}/chat/b/messages", server.base);
    post(&client, url.clone(), user("kept")).await;
    let huge = user(&"x".repeat(4096));
    let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
    for (body, status, category) in [
        (huge, 413, "request_body_too_large"),
        ("{not json".to_owned(), 400, "request_json_malformed"),
        (deep, 400, "request_json_malformed"),
        (
            r#"{"role": "tool", "content": "x"}"#.to_owned(),
            422,
            "chat_message_shape_invalid",
        ),
        (
            r#"{"role": "user", "content": ""}"#.to_owned(),
            422,
            "chat_message_shape_invalid",
        ),
    ] {
        let (got, reply) = post(&client, url.clone(), body).await;
        assert_eq!(got, status, "{reply}");
        let c = reply["error"]["category"]
            .as_str()
            .or(reply["error_category"].as_str());
        assert_eq!(c, Some(category), "{reply}");
    }
    let r = client
        .post(url.clone())
        .body(vec![0xff, 0xfe, b'{'])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let (status, unknown) = post(&client, format!("{}/callback/nope", server.base), "{}").await;
    assert_eq!(status, 404, "{unknown}");
    assert_eq!(
        unknown["error_category"],
        "harness_signal_correlation_failed"
    );
    // Nothing accepted was lost: the history holds the first turn and this one.
    let (_, ok) = post(&client, url, user("still here")).await;
    let history: Vec<&str> = ok["final_state"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(history, ["kept", "seen 1", "still here", "seen 2"]);
}

#[tokio::test]
async fn a_streamed_turn_sends_its_tokens_then_the_outcome() {
    let (server, _) = chat_server(Duration::ZERO, Limits::default()).await;
    let client = reqwest::Client::new();
    let mut resp = client
        .post(format!("{}/chat/st/messages/stream", server.base))
        .body(user("hi"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut buf = String::new();
    let first = next_event(&mut resp, &mut buf, "token").await;
    assert_eq!(first, json!({"kind": "content", "text": "seen "}));
    let turn = next_event(&mut resp, &mut buf, "turn").await;
    assert_eq!(turn["replies"][0]["content"], "seen 1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_turn_ends_without_waiting_for_another_sessions_turn() {
    let (server, _) = chat_server(Duration::ZERO, Limits::default()).await;
    let client = reqwest::Client::new();
    let stream = |session: &str, text: &str| {
        client
            .post(format!("{}/chat/{session}/messages/stream", server.base))
            .body(user(text))
            .send()
    };
    // Session `held`'s turn is running (its events have a listener) and waits.
    let mut held = stream("held", "hold").await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), HOLD_ENTERED.acquire())
        .await
        .unwrap_or_else(|_| panic!("the held turn never started"))
        .unwrap()
        .forget();
    // Another session's streamed turn ends with its own events, not everyone's.
    let mut quick = stream("quick", "hi").await.unwrap();
    let mut buf = String::new();
    assert_eq!(
        next_event(&mut quick, &mut buf, "token").await,
        json!({"kind": "content", "text": "seen "})
    );
    let turn = next_event(&mut quick, &mut buf, "turn").await;
    assert_eq!(turn["replies"][0]["content"], "seen 1");
    // The held turn then finishes as usual.
    HOLD_RELEASE.add_permits(1);
    let mut buf = String::new();
    let turn = next_event(&mut held, &mut buf, "turn").await;
    assert_eq!(turn["replies"][0]["content"], "seen 1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_turn_ends_within_the_turn_timeout_when_an_observer_hangs() {
    // A graph-attached observer that never returns from the first token holds that
    // invocation's delivery (observers are served in order): the turn's tokens never
    // reach the stream, and its outcome is sent once the turn timeout is spent.
    let graph = chat_graph(Duration::ZERO, Arc::new(AtomicUsize::new(0)));
    graph.attach_observer(Registration::new(
        "stuck",
        observer_fn(|e: Arc<ObserverEvent>| async move {
            if matches!(&*e, ObserverEvent::LlmToken(_)) {
                std::future::pending::<()>().await;
            }
            Ok(())
        }),
    ));
    let shutdown = Shutdown::new();
    let limits = Limits::default().turn_timeout(Duration::from_millis(200));
    let chat = ChatHarness::new(graph).unwrap();
    let server = start(chat_router(chat, limits, shutdown.clone()), shutdown).await;
    let mut resp = reqwest::Client::new()
        .post(format!("{}/chat/h/messages/stream", server.base))
        .body(user("hi"))
        .send()
        .await
        .unwrap();
    let mut buf = String::new();
    let turn = next_event(&mut resp, &mut buf, "turn").await;
    assert_eq!(turn["replies"][0]["content"], "seen 1");
    assert!(!buf.contains("event: token"), "{buf}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_the_turn_in_flight_and_refuses_new_ones() {
    let (server, _) = chat_server(Duration::from_millis(300), Limits::default()).await;
    let client = reqwest::Client::new();
    let url = format!("{}/chat/g/messages", server.base);
    let in_flight = tokio::spawn({
        let (client, url) = (client.clone(), url.clone());
        async move { post(&client, url, user("slow")).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.shutdown.trigger();
    let (status, body) = in_flight.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["replies"][0]["content"], "seen 1");
    tokio::time::timeout(Duration::from_secs(10), server.done)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        client.post(url).body(user("late")).send().await.is_err(),
        "the server still accepts"
    );
}

#[tokio::test]
async fn a_turn_past_its_timeout_is_a_504() {
    let limits = Limits::default().turn_timeout(Duration::from_millis(50));
    let (server, _) = chat_server(Duration::from_millis(500), limits).await;
    let (status, body) = post(
        &reqwest::Client::new(),
        format!("{}/chat/t/messages", server.base),
        user("hi"),
    )
    .await;
    assert_eq!(status, 504, "{body}");
    assert_eq!(body["error"]["category"], "turn_timeout");
}
