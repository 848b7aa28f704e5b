//! Spec: conformance-adapter §4 for the harness-chat suite: the case graph (built as
//! the harness suite builds it) served by an `openarmature_harness_chat::ChatHarness`;
//! each `chat_turns` entry is one `send_json` (the synthetic transport), each
//! `signal_arrivals` entry one `ChatHarness::signal`, and every outcome is asserted
//! (`expected.rs`), then the case invariants (`invariants.rs`).
//!
//! Adapter register C1: the fixtures' state type `list[ChatMessage]` is read as
//! `list<any>` (the dynamic state's list; the chat harness checks each message's shape
//! itself). C2: `content_matches_template` compares case-insensitively — the fixtures
//! quote §10's templates in lower case, the templates begin with a capital.

mod expected;
mod invariants;

pub(crate) use invariants::TABLE_NAMES as INVARIANT_NAMES;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use openarmature_graph::DynState;
use openarmature_harness::SignalTarget;
use openarmature_harness_chat::{ChatHarness, ChatTurnOutcome};
use serde_json::Value;

use crate::failure::{Check, Failure};
use crate::ge::harness::lock;
use crate::harness::{case_graph, patched, CaseGraph, HARNESS_CASE_KEYS};
use crate::session_log::RecordingStore;
use crate::yaml::Y;

/// One `send` (or signal), with what the store and the graph did around it.
pub(crate) struct ChatRecord {
    pub(crate) outcome: ChatTurnOutcome,
    /// Outer node bodies that ran.
    pub(crate) order: Vec<String>,
    /// Store loads during the turn.
    pub(crate) loads: usize,
    pub(crate) session_id: String,
    /// The stored `messages` before and after the turn (`None`: no record).
    pub(crate) stored_before: Option<Value>,
    pub(crate) stored_after: Option<Value>,
    /// The message sent (`None` for a signal).
    pub(crate) sent: Option<Value>,
}

/// What the invariants read besides the records.
pub(crate) struct ChatRig {
    pub(crate) harness: ChatHarness<DynState>,
    /// Listener name → the outcomes it received.
    pub(crate) heard: Arc<Mutex<HashMap<String, Vec<ChatTurnOutcome>>>>,
    pub(crate) arrivals: Vec<(String, ChatRecord)>,
}

/// C1: `list[ChatMessage]` → `list<any>`.
fn retype(case: &mut serde_norway::Value) {
    let Some(fields) = case
        .get_mut("state")
        .and_then(|s| s.get_mut("fields"))
        .and_then(serde_norway::Value::as_mapping_mut)
    else {
        return;
    };
    for (_, field) in fields.iter_mut() {
        if let Some(t) = field.get_mut("type") {
            if t.as_str() == Some("list[ChatMessage]") {
                *t = serde_norway::Value::from("list<any>");
            }
        }
    }
}

async fn stored(store: Option<&RecordingStore>, session_id: &str) -> Option<Value> {
    let record = store?.backend.load(session_id).await.ok()??;
    record
        .state
        .get(openarmature_harness_chat::HISTORY_FIELD)
        .cloned()
}

/// Runs `turn` with the bookkeeping a record needs.
async fn record<F>(case: &CaseGraph, session_id: &str, sent: Option<Value>, turn: F) -> ChatRecord
where
    F: std::future::Future<Output = ChatTurnOutcome>,
{
    let (rig_store, graph, recorder) = (case.store.as_deref(), &case.graph, &case.recorder);
    let loads = || rig_store.map_or(0, RecordingStore::loads);
    let stored_before = stored(rig_store, session_id).await;
    let (before, loads_before) = (lock(&recorder.order).len(), loads());
    let outcome = turn.await;
    graph.drain(None).await;
    let order = lock(&recorder.order)[before..]
        .iter()
        .map(|(_, n)| n.clone())
        .collect();
    ChatRecord {
        outcome,
        order,
        loads: loads() - loads_before,
        session_id: session_id.to_owned(),
        stored_before,
        stored_after: stored(rig_store, session_id).await,
        sent,
    }
}

pub(crate) async fn run_case(doc: &Y<'_>, case: &Y<'_>) -> Check {
    let same = case.value == doc.value;
    let mut value = patched(case);
    retype(&mut value);
    let case = &Y::root(&value, case.file);
    case.check_keys_of(&[HARNESS_CASE_KEYS, &["chat_turns", "signal_arrivals"]])?;
    let rig = case_graph(doc, case, same)?;
    if rig.stateless {
        return Err("harness-chat is sessioned-mode only (§1), the case asks for stateless".into());
    }
    let mut harness = ChatHarness::new(rig.graph.clone()).map_err(Failure::setup)?;
    if let Some(c) = &rig.coordinator {
        harness = harness.coordinator(c.clone());
    }
    let heard: Arc<Mutex<HashMap<String, Vec<ChatTurnOutcome>>>> = Arc::default();
    let mut turns = Vec::new();
    for item in case.named_items(
        "chat_turns",
        &[
            "name",
            "session_id",
            "user_message",
            "subscribe_listener",
            "expected",
        ],
    )? {
        let (label, t) = item?;
        let session_id = t
            .req("session_id")
            .and_then(|v| v.str().map(str::to_owned))?;
        if let Some(l) = t.get("subscribe_listener") {
            let name = l.str()?.to_owned();
            let sink = Arc::clone(&heard);
            lock(&heard).entry(name.clone()).or_default();
            harness.subscribe(&session_id, move |o| {
                lock(&sink).entry(name.clone()).or_default().push(o.clone());
            });
        }
        let message = t.req("user_message").and_then(|m| m.json())?;
        let rec = record(
            &rig,
            &session_id,
            Some(message.clone()),
            harness.send_json(&session_id, &message),
        )
        .await;
        if let Some(e) = t.get("expected") {
            expected::turn(&e, &rec).map_err(|m| m.context(format!("chat turn {label}: ")))?;
        }
        turns.push(rec);
    }
    let mut arrivals = Vec::new();
    if let Some(list) = case.get("signal_arrivals") {
        for a in list.seq()? {
            a.check_keys(&["signal_id", "signal_payload", "expected_listener_callback"])?;
            let signal_id = a
                .req("signal_id")
                .and_then(|v| v.str().map(str::to_owned))?;
            let payload = match a.get("signal_payload") {
                Some(p) => p.json()?,
                None => Value::Object(Default::default()),
            };
            let session = turns
                .last()
                .map(|t| t.session_id.clone())
                .unwrap_or_default();
            let rec = record(
                &rig,
                &session,
                None,
                harness.signal(SignalTarget::SignalId(signal_id.clone()), payload),
            )
            .await;
            if let Some(e) = a.get("expected_listener_callback") {
                expected::callback(&e, &rec, &lock(&heard))
                    .map_err(|m| m.context(format!("signal {signal_id}: ")))?;
            }
            arrivals.push((signal_id, rec));
        }
    }
    let rig = ChatRig {
        harness,
        heard,
        arrivals,
    };
    if let Some(inv) = case.get("invariants") {
        invariants::check(&inv, &turns, &rig).await?;
    }
    Ok(())
}
