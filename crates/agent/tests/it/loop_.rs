//! The loop: a two-tool run to a final answer (with its tool events), the turn
//! limit, streaming, and configuration errors.

use openarmature_agent::{Agent, AgentError, Conversation, TURN_LIMIT_EXCEEDED};
use openarmature_graph::{category_of, find_in, InvokeOptions};
use openarmature_llm::Message;
use serde_json::json;

use crate::support::*;

fn start(text: &str) -> Conversation {
    Conversation::new(vec![Message::user(text)])
}

#[tokio::test]
async fn two_tools_run_in_order_and_the_model_answers_with_their_results() {
    let model = scripted(vec![
        calls(&[
            ("c1", "weather", json!({"city": "Paris"})),
            ("c2", "add", json!({"a": 2, "b": 40})),
        ]),
        answer("Sunny, and 42."),
    ]);
    let (adds, weathers) = (counter(), counter());
    let agent = Agent::builder(model.clone())
        .tool(weather_tool(&weathers))
        .tool(add_tool(&adds))
        .system("Be brief.")
        .build()
        .unwrap();
    let graph = agent.graph().unwrap();
    let (recorder, events) = tool_recorder();
    let done = graph
        .invoke_with(
            start("Weather and sum?"),
            InvokeOptions::default().observer(recorder),
        )
        .await
        .unwrap();
    graph.drain(None).await;

    assert_eq!(done.state.final_answer().as_deref(), Some("Sunny, and 42."));
    let results = tool_results(&done.state.messages);
    assert_eq!(
        results,
        vec![
            ("c1".to_owned(), "sunny in Paris".to_owned()),
            ("c2".to_owned(), r#"{"sum":42}"#.to_owned()),
        ]
    );
    assert_eq!((count(&weathers), count(&adds)), (1, 1));
    // The history: user, tool-calling assistant, two results, the answer.
    let roles: Vec<&str> = done.state.messages.iter().map(Message::role).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "tool", "assistant"]);

    let seen = model.requests();
    assert_eq!(seen.len(), 2, "one model call per turn");
    assert_eq!(seen[0].tools, ["weather", "add"]);
    assert_eq!(seen[0].messages[0], Message::system("Be brief."));
    assert_eq!(
        tool_results(&seen[1].messages).len(),
        2,
        "results reach the model"
    );

    let events = events.lock().unwrap().clone();
    assert_eq!(
        events,
        vec![
            (
                true,
                "weather".into(),
                Some("c1".into()),
                json!("sunny in Paris")
            ),
            (true, "add".into(), Some("c2".into()), json!({"sum": 42})),
        ]
    );
}

#[tokio::test]
async fn the_turn_limit_stops_a_model_that_never_answers() {
    let model = always(calls(&[("c", "add", json!({"a": 1, "b": 1}))]));
    let adds = counter();
    let agent = Agent::builder(model.clone())
        .tool(add_tool(&adds))
        .max_turns(3)
        .build()
        .unwrap();
    let err = agent
        .graph()
        .unwrap()
        .invoke(start("loop"))
        .await
        .unwrap_err();
    assert_eq!(model.requests().len(), 3, "exactly max_turns model calls");
    assert_eq!(count(&adds), 3);
    assert_eq!(category_of(err.cause()), Some(TURN_LIMIT_EXCEEDED));
    assert_eq!(
        find_in::<AgentError>(err.cause()),
        Some(&AgentError::TurnLimitExceeded { max_turns: 3 })
    );
    assert_eq!(err.node(), "agent");
    // The transcript so far is recoverable: three calls, three results.
    assert_eq!(tool_results(&err.recoverable_state().messages).len(), 3);
}

#[tokio::test]
async fn the_turn_count_restarts_at_each_user_message() {
    let model = scripted(vec![
        calls(&[("c1", "add", json!({"a": 1, "b": 1}))]),
        answer("2"),
    ]);
    let agent = Agent::builder(model)
        .tool(add_tool(&counter()))
        .max_turns(2)
        .build()
        .unwrap();
    // A long earlier exchange does not count against this request.
    let mut history = vec![Message::user("old")];
    history.extend((0..5).map(|_| Message::assistant("earlier")));
    history.push(Message::user("1+1"));
    let out = agent
        .graph()
        .unwrap()
        .invoke(Conversation::new(history))
        .await
        .unwrap();
    assert_eq!(out.final_answer().as_deref(), Some("2"));
}

#[tokio::test]
async fn bad_configuration_is_a_typed_error() {
    let dup = Agent::builder(scripted(vec![]))
        .tool(add_tool(&counter()))
        .tool(add_tool(&counter()))
        .build()
        .unwrap_err();
    assert!(matches!(dup, AgentError::Configuration(ref m) if m.contains("add")));
    let zero = Agent::builder(scripted(vec![])).max_turns(0).build();
    assert!(matches!(zero, Err(AgentError::Configuration(_))));
    let scalar = openarmature_agent::Tool::from_fn("n", "d", |n: i64, _ctx| async move {
        Ok::<_, openarmature_agent::ToolError>(n)
    });
    let err = Agent::builder(scripted(vec![]))
        .tool(scalar)
        .build()
        .unwrap_err();
    assert_eq!(
        openarmature_graph::Categorized::category(&err).map(|c| c.as_str()),
        Some("agent_configuration_invalid")
    );
}

#[tokio::test]
async fn model_calls_stream_only_when_asked() {
    for stream in [false, true] {
        let model = scripted(vec![answer("hi")]);
        let agent = Agent::builder(model.clone())
            .stream(stream)
            .build()
            .unwrap();
        let out = agent.graph().unwrap().invoke(start("hello")).await.unwrap();
        assert_eq!(out.final_answer().as_deref(), Some("hi"));
        assert_eq!(model.requests()[0].stream, stream);
    }
}
