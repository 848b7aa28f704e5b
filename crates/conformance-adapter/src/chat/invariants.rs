//! Spec: conformance-adapter §4.3 for the harness-chat suite — the case invariants as
//! a table: every invariant name maps to one concrete check over the recorded turns.

use openarmature_harness::ErrorBucket;
use openarmature_harness_chat::{ChatTurnOutcome, HISTORY_FIELD};
use openarmature_llm::{Content, Message};
use serde_json::Value;

use super::{ChatRecord, ChatRig};
use crate::failure::{holds, Check, Failure};
use crate::ge::harness::lock;
use crate::table::{invariant, names, Table};
use crate::yaml::Y;

#[derive(Clone, Copy)]
enum Rule {
    /// Every turn returned one of the three outcomes, a completed one with its state.
    Outcome,
    /// Each completed turn's replies are exactly the history it added after the user
    /// message, in order.
    RepliesAreTheTail,
    /// The second turn's history begins with the first's.
    LoadsEarlierHistory,
    /// Each stored history extends the previous one by the user message and replies.
    Accumulates,
    /// Some reply is an assistant message with tool calls and no tool-call block.
    ToolCallsTopLevel,
    /// Some reply is a tool message with an id and string content.
    ToolResultShape,
    /// The stored user message equals the one sent, blocks and all.
    BlocksPreserved,
    /// Every stored content block is text / image / thinking / redacted_thinking.
    BlockKinds,
    /// The suspended turn's pending messages are its paused state's tail.
    PendingIsTail,
    /// The suspended turn returned and its paused record is still pending.
    DidNotBlock,
    /// The paused state already holds the pending messages.
    PendingPersisted,
    /// Each listener heard exactly one outcome per signal arrival, none for a send.
    ListenerOnce,
    /// The listener heard a resumed turn's outcome (§3.3).
    ListenerPostResume,
    /// A later send returns its own messages, not the resumed turn's.
    NextSendOwnReply,
    /// Some turn errored in this bucket.
    Bucket(ErrorBucket),
    /// Every errored turn's reply is a system message.
    SystemReply,
    /// The turn whose session load failed ran no node.
    NoInvokeOnLoadFailure,
    /// The stored session did not change across an errored turn.
    StatePreservedOnError,
    /// The errored reply carries the diagnostic.
    ReplyCarriesDiagnostic,
    /// A refused message caused no session load.
    ValidatedBeforeLoad,
    /// The refusal is `chat_message_shape_invalid`, user-correctable.
    ShapeInvalidIsUserCorrectable,
    /// A refused message ran no node.
    NoInvokeOnInvalidMessage,
}

const TABLE: &Table<Rule> = &[
    ("send_returns_chat_turn_outcome", Rule::Outcome),
    (
        "replies_contain_only_new_messages_appended_during_turn",
        Rule::RepliesAreTheTail,
    ),
    (
        "replies_field_contains_only_current_turn_new_messages",
        Rule::RepliesAreTheTail,
    ),
    (
        "replies_list_preserves_graph_execution_order",
        Rule::RepliesAreTheTail,
    ),
    ("turn_2_loads_turn_1_history", Rule::LoadsEarlierHistory),
    (
        "session_messages_field_accumulates_via_append_reducer",
        Rule::Accumulates,
    ),
    (
        "tool_calls_lives_on_assistant_message_not_in_content_blocks",
        Rule::ToolCallsTopLevel,
    ),
    (
        "tool_role_message_has_tool_call_id_and_string_content",
        Rule::ToolResultShape,
    ),
    (
        "multimodal_content_blocks_preserved_in_history",
        Rule::BlocksPreserved,
    ),
    (
        "content_block_types_match_llm_provider_3_1_set",
        Rule::BlockKinds,
    ),
    (
        "pending_message_extracted_from_state_messages_tail",
        Rule::PendingIsTail,
    ),
    (
        "no_chat_specific_engine_hook_required_for_pending_message",
        Rule::PendingIsTail,
    ),
    (
        "chat_harness_does_not_block_on_suspended_outcome",
        Rule::DidNotBlock,
    ),
    (
        "compose_pending_state_persisted_before_suspend_node_runs",
        Rule::PendingPersisted,
    ),
    (
        "listener_fires_exactly_once_per_resumed_turn",
        Rule::ListenerOnce,
    ),
    (
        "listener_callback_carries_post_resume_chat_turn_outcome",
        Rule::ListenerPostResume,
    ),
    (
        "next_send_call_does_not_consume_the_post_resume_reply",
        Rule::NextSendOwnReply,
    ),
    (
        "error_bucket_routes_to_harness_section_7_1",
        Rule::Bucket(ErrorBucket::SessionTerminating),
    ),
    (
        "error_bucket_routes_to_harness_section_7_2",
        Rule::Bucket(ErrorBucket::RetryableTransient),
    ),
    (
        "error_bucket_routes_to_harness_section_7_3",
        Rule::Bucket(ErrorBucket::UserCorrectable),
    ),
    ("reply_role_is_system", Rule::SystemReply),
    (
        "chat_harness_does_not_invoke_graph_when_session_load_fails",
        Rule::NoInvokeOnLoadFailure,
    ),
    (
        "session_state_preserved_after_transient_error",
        Rule::StatePreservedOnError,
    ),
    (
        "reply_content_includes_upstream_diagnostic",
        Rule::ReplyCarriesDiagnostic,
    ),
    (
        "message_validation_runs_at_send_api_boundary_before_session_load",
        Rule::ValidatedBeforeLoad,
    ),
    (
        "chat_message_shape_invalid_routes_to_user_correctable",
        Rule::ShapeInvalidIsUserCorrectable,
    ),
    (
        "graph_body_not_invoked_when_message_validation_fails",
        Rule::NoInvokeOnInvalidMessage,
    ),
];

/// The names [`TABLE`] knows (for [`crate::table::registry`]).
pub(crate) const TABLE_NAMES: fn() -> Vec<&'static str> = || names(TABLE);

pub(crate) async fn check(y: &Y<'_>, turns: &[ChatRecord], rig: &ChatRig) -> Check {
    for (name, want) in y.entries()? {
        if !want.bool()? {
            continue;
        }
        let c = invariant(TABLE, &name)?;
        one(c, turns, rig)
            .await
            .map_err(|m| m.context(format!("invariant {name}: ")))?;
    }
    Ok(())
}

fn list(v: &Option<Value>) -> Vec<Value> {
    v.as_ref()
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn errored(
    turns: &[ChatRecord],
) -> impl Iterator<Item = (&ChatRecord, &openarmature_harness_chat::ChatErrored)> {
    turns.iter().filter_map(|t| match &t.outcome {
        ChatTurnOutcome::Errored(e) => Some((t, e)),
        _ => None,
    })
}

fn replies(turns: &[ChatRecord]) -> impl Iterator<Item = &Message> {
    turns.iter().flat_map(|t| match &t.outcome {
        ChatTurnOutcome::Completed(c) => c.replies.as_slice(),
        _ => &[],
    })
}

async fn one(c: Rule, turns: &[ChatRecord], rig: &ChatRig) -> Check {
    let first = turns.first().ok_or("no chat turn ran")?;
    match c {
        Rule::Outcome => holds(
            turns.iter().all(|t| match &t.outcome {
                ChatTurnOutcome::Completed(c) => c.final_state.get(HISTORY_FIELD).is_some(),
                o => matches!(o.kind(), "errored" | "suspended"),
            }),
            "a turn's outcome is not a ChatTurnOutcome carrying its fields",
        ),
        Rule::RepliesAreTheTail => {
            for t in turns {
                let ChatTurnOutcome::Completed(c) = &t.outcome else {
                    continue;
                };
                let (before, after) = (list(&t.stored_before), list(&t.stored_after));
                let tail: Vec<Value> = after.iter().skip(before.len() + 1).cloned().collect();
                let got: Vec<Value> = c.replies.iter().map(Message::to_json).collect();
                holds(
                    got == tail,
                    format!("replies {got:?} are not the new history {tail:?}"),
                )?;
            }
            Ok(())
        }
        Rule::LoadsEarlierHistory => {
            let second = turns.get(1).ok_or("no second turn")?;
            let (a, b) = (list(&first.stored_after), list(&second.stored_after));
            holds(
                !a.is_empty() && b.starts_with(&a),
                "turn 2's history does not begin with turn 1's",
            )
        }
        Rule::Accumulates => {
            for t in turns {
                let ChatTurnOutcome::Completed(c) = &t.outcome else {
                    continue;
                };
                let mut want = list(&t.stored_before);
                want.extend(t.sent.clone());
                want.extend(c.replies.iter().map(Message::to_json));
                holds(
                    list(&t.stored_after) == want,
                    "the stored history is not previous + message + replies",
                )?;
            }
            Ok(())
        }
        Rule::ToolCallsTopLevel => holds(
            replies(turns).any(|m| match m {
                Message::Assistant(a) => {
                    !a.tool_calls.is_empty()
                        && !m.to_json()["content"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .any(|b| {
                                matches!(
                                    b.get("type").and_then(Value::as_str),
                                    Some("tool_call" | "tool_use")
                                )
                            })
                }
                _ => false,
            }),
            "no assistant reply carries top-level tool_calls",
        ),
        Rule::ToolResultShape => holds(
            replies(turns).any(|m| {
                matches!(m, Message::Tool(t) if !t.tool_call_id.is_empty())
                    && m.to_json()["content"].is_string()
            }),
            "no tool reply with a tool_call_id and string content",
        ),
        Rule::BlocksPreserved => {
            let sent = first.sent.clone().ok_or("the first turn sent nothing")?;
            let stored = list(&first.stored_after)
                .get(list(&first.stored_before).len())
                .cloned();
            let normalized = Message::from_json(&sent)
                .map_err(Failure::mismatch)?
                .to_json();
            holds(
                stored.as_ref() == Some(&normalized),
                format!("stored {stored:?}, sent {normalized}"),
            )
        }
        Rule::BlockKinds => {
            let history = list(&turns.last().ok_or("no turn")?.stored_after);
            for m in &history {
                let msg = Message::from_json(m).map_err(Failure::mismatch)?;
                if let Message::User(u) = &msg {
                    if let Content::Blocks(blocks) = &u.content {
                        for b in blocks {
                            holds(
                                matches!(
                                    b.kind(),
                                    "text" | "image" | "thinking" | "redacted_thinking"
                                ),
                                b.kind(),
                            )?;
                        }
                    }
                }
            }
            Ok(())
        }
        Rule::PendingIsTail | Rule::PendingPersisted | Rule::DidNotBlock => {
            let (t, p) = turns
                .iter()
                .find_map(|t| match &t.outcome {
                    ChatTurnOutcome::Suspended(p) => Some((t, p)),
                    _ => None,
                })
                .ok_or("no turn suspended")?;
            let record = rig
                .harness
                .graph()
                .paused_record(&p.invocation_id)
                .await
                .map_err(Failure::mismatch)?;
            if let Rule::DidNotBlock = c {
                let resumed = rig
                    .arrivals
                    .iter()
                    .any(|(id, _)| *id == p.signal_descriptor.signal_id);
                return holds(
                    resumed || record.is_some(),
                    "the suspended turn left no paused record",
                );
            }
            let Some(record) = record else {
                // Resumed since: the paused record is gone; the saved session holds the state.
                let after = list(&t.stored_after);
                let pending: Vec<Value> = p.pending_messages.iter().map(Message::to_json).collect();
                return holds(
                    after.ends_with(&pending),
                    "the saved session lacks the pending messages",
                );
            };
            let paused = record
                .states
                .first()
                .map(|s| list(&s.get(HISTORY_FIELD).cloned()))
                .unwrap_or_default();
            let start = list(&t.stored_before).len() + 1;
            let tail: Vec<Value> = paused.iter().skip(start).cloned().collect();
            let pending: Vec<Value> = p.pending_messages.iter().map(Message::to_json).collect();
            holds(
                !pending.is_empty() && tail == pending,
                format!("pending {pending:?}, paused tail {tail:?}"),
            )
        }
        Rule::ListenerOnce => {
            let heard = lock(&rig.heard);
            holds(!heard.is_empty(), "no listener registered")?;
            for (name, outcomes) in heard.iter() {
                holds(
                    outcomes.len() == rig.arrivals.len(),
                    format!(
                        "listener {name} heard {} outcomes for {} arrivals",
                        outcomes.len(),
                        rig.arrivals.len()
                    ),
                )?;
            }
            Ok(())
        }
        Rule::ListenerPostResume => {
            let heard = lock(&rig.heard);
            holds(
                heard
                    .values()
                    .flatten()
                    .all(|o| o.dispatch_path().map(|p| p.as_str()) == Some("3.3"))
                    && heard.values().flatten().count() > 0,
                "a listener heard something other than a resumed turn",
            )
        }
        Rule::NextSendOwnReply => {
            let (_, resumed) = rig.arrivals.first().ok_or("no signal arrived")?;
            let before: Vec<Value> = resumed
                .outcome
                .messages()
                .iter()
                .map(Message::to_json)
                .collect();
            let probe = rig
                .harness
                .send(&resumed.session_id, Message::user("adapter probe"))
                .await;
            let got: Vec<Value> = probe.messages().iter().map(Message::to_json).collect();
            holds(
                !before.is_empty() && got.iter().all(|m| !before.contains(m)),
                format!(
                    "the next send returned {got:?}, which repeats the resumed reply {before:?}"
                ),
            )
        }
        Rule::Bucket(bucket) => holds(
            errored(turns).any(|(_, e)| e.error_bucket == bucket),
            bucket.as_str(),
        ),
        Rule::SystemReply => {
            holds(errored(turns).count() > 0, "no turn errored")?;
            holds(
                errored(turns).all(|(_, e)| e.reply.role() == "system"),
                "a reply is not a system message",
            )
        }
        Rule::NoInvokeOnLoadFailure => holds(
            errored(turns).any(|(t, e)| {
                e.error_category == "session_load_failed" && t.loads > 0 && t.order.is_empty()
            }),
            "no turn failed its load without running a node",
        ),
        Rule::StatePreservedOnError => holds(
            errored(turns).count() > 0
                && errored(turns).all(|(t, _)| t.stored_before == t.stored_after),
            "an errored turn changed the stored session",
        ),
        Rule::ReplyCarriesDiagnostic => holds(
            errored(turns).any(|(_, e)| {
                !e.diagnostic.is_empty()
                    && e.reply.to_json()["content"]
                        .as_str()
                        .is_some_and(|c| c.contains(&e.diagnostic))
            }),
            "no errored reply carries its diagnostic",
        ),
        Rule::ValidatedBeforeLoad => holds(
            errored(turns)
                .any(|(t, e)| e.error_category == "chat_message_shape_invalid" && t.loads == 0),
            "the refused message was preceded by a session load",
        ),
        Rule::ShapeInvalidIsUserCorrectable => holds(
            errored(turns).any(|(_, e)| {
                e.error_category == "chat_message_shape_invalid"
                    && e.error_bucket == ErrorBucket::UserCorrectable
            }),
            "no user-correctable chat_message_shape_invalid",
        ),
        Rule::NoInvokeOnInvalidMessage => holds(
            errored(turns).any(|(t, e)| {
                e.error_category == "chat_message_shape_invalid" && t.order.is_empty()
            }),
            "a node ran for the refused message",
        ),
    }
}
