//! Arguments: the definition comes from the argument type's schema; arguments that
//! do not parse, do not match the schema or name an unknown tool become tool results
//! the model recovers from, each with its category and a failed tool event.

use openarmature_agent::{Agent, Conversation, TOOL_ARGUMENTS_INVALID, TOOL_UNKNOWN};
use openarmature_graph::InvokeOptions;
use openarmature_llm::{AssistantMessage, Message, ToolCall};
use serde_json::{json, Value};

use crate::support::*;

fn start(text: &str) -> Conversation {
    Conversation::new(vec![Message::user(text)])
}

#[tokio::test]
async fn the_definition_comes_from_the_argument_schema() {
    let agent = Agent::builder(scripted(vec![]))
        .tool(add_tool(&counter()))
        .build()
        .unwrap();
    let params = &agent.definitions()[0].parameters;
    assert_eq!(params["type"], "object");
    assert_eq!(params["properties"]["a"]["type"], "integer");
    let mut required: Vec<&str> = params["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["a", "b"]);
    assert!(params.get("$schema").is_none());
}

#[tokio::test]
async fn bad_arguments_and_unknown_tools_become_results_the_model_recovers_from() {
    let model = scripted(vec![
        calls(&[
            ("c1", "add", json!({"a": "two", "b": 3})),
            ("c2", "add", json!({"a": 2})),
            ("c3", "multiply", json!({"a": 2, "b": 3})),
        ]),
        calls(&[("c4", "add", json!({"a": 2, "b": 3}))]),
        answer("5"),
    ]);
    let adds = counter();
    let agent = Agent::builder(model.clone())
        .tool(add_tool(&adds))
        .build()
        .unwrap();
    let graph = agent.graph().unwrap();
    let (recorder, events) = tool_recorder();
    let done = graph
        .invoke_with(start("2+3"), InvokeOptions::default().observer(recorder))
        .await
        .unwrap();
    graph.drain(None).await;

    assert_eq!(done.state.final_answer().as_deref(), Some("5"));
    assert_eq!(count(&adds), 1, "only the valid call ran the tool");
    let results = tool_results(&done.state.messages);
    let error_of = |content: &str| -> Value { serde_json::from_str::<Value>(content).unwrap() };
    let first = error_of(&results[0].1);
    assert_eq!(first["error"]["category"], TOOL_ARGUMENTS_INVALID.as_str());
    assert!(first["error"]["message"]
        .as_str()
        .unwrap()
        .contains("\"two\""));
    let second = error_of(&results[1].1);
    assert_eq!(second["error"]["category"], TOOL_ARGUMENTS_INVALID.as_str());
    assert!(second["error"]["message"].as_str().unwrap().contains('b'));
    let third = error_of(&results[2].1);
    assert_eq!(third["error"]["category"], TOOL_UNKNOWN.as_str());
    assert!(third["error"]["message"].as_str().unwrap().contains("add"));
    assert_eq!(results[3].1, r#"{"sum":5}"#);
    // The second model call saw the three errors.
    assert_eq!(tool_results(&model.requests()[1].messages).len(), 3);

    let events = events.lock().unwrap().clone();
    let failed: Vec<(String, Value)> = events
        .iter()
        .filter(|e| !e.0)
        .map(|e| (e.2.clone().unwrap(), e.3.clone()))
        .collect();
    assert_eq!(
        failed,
        vec![
            ("c1".into(), json!(TOOL_ARGUMENTS_INVALID.as_str())),
            ("c2".into(), json!(TOOL_ARGUMENTS_INVALID.as_str())),
            ("c3".into(), json!(TOOL_UNKNOWN.as_str())),
        ]
    );
    assert_eq!(events.iter().filter(|e| e.0).count(), 1);
}

#[tokio::test]
async fn nested_argument_types_are_checked_against_their_referenced_schemas() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Item {
        sku: String,
    }
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Order {
        item: Item,
        qty: u32,
    }
    let order = openarmature_agent::Tool::from_fn("order", "Orders", |o: Order, _ctx| async move {
        Ok::<_, openarmature_agent::ToolError>(format!("{} x{}", o.item.sku, o.qty))
    });
    let model = scripted(vec![
        calls(&[("o1", "order", json!({"item": {"sku": 5}, "qty": 1}))]),
        calls(&[("o2", "order", json!({"item": {"sku": "A7"}, "qty": 2}))]),
        answer("ordered"),
    ]);
    let agent = Agent::builder(model).tool(order).build().unwrap();
    let out = agent.graph().unwrap().invoke(start("buy")).await.unwrap();
    let results = tool_results(&out.messages);
    let bad: Value = serde_json::from_str(&results[0].1).unwrap();
    assert_eq!(bad["error"]["category"], TOOL_ARGUMENTS_INVALID.as_str());
    assert!(bad["error"]["message"]
        .as_str()
        .unwrap()
        .contains("/item/sku"));
    assert_eq!(results[1].1, "A7 x2");
}

#[tokio::test]
async fn arguments_that_did_not_parse_are_reported_to_the_model() {
    // A provider leaves `arguments` unset when the model's JSON did not parse.
    let unparsed = ToolCall {
        arguments: None,
        ..ToolCall::new("u1", "add", Default::default())
    };
    let model = scripted(vec![
        AssistantMessage {
            content: None,
            tool_calls: vec![unparsed],
        },
        answer("sorry"),
    ]);
    let adds = counter();
    let agent = Agent::builder(model).tool(add_tool(&adds)).build().unwrap();
    let out = agent.graph().unwrap().invoke(start("2+3")).await.unwrap();
    let results = tool_results(&out.messages);
    let error: Value = serde_json::from_str(&results[0].1).unwrap();
    assert_eq!(error["error"]["category"], TOOL_ARGUMENTS_INVALID.as_str());
    assert!(error["error"]["message"].as_str().unwrap().contains("JSON"));
    assert_eq!(count(&adds), 0);
    assert_eq!(out.final_answer().as_deref(), Some("sorry"));
}
