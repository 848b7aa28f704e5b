//! Structured output (§8.1.5 / §8.2.5 / §8.3.5): the model's content extracted and
//! validated against the call's `response_schema` by each mapping on each path
//! (OpenAI native and prompt fallback, Anthropic native and tool coercion, Gemini
//! native and prompt fallback), through the providers' `decode_reply`.
//!
//! Input: a selector byte (the mapping and path, and the schema: one of a few
//! realistic schemas, or, for selectors of 0xC0 and above, the JSON before the
//! first NUL), then the content. Properties: content accepted is the JSON it
//! says and matches the schema; content refused is `structured_output_invalid`
//! carrying it verbatim (or, for a schema that is not one, `provider_invalid_request`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use openarmature_fuzz::{llm, selector, split_nul};
use openarmature_llm::anthropic::SYNTHETIC_TOOL_NAME;
use openarmature_llm::{ErrorCategory, LlmError};
use serde_json::{json, Value};

fn schema(pick: u8) -> Value {
    match pick % 6 {
        0 => llm::person_schema(),
        1 => {
            json!({"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]+$"}},
                    "required": ["code"]})
        }
        2 => {
            json!({"type": "object", "properties": {"tags": {"type": "array", "items": {"enum": ["a", "b"]},
                    "minItems": 1, "uniqueItems": true}}})
        }
        3 => {
            json!({"type": "object", "properties": {"v": {"oneOf": [{"type": "integer"}, {"type": "null"}]}},
                    "required": ["v"], "additionalProperties": false})
        }
        4 => json!({"type": "object", "$defs": {"node": {"type": "object",
                    "properties": {"next": {"$ref": "#/$defs/node"}, "n": {"type": "number", "maximum": 10}}}},
                    "properties": {"root": {"$ref": "#/$defs/node"}}}),
        _ => json!({"type": "object", "additionalProperties": {"type": "string", "maxLength": 4}}),
    }
}

/// The 2xx body carrying `content` on path `path` (0..6).
fn body(path: u8, content: &str) -> Value {
    match path {
        0 | 1 => json!({"id": "c", "choices": [{"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": content}}]}),
        2 => json!({"type": "message", "role": "assistant", "stop_reason": "end_turn",
                 "content": [{"type": "text", "text": content}]}),
        3 => {
            let input = serde_json::from_str::<Value>(content).unwrap_or_else(|_| content.into());
            json!({"type": "message", "role": "assistant", "stop_reason": "tool_use",
                   "content": [{"type": "tool_use", "id": "t", "name": SYNTHETIC_TOOL_NAME, "input": input}]})
        }
        _ => json!({"candidates": [{"finishReason": "STOP",
                 "content": {"role": "model", "parts": [{"text": content}]}}]}),
    }
}

fuzz_target!(|data: &[u8]| {
    let (pick, rest) = selector(data);
    let (schema, content) = if pick >= 0xC0 {
        let (schema, content) = split_nul(rest);
        match serde_json::from_slice::<Value>(schema) {
            Ok(schema) => (schema, content),
            Err(_) => return,
        }
    } else {
        (schema(pick / 6), rest)
    };
    let content = String::from_utf8_lossy(content);
    let path = pick % 6;
    let call = llm::Call::with_schema(schema);
    let reply = llm::reply(200, &serde_json::to_vec(&body(path, &content)).unwrap());
    let request = call.wire();
    let native = path % 2 == 0;
    let result = match path {
        0 | 1 => llm::openai(native).decode_reply(&request, &reply),
        2 | 3 => llm::anthropic(native).decode_reply(&request, &reply),
        _ => llm::gemini(native).decode_reply(&request, &reply),
    };
    if !matches!(&result, Err(e) if e.category() == ErrorCategory::ProviderInvalidRequest) {
        llm::check(200, &call, &result);
    }
    let text_path = path != 3;
    let content_is_object = serde_json::from_str::<Value>(&content).is_ok_and(|v| v.is_object());
    match &result {
        Ok(response) => {
            let parsed = response
                .parsed
                .as_ref()
                .expect("a schema call's parsed value");
            if text_path {
                let said: Value = serde_json::from_str(&content).expect("accepted content is JSON");
                assert_eq!(parsed, &said, "the parsed value is the content's JSON");
            }
        }
        Err(LlmError::StructuredOutputInvalid(failure)) => {
            if text_path {
                assert_eq!(
                    failure.output_content, content,
                    "the refused content, verbatim"
                );
            }
            let _ = (failure.is_truncated(), failure.describe());
        }
        // Tool coercion carries the output as the synthetic tool's `input`, which
        // must be an object: anything else is a malformed answer.
        Err(other) if other.category() == ErrorCategory::ProviderInvalidRequest => {}
        Err(other) if path == 3 && !content_is_object => assert_eq!(
            other.category(),
            ErrorCategory::ProviderInvalidResponse,
            "{other}"
        ),
        Err(other) => assert_eq!(
            other.category(),
            ErrorCategory::ProviderInvalidRequest,
            "only a bad schema fails otherwise: {other}"
        ),
    }
});
