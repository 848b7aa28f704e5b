//! A scripted in-process model (the llm crate's test provider) and an event recorder.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use openarmature_agent::{Tool, ToolError};
use openarmature_graph::{observer_fn, ObserverEvent, Registration};
use openarmature_llm::testing::ScriptedProvider;
use openarmature_llm::{AssistantMessage, Message, Response, ToolCall};
use serde::Deserialize;
use serde_json::{json, Value};

/// The scripted in-process model: `openarmature-llm`'s test provider (provider `test`,
/// model `scripted`, streaming), which records every request it is sent.
pub type Scripted = ScriptedProvider;

/// A model replying from `replies`, in order; an exhausted script is a
/// `provider_invalid_response`.
pub fn scripted(replies: Vec<AssistantMessage>) -> Arc<Scripted> {
    Arc::new(named(ScriptedProvider::replying(replies)))
}

/// A model that answers every request with `reply`.
pub fn always(reply: AssistantMessage) -> Arc<Scripted> {
    Arc::new(named(ScriptedProvider::answering(move || {
        Box::pin(std::future::ready(Ok(Response::of(reply.clone()))))
    })))
}

fn named(model: ScriptedProvider) -> ScriptedProvider {
    model.named("test", "scripted").streaming(true)
}

/// An assistant message calling `(id, name, arguments)` tools.
pub fn calls(list: &[(&str, &str, Value)]) -> AssistantMessage {
    let tool_calls = list
        .iter()
        .map(|(id, name, args)| {
            ToolCall::new(*id, *name, args.as_object().cloned().unwrap_or_default())
        })
        .collect();
    AssistantMessage {
        content: None,
        tool_calls,
    }
}

/// A final text answer.
pub fn answer(text: &str) -> AssistantMessage {
    AssistantMessage::from_text(text)
}

/// Tool results in a history, as `(tool_call_id, content)`.
pub fn tool_results(messages: &[Message]) -> Vec<(String, String)> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(t) => Some((t.tool_call_id.clone(), t.content.clone())),
            _ => None,
        })
        .collect()
}

/// A recorded tool event: `(ok, tool_name, tool_call_id, result or error_type)`.
pub type ToolEventRow = (bool, String, Option<String>, Value);

/// An observer recording tool-call events.
pub fn tool_recorder() -> (Registration, Arc<Mutex<Vec<ToolEventRow>>>) {
    let rows = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&rows);
    let observer = observer_fn(move |event: Arc<ObserverEvent>| {
        let sink = Arc::clone(&sink);
        async move {
            let row = match event.as_ref() {
                ObserverEvent::ToolCall(e) => Some((
                    true,
                    e.call.tool_name.clone(),
                    e.call.tool_call_id.clone(),
                    e.result.clone(),
                )),
                ObserverEvent::ToolCallFailed(e) => Some((
                    false,
                    e.call.tool_name.clone(),
                    e.call.tool_call_id.clone(),
                    json!(e.error_type),
                )),
                _ => None,
            };
            sink.lock().unwrap().extend(row);
            Ok(())
        }
    });
    (Registration::new("tools", observer), rows)
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct AddArgs {
    pub a: i64,
    pub b: i64,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct CityArgs {
    pub city: String,
}

/// `add(a, b)`, counting its runs.
pub fn add_tool(runs: &Arc<AtomicUsize>) -> Tool {
    let runs = Arc::clone(runs);
    Tool::from_fn("add", "Adds two integers", move |args: AddArgs, _ctx| {
        runs.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, ToolError>(json!({"sum": args.a + args.b})) }
    })
}

/// `weather(city)`, counting its runs.
pub fn weather_tool(runs: &Arc<AtomicUsize>) -> Tool {
    let runs = Arc::clone(runs);
    Tool::from_fn("weather", "Current weather", move |args: CityArgs, _ctx| {
        runs.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, ToolError>(format!("sunny in {}", args.city)) }
    })
}

pub fn counter() -> Arc<AtomicUsize> {
    Arc::new(AtomicUsize::new(0))
}

pub fn count(c: &Arc<AtomicUsize>) -> usize {
    c.load(Ordering::SeqCst)
}
