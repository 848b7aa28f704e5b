//! Spec: conformance-adapter §4.3 for the harness-chat suite — a turn's `expected`
//! block and a signal arrival's `expected_listener_callback`, in the chat vocabulary
//! the suite's per-directory notes define.

use std::collections::HashMap;

use openarmature_harness_chat::ChatTurnOutcome;
use openarmature_llm::Message;
use serde_json::Value;

use super::ChatRecord;
use crate::failure::{Check, Failure};
use crate::suspension::subset;
use crate::yaml::Y;

/// The text of a message's content (string, or its text blocks joined).
fn text(m: &Value) -> String {
    match m.get("content") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// One expected message against an actual one: plain keys by subset, plus the
/// `content_includes` / `content_matches_template` helpers.
pub(crate) fn message(want: &Value, got: &Value, what: &str) -> Check {
    let mut plain = want.clone();
    if let Some(map) = plain.as_object_mut() {
        if let Some(parts) = map.remove("content_includes") {
            let body = text(got);
            for part in parts.as_array().into_iter().flatten() {
                let part = part.as_str().unwrap_or_default();
                if !body.contains(part) {
                    return Err(format!("{what}: content `{body}` lacks `{part}`").into());
                }
            }
        }
        if let Some(template) = map.remove("content_matches_template") {
            // C2: the fixtures quote the template in lower case.
            let (body, t) = (
                text(got).to_lowercase(),
                template.as_str().unwrap_or_default().to_lowercase(),
            );
            if !body.contains(&t) {
                return Err(
                    format!("{what}: content `{body}` does not match the template `{t}`").into(),
                );
            }
        }
    }
    subset(&plain, got, what)
}

/// An expected message list against actual messages: same length, each by [`message`].
pub(crate) fn messages(want: &Value, got: &[Message], what: &str) -> Check {
    let want = want.as_array().ok_or(format!("{what}: expected a list"))?;
    if want.len() != got.len() {
        let got: Vec<Value> = got.iter().map(Message::to_json).collect();
        return Err(format!("{what}: expected {} messages, got {got:?}", want.len()).into());
    }
    for (i, (w, g)) in want.iter().zip(got).enumerate() {
        message(w, &g.to_json(), &format!("{what}[{i}]"))?;
    }
    Ok(())
}

/// `final_state.messages_count` / `messages_history_contains` (an ordered subsequence).
fn final_state(want: &Y<'_>, state: &Value) -> Check {
    let history = state
        .get(openarmature_harness_chat::HISTORY_FIELD)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (key, v) in want.entries()? {
        match key.as_str() {
            "messages_count" => {
                let n = v.json()?;
                if n.as_u64() != Some(history.len() as u64) {
                    return Err(
                        format!("messages_count: expected {n}, history is {history:?}").into(),
                    );
                }
            }
            "messages_history_contains" => {
                let mut rest = history.iter();
                for (i, w) in v.json()?.as_array().into_iter().flatten().enumerate() {
                    if !rest.any(|g| message(w, g, "").is_ok()) {
                        return Err(format!(
                            "messages_history_contains[{i}] {w} not found in order in {history:?}"
                        )
                        .into());
                    }
                }
            }
            other => {
                return Err(Failure::unsupported(format!(
                    "fixture_directive_unknown: final_state.{other}"
                )))
            }
        }
    }
    Ok(())
}

/// The fields an outcome block asserts (a turn's `expected`, a callback's).
fn outcome(key: &str, v: &Y<'_>, o: &ChatTurnOutcome) -> Check {
    let wrong = |what: &str| {
        Failure::mismatch(format!(
            "{key}: the outcome is {} ({o:?}), not {what}",
            o.kind()
        ))
    };
    match (key, o) {
        ("outcome", _) => {
            let want = v.str()?;
            if o.kind() != want {
                return Err(wrong(want));
            }
        }
        ("dispatch_path", _) => {
            let want = v.str()?;
            if o.dispatch_path().map(|p| p.as_str()) != Some(want) {
                return Err(format!(
                    "dispatch_path: expected {want}, got {:?}",
                    o.dispatch_path()
                )
                .into());
            }
        }
        ("replies", ChatTurnOutcome::Completed(c)) => {
            messages(&v.json()?, &c.replies, "replies")?;
        }
        ("final_state", ChatTurnOutcome::Completed(c)) => final_state(v, &c.final_state)?,
        ("error_bucket", ChatTurnOutcome::Errored(e)) => {
            let want = v.str()?;
            if e.error_bucket.as_str() != want {
                return Err(format!(
                    "error_bucket: expected {want}, got {}",
                    e.error_bucket.as_str()
                )
                .into());
            }
        }
        ("error_category", ChatTurnOutcome::Errored(e)) => {
            let want = v.str()?;
            if e.error_category != want {
                return Err(format!(
                    "error_category: expected {want}, got {} ({})",
                    e.error_category, e.diagnostic
                )
                .into());
            }
        }
        ("reply", ChatTurnOutcome::Errored(e)) => {
            message(&v.json()?, &e.reply.to_json(), "reply")?;
        }
        ("pending_messages", ChatTurnOutcome::Suspended(p)) => {
            messages(&v.json()?, &p.pending_messages, "pending_messages")?;
        }
        ("signal_descriptor", ChatTurnOutcome::Suspended(p)) => {
            let got = serde_json::to_value(&p.signal_descriptor).map_err(Failure::mismatch)?;
            subset(&v.json()?, &got, "signal_descriptor")?;
        }
        (
            "replies" | "final_state" | "error_bucket" | "error_category" | "reply"
            | "pending_messages" | "signal_descriptor",
            _,
        ) => return Err(wrong("the variant carrying it")),
        (other, _) => {
            return Err(Failure::unsupported(format!(
                "fixture_directive_unknown: expected.{other}"
            )))
        }
    }
    Ok(())
}

/// One chat turn's `expected` block.
pub(crate) fn turn(y: &Y<'_>, rec: &ChatRecord) -> Check {
    // `outcome` first, so a wrong variant reads as such.
    let mut entries = y.entries()?;
    entries.sort_by_key(|(k, _)| k != "outcome");
    for (key, v) in entries {
        outcome(&key, &v, &rec.outcome)?;
    }
    Ok(())
}

/// A signal arrival's `expected_listener_callback`: the named listener heard this
/// resumed turn, and what it heard is what the block describes.
pub(crate) fn callback(
    y: &Y<'_>,
    rec: &ChatRecord,
    heard: &HashMap<String, Vec<ChatTurnOutcome>>,
) -> Check {
    let name = y.req("listener").and_then(|l| l.str().map(str::to_owned))?;
    let got = heard
        .get(&name)
        .and_then(|list| list.last())
        .ok_or(format!("listener `{name}` never fired"))?;
    if got != &rec.outcome {
        return Err(format!(
            "listener `{name}` heard {got:?}, the resume returned {:?}",
            rec.outcome
        )
        .into());
    }
    for (key, v) in y.entries()? {
        if key != "listener" {
            outcome(&key, &v, got)?;
        }
    }
    Ok(())
}
