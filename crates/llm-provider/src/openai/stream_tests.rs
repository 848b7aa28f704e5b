//! Unit tests of the §8.1.6 stream assembly (`stream.rs`).
use super::*;
use serde_json::json;

fn run(chunks: &[Value]) -> (Result<Response, LlmError>, crate::test_support::Deltas) {
    let events = chunks.iter().map(|c| SseEvent {
        event: None,
        data: c.as_str().map_or_else(|| c.to_string(), str::to_owned),
    });
    let (a, outcome, deltas) = crate::test_support::feed::<Assembler>(events);
    let prepared = Prepared {
        tools: Vec::new(),
        response_schema: None,
    };
    (outcome.and_then(|()| a.response(&prepared, None)), deltas)
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

    fn chunk() -> impl Strategy<Value = Value> {
        crate::test_support::json_value(
"choices delta content reasoning tool_calls function arguments index usage finish_reason error",
"stop tool_calls {\"a\": 1}",
)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn never_panics_on_arbitrary_chunks(chunks in prop::collection::vec(chunk(), 0..6)) {
            let _ = run(&chunks);
        }
    }
}
