//! The chat harness over typed graphs: serialization, suspension, errors.
#![allow(clippy::unwrap_used, clippy::panic, missing_docs)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use openarmature_graph::session::{InMemorySessionStore, SessionConfig};
use openarmature_graph::suspension::{suspend, SignalDescriptor};
use openarmature_graph::{state, CompiledGraph, GraphBuilder, NodeCtx, NodeError, END};
use openarmature_harness::{ErrorBucket, SignalTarget};
use openarmature_harness_chat::{ChatHarness, ChatTurnOutcome};
use openarmature_llm::Message;
use serde_json::json;

state! {
    /// A conversation with an approval flag.
    #[derive(Default)]
    pub struct Chat => ChatUpdate {
        /// History.
        pub messages: Vec<Message> => append,
        /// Set by the approval signal.
        pub approved: bool,
    }
}

/// Replies with the number of user messages seen, after `delay`; tracks how many
/// turns run at once.
fn counting_graph(
    delay: Duration,
    running: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
) -> CompiledGraph<Chat> {
    GraphBuilder::new(Chat::default())
        .add_node("reply", move |s: Arc<Chat>, _c: NodeCtx| {
            let (running, peak) = (Arc::clone(&running), Arc::clone(&peak));
            async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(delay).await;
                running.fetch_sub(1, Ordering::SeqCst);
                let users = s.messages.iter().filter(|m| m.role() == "user").count();
                Ok(ChatUpdate::default()
                    .messages(vec![Message::assistant(format!("seen {users}"))]))
            }
        })
        .add_edge("reply", END)
        .entry("reply")
        .sessions(SessionConfig::new(Arc::new(InMemorySessionStore::new())))
        .compile()
        .unwrap()
}

fn replies(o: &ChatTurnOutcome) -> Vec<String> {
    let ChatTurnOutcome::Completed(c) = o else {
        panic!("not completed: {o:?}")
    };
    c.replies
        .iter()
        .map(|m| {
            m.to_json()["content"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sends_on_one_session_run_one_at_a_time() {
    let (running, peak) = (Arc::default(), Arc::new(AtomicUsize::new(0)));
    let chat = ChatHarness::new(counting_graph(
        Duration::from_millis(30),
        running,
        Arc::clone(&peak),
    ))
    .unwrap();
    let sends = (0..4).map(|i| {
        let chat = chat.clone();
        tokio::spawn(async move { chat.send("s", Message::user(format!("m{i}"))).await })
    });
    let mut seen: Vec<String> = Vec::new();
    for s in sends {
        seen.extend(replies(&s.await.unwrap()));
    }
    seen.sort();
    // Each turn saw every earlier turn's message: 1, 2, 3, 4 user messages.
    assert_eq!(seen, ["seen 1", "seen 2", "seen 3", "seen 4"]);
    assert_eq!(
        peak.load(Ordering::SeqCst),
        1,
        "turns of one session overlapped"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_on_different_sessions_run_in_parallel() {
    let (running, peak) = (Arc::default(), Arc::new(AtomicUsize::new(0)));
    let chat = ChatHarness::new(counting_graph(
        Duration::from_millis(200),
        running,
        Arc::clone(&peak),
    ))
    .unwrap();
    let (a, b) = tokio::join!(
        chat.send("a", Message::user("x")),
        chat.send("b", Message::user("y"))
    );
    assert_eq!(replies(&a), ["seen 1"]);
    assert_eq!(replies(&b), ["seen 1"]);
    assert_eq!(
        peak.load(Ordering::SeqCst),
        2,
        "different sessions were serialized"
    );
}

fn approval_graph() -> CompiledGraph<Chat> {
    approval_graph_acting_after(Duration::ZERO)
}

/// [`approval_graph`] whose `act` node takes `delay`.
fn approval_graph_acting_after(delay: Duration) -> CompiledGraph<Chat> {
    GraphBuilder::new(Chat::default())
        .add_node("ask", |_s: Arc<Chat>, _c: NodeCtx| async {
            Ok(ChatUpdate::default().messages(vec![Message::assistant("May I?")]))
        })
        .add_node("gate", |s: Arc<Chat>, _c: NodeCtx| async move {
            if s.approved {
                Ok(ChatUpdate::default())
            } else {
                suspend(SignalDescriptor::new("approve"))
            }
        })
        .add_node("act", move |_s: Arc<Chat>, _c: NodeCtx| async move {
            tokio::time::sleep(delay).await;
            Ok(ChatUpdate::default().messages(vec![Message::assistant("Done.")]))
        })
        .add_edge("ask", "gate")
        .add_edge("gate", "act")
        .add_edge("act", END)
        .entry("ask")
        .sessions(SessionConfig::new(Arc::new(InMemorySessionStore::new())))
        .compile()
        .unwrap()
}

#[tokio::test]
async fn a_suspended_turn_resumes_into_the_listener_once() {
    let chat = ChatHarness::new(approval_graph()).unwrap();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&heard);
    chat.subscribe("s", move |o| sink.lock().unwrap().push(o.clone()));
    let ChatTurnOutcome::Suspended(p) = chat.send("s", Message::user("do it")).await else {
        panic!()
    };
    assert_eq!(p.pending_messages, vec![Message::assistant("May I?")]);
    assert_eq!(p.signal_descriptor.signal_id, "approve");
    assert!(
        heard.lock().unwrap().is_empty(),
        "the listener fired for the send"
    );

    let resumed = chat
        .signal(
            SignalTarget::SignalId("approve".into()),
            json!({"approved": true}),
        )
        .await;
    assert_eq!(
        replies(&resumed),
        ["Done."],
        "only the resumed turn's messages"
    );
    let heard = heard.lock().unwrap().clone();
    assert_eq!(heard, vec![resumed.clone()]);
    let ChatTurnOutcome::Completed(c) = resumed else {
        panic!()
    };
    assert_eq!(c.final_state["messages"].as_array().unwrap().len(), 3);

    // The signal was consumed: a second delivery finds no paused turn.
    let again = chat
        .signal(
            SignalTarget::SignalId("approve".into()),
            json!({"approved": true}),
        )
        .await;
    let ChatTurnOutcome::Errored(e) = again else {
        panic!()
    };
    assert_eq!(e.error_category, "harness_signal_correlation_failed");
}

#[tokio::test]
async fn a_duplicated_signal_resumes_the_turn_once_and_the_listener_hears_it_once() {
    // The second delivery reads the paused record while the first resume runs (its
    // `act` node takes 50 ms), then waits for the session: by then nothing is left
    // to resume, and it is refused without a turn for the listeners.
    let chat = ChatHarness::new(approval_graph_acting_after(Duration::from_millis(50))).unwrap();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&heard);
    chat.subscribe("s", move |o| sink.lock().unwrap().push(o.clone()));
    let ChatTurnOutcome::Suspended(p) = chat.send("s", Message::user("do it")).await else {
        panic!()
    };
    let target = || SignalTarget::Invocation(p.invocation_id.clone());
    let (first, second) = tokio::join!(
        chat.signal(target(), json!({"approved": true})),
        chat.signal(target(), json!({"approved": true})),
    );
    assert_eq!(replies(&first), ["Done."]);
    let ChatTurnOutcome::Errored(e) = &second else {
        panic!("the duplicate ran: {second:?}")
    };
    assert_eq!(e.error_category, "harness_signal_correlation_failed");
    assert_eq!(*heard.lock().unwrap(), vec![first]);
}

#[tokio::test]
async fn bad_input_is_refused_before_anything_runs() {
    let runs = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&runs);
    let graph = GraphBuilder::new(Chat::default())
        .add_node("n", move |_s: Arc<Chat>, _c: NodeCtx| {
            r.fetch_add(1, Ordering::SeqCst);
            async { Ok(ChatUpdate::default()) }
        })
        .add_edge("n", END)
        .entry("n")
        .compile()
        .unwrap();
    let chat = ChatHarness::new(graph).unwrap();
    for (session, message, category) in [
        (
            "s",
            json!({"role": "tool", "content": "x"}),
            "chat_message_shape_invalid",
        ),
        (
            "s",
            json!({"role": "user", "content": ""}),
            "chat_message_shape_invalid",
        ),
        (
            "s",
            json!({"role": "wizard", "content": "x"}),
            "chat_message_shape_invalid",
        ),
        ("s", json!("just a string"), "chat_message_shape_invalid"),
        (
            "",
            json!({"role": "user", "content": "x"}),
            "harness_session_id_unresolved",
        ),
    ] {
        let ChatTurnOutcome::Errored(e) = chat.send_json(session, &message).await else {
            panic!("{message}")
        };
        assert_eq!(e.error_category, category, "{message}");
        assert_eq!(e.reply.role(), "system");
    }
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    // An empty reply list is still a completion (§7).
    let ok = chat
        .send_json("s", &json!({"role": "user", "content": "x"}))
        .await;
    assert_eq!(replies(&ok), Vec::<String>::new());
}

#[tokio::test]
async fn a_node_failure_becomes_a_bucketed_reply_and_the_history_is_kept() {
    let store = InMemorySessionStore::new();
    let fail = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let f = Arc::clone(&fail);
    let graph = GraphBuilder::new(Chat::default())
        .add_node("n", move |_s: Arc<Chat>, _c: NodeCtx| {
            let failing = f.load(Ordering::SeqCst);
            async move {
                if failing {
                    Err(NodeError::with_category(
                        openarmature_core::Category::PROVIDER_UNAVAILABLE,
                        "upstream down",
                    ))
                } else {
                    Ok(ChatUpdate::default().messages(vec![Message::assistant("hi")]))
                }
            }
        })
        .add_edge("n", END)
        .entry("n")
        .sessions(SessionConfig::new(Arc::new(store.clone())))
        .compile()
        .unwrap();
    let chat = ChatHarness::new(graph)
        .unwrap()
        .reply_text(|bucket, _| format!("custom {}", bucket.as_str()));
    chat.send("s", Message::user("one")).await;
    fail.store(true, Ordering::SeqCst);
    let ChatTurnOutcome::Errored(e) = chat.send("s", Message::user("two")).await else {
        panic!()
    };
    assert_eq!(e.error_bucket, ErrorBucket::RetryableTransient);
    assert_eq!(e.error_category, "provider_unavailable");
    assert_eq!(e.reply, Message::system("custom retryable_transient"));
    fail.store(false, Ordering::SeqCst);
    let ChatTurnOutcome::Completed(c) = chat.send("s", Message::user("three")).await else {
        panic!()
    };
    let history: Vec<String> = c.final_state["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        history,
        ["one", "hi", "three", "hi"],
        "the failed turn left no trace"
    );
}

#[test]
fn a_state_without_messages_is_not_a_chat_graph() {
    state! {
        /// No history.
        #[derive(Default)]
        pub struct Plain => PlainUpdate { pub n: i64 }
    }
    let graph = GraphBuilder::new(Plain::default())
        .add_node("n", |_s: Arc<Plain>, _c: NodeCtx| async {
            Ok(PlainUpdate::default())
        })
        .add_edge("n", END)
        .entry("n")
        .compile()
        .unwrap();
    let err = ChatHarness::new(graph).err().unwrap();
    assert_eq!(err.category().as_str(), "state_validation_error");
}
