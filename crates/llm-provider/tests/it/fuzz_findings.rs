//! Regression tests for what the fuzz targets (`fuzz/` in the repository) found, each
//! with the input that found it, through the same network-free decoding paths
//! (`decode_reply`, `decode_stream`).

use openarmature_http::Reply;
use openarmature_llm::{
    CompletionRequest, DeltaKind, ErrorCategory, GeminiProvider, LlmError, Message, OpenAiProvider,
    Response, WireRequest,
};
use reqwest::header::HeaderMap;
use serde_json::json;

fn ask() -> CompletionRequest {
    CompletionRequest::new(vec![Message::user("What is the weather in Paris?")])
}

fn gemini_reply(body: &serde_json::Value) -> Result<Response, LlmError> {
    let provider = GeminiProvider::builder("m")
        .base_url("http://127.0.0.1:9/v1beta")
        .build()
        .unwrap();
    let request = ask();
    let wire = WireRequest::of(&request, &request.messages, &request.config);
    let reply = Reply::new(200, HeaderMap::new(), serde_json::to_vec(body).unwrap());
    provider.decode_reply(&wire, &reply)
}

/// Found by `gemini_reply`: without a `finishReason` (read as `error`, so leniently)
/// a `functionCall` part turned the response into `tool_calls` *after* the lenient
/// read, so a call to a tool the request never declared was returned unchecked. A
/// `functionCall` part makes the finish reason `tool_calls` whatever the raw value,
/// and a non-error response's calls are checked (§3).
#[test]
fn gemini_a_call_to_an_undeclared_tool_is_refused_whatever_the_raw_finish_reason() {
    for finish in [
        None,
        Some("OTHER"),
        Some("MALFORMED_FUNCTION_CALL"),
        Some("finis0Reason"),
    ] {
        let mut candidate = json!({"content": {"role": "model", "parts": [
            {"text": "Let me check the weather.", "thought": true},
            {"functionCall": {"name": "get_weather", "id": "call_1", "args": {"location": "SF"}},
             "thoughtSignature": "sig-g1"}]}});
        if let Some(f) = finish {
            candidate["finishReason"] = json!(f);
        }
        let error = gemini_reply(&json!({"candidates": [candidate]})).unwrap_err();
        assert_eq!(
            error.category(),
            ErrorCategory::ProviderInvalidResponse,
            "{finish:?}: {error}"
        );
        assert!(
            error.to_string().contains("not one of the declared tools"),
            "{error}"
        );
    }
}

fn stream(pieces: &[&[u8]]) -> Result<Response, LlmError> {
    let provider = OpenAiProvider::builder("http://127.0.0.1:9/v1", "m")
        .build()
        .unwrap();
    let request = ask();
    let wire = WireRequest::of(&request, &request.messages, &request.config);
    provider.decode_stream(&wire, pieces, &|_: DeltaKind, _: &str| {})
}

fn outcome(result: &Result<Response, LlmError>) -> Result<&Response, ErrorCategory> {
    result.as_ref().map_err(LlmError::category)
}

/// Found by `openai_sse`: bytes after `data: [DONE]` that are not an event stream
/// failed the stream when they arrived in the same network read as `[DONE]`, and
/// were ignored when they arrived later. Each event is now handled before the next
/// line is decoded, and nothing after `[DONE]` is, so the cut does not matter.
#[test]
fn openai_stream_bytes_after_done_never_matter_however_the_body_is_cut() {
    let body: &[u8] = b"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n\xff\xfe not an event stream\n";
    let whole = stream(&[body]);
    assert_eq!(whole.as_ref().unwrap().content(), Some("hi"));
    for size in 1..=body.len() {
        let pieces: Vec<&[u8]> = body.chunks(size).collect();
        assert_eq!(
            outcome(&stream(&pieces)),
            outcome(&whole),
            "pieces of {size}"
        );
    }
}

/// Found by `openai_sse` (the input kept as found): a mid-stream error chunk followed,
/// in the same network read, by a line that is not UTF-8 failed as
/// `provider_invalid_response` (the whole read was decoded before any event was
/// handled), but as the error chunk's `provider_unavailable` when the read ended
/// between them. The stream's order decides now: the error chunk, however it is cut.
#[test]
fn openai_stream_outcome_does_not_depend_on_the_cut() {
    let body: &[u8] = include_bytes!("fuzz_sse_cut.bin");
    let whole = stream(&[body]);
    for size in 1..=64 {
        let pieces: Vec<&[u8]> = body.chunks(size).collect();
        let cut = stream(&pieces);
        assert_eq!(
            outcome(&cut),
            outcome(&whole),
            "pieces of {size}: {:?} / {:?}",
            cut.as_ref().err().map(ToString::to_string),
            whole.as_ref().err().map(ToString::to_string)
        );
    }
}

type Deltas = Vec<(DeltaKind, String)>;

/// An Anthropic stream of `events` (between a `message_start` and the closing
/// `message_delta` / `message_stop`) decoded as one piece: the outcome and the
/// deltas reported on the way.
fn anthropic_stream(events: &[serde_json::Value]) -> (Result<Response, LlmError>, Deltas) {
    let provider = openarmature_llm::AnthropicProvider::builder("m")
        .base_url("http://127.0.0.1:9/v1")
        .build()
        .unwrap();
    let request = ask().config(openarmature_llm::RuntimeConfig::default().max_tokens(64));
    let wire = WireRequest::of(&request, &request.messages, &request.config);
    let start = json!({"type": "message_start", "message": {"id": "m1", "type": "message",
        "role": "assistant", "model": "claude-test", "content": [],
        "stop_reason": null, "usage": {"input_tokens": 3, "output_tokens": 0}}});
    let end = [
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
               "usage": {"output_tokens": 1}}),
        json!({"type": "message_stop"}),
    ];
    let body: String = std::iter::once(&start)
        .chain(events)
        .chain(&end)
        .map(|e| format!("data: {e}\n\n"))
        .collect();
    let deltas = std::sync::Mutex::new(Vec::new());
    let sink = |kind: DeltaKind, text: &str| deltas.lock().unwrap().push((kind, text.to_owned()));
    let result = provider.decode_stream(&wire, &[body.as_bytes()], &sink);
    (result, deltas.into_inner().unwrap())
}

/// Found by `anthropic_sse`: a `content_block_start` carrying text already (the API
/// sends it empty, nothing promises it) put that text in the assembled response but
/// reported no delta for it, so a streaming consumer saw "ok" and the response said
/// "wok". The initial text (or thinking) is reported like a delta.
#[test]
fn anthropic_stream_deltas_add_up_to_the_text_when_a_block_starts_non_empty() {
    let (response, deltas) = anthropic_stream(&[
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "thinking", "thinking": "hm, "}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "thinking_delta", "thinking": "easy"}}),
        json!({"type": "content_block_start", "index": 1,
               "content_block": {"type": "text", "text": "w"}}),
        json!({"type": "content_block_delta", "index": 1,
               "delta": {"type": "text_delta", "text": "ok"}}),
    ]);
    let response = response.unwrap();
    let joined = |kind: DeltaKind| -> String {
        deltas
            .iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, t)| t.as_str())
            .collect()
    };
    assert_eq!(joined(DeltaKind::Content), "wok");
    assert_eq!(joined(DeltaKind::Reasoning), "hm, easy");
    let text = serde_json::to_value(&response.message).unwrap();
    assert!(text.to_string().contains("wok"), "{text}");
}

/// Found by `anthropic_sse`: `text_delta`s for a block of an unknown type ("tetx")
/// were reported to the caller while the assembled response dropped the block, so a
/// streaming consumer saw text the response did not have. A text or thinking delta
/// for a block of another type is `provider_invalid_response`.
#[test]
fn anthropic_a_text_delta_for_a_block_of_another_type_is_invalid() {
    let (result, deltas) = anthropic_stream(&[
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "tetx", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "text_delta", "text": "Hello"}}),
    ]);
    let error = result.unwrap_err();
    assert_eq!(error.category(), ErrorCategory::ProviderInvalidResponse);
    assert!(error.to_string().contains("tetx"), "{error}");
    assert!(deltas.is_empty());
}
