//! Unit tests of the §8.1.6 stream assembly (`stream.rs`).
use super::*;
use serde_json::json;
use std::sync::Mutex;

fn run(chunks: &[Value]) -> (Result<Response, LlmError>, Vec<(DeltaKind, String)>) {
    let seen = Mutex::new(Vec::new());
    let sink = |k: DeltaKind, t: &str| seen.lock().unwrap().push((k, t.to_owned()));
    let mut a = Assembler::default();
    let mut outcome = Ok(());
    for c in chunks {
        let data = c.as_str().map_or_else(|| c.to_string(), str::to_owned);
        outcome = outcome.and_then(|()| a.event(&SseEvent { event: None, data }, &sink));
    }
    let prepared = Prepared {
        tools: Vec::new(),
        response_schema: None,
    };
    let result = outcome.and_then(|()| a.response(&prepared, None));
    (result, seen.into_inner().unwrap())
}

#[test]
fn usage_is_kept_verbatim_and_malformed_counters_are_not_reported() {
    let (r, deltas) = run(&[
        json!({"id": "x", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi."}, "finish_reason": "stop"}]}),
        json!({"id": "x", "choices": [], "usage": {"prompt_tokens": "abc", "completion_tokens": 3, "total_tokens": 10}}),
        json!("[DONE]"),
        json!({"choices": [{"delta": {"content": "ignored after [DONE]"}}]}),
    ]);
    let r = r.unwrap();
    assert_eq!(deltas, [(DeltaKind::Content, "Hi.".to_owned())]);
    assert_eq!(r.content(), Some("Hi."));
    assert_eq!(
        (r.usage.prompt_tokens, r.usage.completion_tokens),
        (None, Some(3))
    );
    assert_eq!(r.raw["usage"]["prompt_tokens"], "abc");
    assert_eq!(r.raw["id"], "x");
    assert_eq!(r.response_model(), Some("m"));
}

#[test]
fn reasoning_precedes_content_in_blocks_and_empty_deltas_are_skipped() {
    let (r, deltas) = run(&[
        json!({"choices": [{"index": 0, "delta": {"reasoning_content": "Let me "}}]}),
        json!({"choices": [{"index": 0, "delta": {"reasoning": "think."}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": ""}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "42"}, "finish_reason": "stop"}]}),
    ]);
    let r = r.unwrap();
    assert_eq!(deltas.len(), 3);
    assert_eq!(deltas[1], (DeltaKind::Reasoning, "think.".to_owned()));
    assert_eq!(r.message.text().as_deref(), Some("42"));
    let Some(Content::Blocks(blocks)) = &r.message.content else {
        panic!("blocks expected");
    };
    assert!(matches!(&blocks[0], ContentBlock::Thinking(t) if t.text == "Let me think."));
}

#[test]
fn error_chunks_take_the_category_of_their_code() {
    let (r, _) = run(&[json!({"error": {"code": 429, "message": "slow"}})]);
    assert_eq!(r.unwrap_err().category().as_str(), "provider_rate_limit");
    let (r, _) = run(&[json!({"error": "boom"})]);
    assert_eq!(r.unwrap_err().category().as_str(), "provider_unavailable");
}

mod props {
    use super::*;
    use proptest::prelude::*;

    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            ".{0,8}".prop_map(Value::from),
            prop_oneof![
                Just("stop"),
                Just("tool_calls"),
                Just("{\"a\":"),
                Just("1}")
            ]
            .prop_map(Value::from),
        ]
    }

    fn chunk() -> impl Strategy<Value = Value> {
        leaf().prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop_oneof![
                        Just("choices".to_owned()),
                        Just("delta".to_owned()),
                        Just("content".to_owned()),
                        Just("reasoning".to_owned()),
                        Just("tool_calls".to_owned()),
                        Just("function".to_owned()),
                        Just("arguments".to_owned()),
                        Just("index".to_owned()),
                        Just("usage".to_owned()),
                        Just("finish_reason".to_owned()),
                        Just("error".to_owned()),
                    ],
                    inner,
                    0..4,
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn never_panics_on_arbitrary_chunks(chunks in prop::collection::vec(chunk(), 0..6)) {
            let _ = run(&chunks);
        }
    }
}
