//! A scripted in-process model (implements the llm crate's `Provider`) and an event
//! recorder.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use openarmature_agent::{Tool, ToolError};
use openarmature_graph::{observer_fn, ObserverEvent, Registration};
use openarmature_llm::{
    AssistantMessage, DeltaSink, FinishReason, LlmError, Message, Provider, Response, ToolCall,
    Usage, WireRequest,
};
use serde::Deserialize;
use serde_json::{json, Value};

/// One request the model saw: its messages and the names of the tools offered.
#[derive(Debug, Clone)]
pub struct Seen {
    pub messages: Vec<Message>,
    pub tools: Vec<String>,
    pub stream: bool,
}

/// Replies from a script, in order; records every request. An exhausted script is a
/// `provider_invalid_response`.
#[derive(Default)]
pub struct Scripted {
    script: Mutex<VecDeque<AssistantMessage>>,
    seen: Mutex<Vec<Seen>>,
    repeat_last: Option<AssistantMessage>,
}

impl Scripted {
    pub fn new(replies: Vec<AssistantMessage>) -> Arc<Self> {
        Arc::new(Scripted {
            script: Mutex::new(replies.into()),
            ..Scripted::default()
        })
    }

    /// A model that answers every request with `reply`.
    pub fn always(reply: AssistantMessage) -> Arc<Self> {
        Arc::new(Scripted {
            repeat_last: Some(reply),
            ..Scripted::default()
        })
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Provider for Scripted {
    fn model(&self) -> &str {
        "scripted"
    }

    fn provider_name(&self) -> &str {
        "test"
    }

    fn ready(&self) -> BoxFuture<'_, Result<(), LlmError>> {
        Box::pin(async { Ok(()) })
    }

    fn supports_streaming(&self) -> bool {
        true
    }

    fn send_stream<'a>(
        &'a self,
        request: WireRequest<'a>,
        _sink: &'a dyn DeltaSink,
    ) -> BoxFuture<'a, Result<Response, LlmError>> {
        self.send(request)
    }

    fn send<'a>(&'a self, request: WireRequest<'a>) -> BoxFuture<'a, Result<Response, LlmError>> {
        self.seen.lock().unwrap().push(Seen {
            messages: request.messages.to_vec(),
            tools: request.tools.iter().map(|t| t.name.clone()).collect(),
            stream: request.stream,
        });
        let next = self.script.lock().unwrap().pop_front();
        let reply = next.or_else(|| self.repeat_last.clone());
        Box::pin(async move {
            let message = reply.ok_or_else(|| LlmError::invalid_response("script exhausted"))?;
            let finish = if message.tool_calls.is_empty() {
                FinishReason::Stop
            } else {
                FinishReason::ToolCalls
            };
            Ok(Response::new(
                message,
                finish,
                Usage::default(),
                Value::Null,
                None,
            ))
        })
    }
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
    AssistantMessage {
        content: Some(text.into()),
        tool_calls: Vec::new(),
    }
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
