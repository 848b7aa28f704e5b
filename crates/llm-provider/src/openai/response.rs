//! Spec: llm-provider §8.1.2 (response mapping), §8.1.5.2 (structured output), §3
//! *Validation under `finish_reason: "error"`* and §7 *Malformed usage counter*.
//!
//! Parsing never panics and never trusts the body: anything that is not the §6
//! shape is `provider_invalid_response`; a malformed usage counter is only "not
//! reported".

use serde_json::{Map, Value};

use crate::error::LlmError;
use crate::message::{AssistantMessage, Content, ToolCall};
use crate::response::{counter, invalid, json_body, Answer, FinishReason, Response, Usage};
use crate::schema::describe_violations;
use crate::validate::Prepared;

/// Where the answer's id and model stand.
const IDS: (&str, &str) = ("id", "model");

/// Maps a 2xx body to a [`Response`] (or `structured_output_invalid`): a plain
/// answer is read from the text (`super::fast`), anything else from the body's value.
///
/// # Errors
/// `provider_invalid_response` for a body outside the §6 shape, or for a non-error
/// response whose tool calls do not match the declared tools;
/// `structured_output_invalid` for content that fails `response_schema`.
pub(crate) fn parse(
    body: Vec<u8>,
    prepared: &Prepared,
    response_schema: Option<&Value>,
) -> Result<Response, LlmError> {
    // The common answer straight from the text; anything else through the value.
    match super::fast::parse(body, prepared, response_schema) {
        Ok(response) => Ok(response),
        Err(body) => parse_value(json_body(&body)?, prepared, response_schema),
    }
}

/// [`parse`] for a body already decoded (a stream's assembled completion).
///
/// # Errors
/// As [`parse`].
pub(crate) fn parse_value(
    raw: Value,
    prepared: &Prepared,
    response_schema: Option<&Value>,
) -> Result<Response, LlmError> {
    let root = raw
        .as_object()
        .ok_or_else(|| invalid("response body is not a JSON object"))?;
    let Some(choices) = root.get("choices") else {
        let detail = root
            .get("error")
            .map(|e| {
                e.get("message")
                    .and_then(Value::as_str)
                    .map_or_else(|| e.to_string(), str::to_owned)
            })
            .map_or_else(String::new, |m| format!(" (error: {m})"));
        return Err(invalid(format!("response has no `choices`{detail}")));
    };
    let choice = choices
        .as_array()
        .and_then(|c| c.first())
        .and_then(Value::as_object)
        .ok_or_else(|| invalid("`choices` must be a non-empty list of objects"))?;
    let finish_reason = finish_reason(choice.get("finish_reason").and_then(Value::as_str));
    let lenient = finish_reason == FinishReason::Error;
    let message = choice
        .get("message")
        .and_then(Value::as_object)
        .ok_or_else(|| invalid("`choices[0].message` must be an object"))?;
    match message.get("role") {
        None | Some(Value::Null) => {}
        Some(Value::String(r)) if r == "assistant" => {}
        Some(other) => {
            return Err(invalid(format!(
                "`choices[0].message.role` must be \"assistant\", got {other}"
            )))
        }
    }
    let content = match message.get("content") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(Content::Text(s.clone())),
        Some(Value::Array(parts)) => Some(Content::Text(text_parts(parts)?)),
        Some(other) => {
            return Err(invalid(format!(
                "`choices[0].message.content` must be a string or null, got {other}"
            )))
        }
    };
    let tool_calls = match message.get("tool_calls") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(calls)) => calls
            .iter()
            .enumerate()
            .map(|(i, c)| tool_call(i, c, prepared, lenient))
            .collect::<Result<_, _>>()?,
        Some(_) if lenient => Vec::new(),
        Some(other) => {
            return Err(invalid(format!(
                "`choices[0].message.tool_calls` must be a list, got {other}"
            )))
        }
    };
    let usage = usage(root.get("usage"));
    let message = AssistantMessage {
        content,
        tool_calls,
    };

    let parsed = Answer::new(&raw, IDS, finish_reason, usage).structured(
        prepared,
        response_schema,
        &message,
    )?;
    Ok(Response::new(message, finish_reason, usage, raw, parsed))
}

/// §8.1.2 `finish_reason`: the wire's value mapped; an unknown or absent value is
/// `error` (read leniently).
pub(super) fn finish_reason(wire: Option<&str>) -> FinishReason {
    match wire {
        Some("stop") => FinishReason::Stop,
        Some("length") => FinishReason::Length,
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        Some("content_filter") => FinishReason::ContentFilter,
        _ => FinishReason::Error,
    }
}

/// Content given as an array of `{type: "text", text}` parts, concatenated.
fn text_parts(parts: &[Value]) -> Result<String, LlmError> {
    let mut out = String::new();
    for part in parts {
        match part.get("text").and_then(Value::as_str) {
            Some(t) if part.get("type").and_then(Value::as_str) == Some("text") => out.push_str(t),
            _ => {
                return Err(invalid(
                    "`choices[0].message.content` parts must be {type: \"text\", text}",
                ))
            }
        }
    }
    Ok(out)
}

/// One wire tool call. Under `finish_reason: "error"` everything that can be read is
/// surfaced (unparseable arguments become `None`); otherwise the call must be
/// well-formed, name a declared tool and match its parameters schema.
fn tool_call(
    i: usize,
    call: &Value,
    prepared: &Prepared,
    lenient: bool,
) -> Result<ToolCall, LlmError> {
    let at = |what: &str| invalid(format!("`tool_calls[{i}]`: {what}"));
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_owned);
    let function = call.get("function");
    let id = text(call.get("id"));
    let name = text(function.and_then(|f| f.get("name")));
    let raw_arguments = function.and_then(|f| f.get("arguments"));
    let arguments: Option<Map<String, Value>> = match raw_arguments {
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => Some(m),
            _ => None,
        },
        Some(Value::Object(m)) => Some(m.clone()),
        _ => None,
    };
    if lenient {
        return Ok(ToolCall {
            id: id.unwrap_or_default(),
            name: name.unwrap_or_default(),
            arguments,
            signature: None,
        });
    }
    let id = id
        .filter(|s| !s.is_empty())
        .ok_or_else(|| at("missing `id`"))?;
    let name = name
        .filter(|s| !s.is_empty())
        .ok_or_else(|| at("missing `function.name`"))?;
    let arguments = arguments.ok_or_else(|| at("`function.arguments` is not a JSON object"))?;
    let validator = prepared
        .tool(&name)
        .ok_or_else(|| at(&format!("`{name}` is not one of the declared tools")))?;
    if let Some(violations) = describe_violations(validator, &Value::Object(arguments.clone())) {
        return Err(at(&format!(
            "arguments do not match the parameters of `{name}`: {violations}"
        )));
    }
    Ok(ToolCall {
        id,
        name,
        arguments: Some(arguments),
        signature: None,
    })
}

/// §8.1.2 usage: `prompt_tokens`, `completion_tokens`, `total_tokens`, and
/// `prompt_tokens_details.cached_tokens`; absent usage is all-`None`.
fn usage(v: Option<&Value>) -> Usage {
    let Some(Value::Object(u)) = v else {
        return Usage::default();
    };
    Usage {
        prompt_tokens: counter(u.get("prompt_tokens")),
        completion_tokens: counter(u.get("completion_tokens")),
        total_tokens: counter(u.get("total_tokens")),
        cached_tokens: counter(
            u.get("prompt_tokens_details")
                .and_then(|d| d.get("cached_tokens")),
        ),
        cache_creation_tokens: None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn prepared() -> Prepared {
        crate::test_support::prepared(None)
    }

    fn body(v: Value) -> Vec<u8> {
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn maps_the_happy_path_and_counters() {
        let r = parse(
            body(
                json!({"id": "x", "choices": [{"message": {"role": "assistant", "content": "hi"},
                "finish_reason": "stop"}], "usage": {"prompt_tokens": "abc", "completion_tokens": 5,
                "total_tokens": true, "prompt_tokens_details": {"cached_tokens": 0}}}),
            ),
            &prepared(),
            None,
        )
        .unwrap();
        assert_eq!(r.content(), Some("hi"));
        assert_eq!(
            crate::test_support::token_counts(&r.usage),
            [None, Some(5), None, Some(0)]
        );
        assert_eq!(r.raw["usage"]["prompt_tokens"], "abc");
    }

    #[test]
    fn tool_calls_strict_and_lenient() {
        let with = |args: &str, finish: &str| {
            parse(
                body(
                    json!({"choices": [{"message": {"role": "assistant", "content": null,
                    "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get", "arguments": args}}]},
                    "finish_reason": finish}]}),
                ),
                &prepared(),
                None,
            )
        };
        assert!(with(r#"{"city":"B"}"#, "tool_calls").is_ok());
        assert_eq!(
            with(r#"{"city":"B","x":1}"#, "tool_calls")
                .unwrap_err()
                .category()
                .as_str(),
            "provider_invalid_response"
        );
        assert_eq!(
            with(r#"{"city":"#, "error").unwrap().message.tool_calls[0].arguments,
            None
        );
        assert_eq!(
            with(r#"{"city":"B","x":1}"#, "error")
                .unwrap()
                .finish_reason,
            FinishReason::Error
        );
    }

    #[test]
    fn rejects_bad_shapes() {
        for bad in [
            json!([]),
            json!({"id": "x"}),
            json!({"choices": []}),
            json!({"choices": [{"message": 3}]}),
            json!({"choices": [{"message": {"content": 7}, "finish_reason": "stop"}]}),
            json!({"error": {"message": "overloaded"}}),
        ] {
            let e = parse(body(bad.clone()), &prepared(), None).unwrap_err();
            assert_eq!(e.category().as_str(), "provider_invalid_response", "{bad}");
        }
        assert!(parse(b"{\"choices\": [".to_vec(), &prepared(), None).is_err());
    }

    mod props {
        use super::*;
        use proptest::prelude::*;

        fn json() -> impl Strategy<Value = Value> {
            crate::test_support::json_value(
"choices message content tool_calls function arguments name id usage finish_reason role prompt_tokens error",
"stop length tool_calls error function_call assistant get {\"city\":\"B\"} {\"name\":\"x\",\"age\":3} {",
)
        }

        /// Bodies shaped like chat completions, with arbitrary parts.
        fn completion_like() -> impl Strategy<Value = Value> {
            (json(), json(), json(), json(), json()).prop_map(|(content, calls, finish, usage, extra)| {
                serde_json::json!({
                    "id": "x", "choices": [{"message": {"role": "assistant", "content": content,
                        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "get", "arguments": calls}}, extra]},
                        "finish_reason": finish}],
                    "usage": usage
                })
            })
        }

        fn with_schema() -> Prepared {
            let mut p = prepared();
            p.response_schema = Some(
                crate::schema::compile(
                    &serde_json::json!({"type": "object",
                    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
                    "required": ["name", "age"]}),
                    "s",
                )
                .unwrap(),
            );
            p
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]

            #[test]
            fn never_panics_on_bytes(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
                let _ = parse(bytes.clone(), &prepared(), None);
                let _ = crate::openai::errors::from_status(500, &reqwest::header::HeaderMap::new(), &bytes);
            }

            #[test]
            fn never_panics_on_json(value in json()) {
                let bytes = serde_json::to_vec(&value).unwrap();
                let _ = parse(bytes.clone(), &prepared(), None);
            }

            #[test]
            fn never_panics_on_completion_shapes(value in completion_like(), status in 100u16..600) {
                let bytes = serde_json::to_vec(&value).unwrap();
                let schema = serde_json::json!({"type": "object"});
                if let Ok(r) = parse(bytes.clone(), &with_schema(), Some(&schema)) {
                    // A successful parse keeps the body verbatim.
                    prop_assert_eq!(&r.raw, &value);
                }
                let _ = parse(bytes.clone(), &prepared(), None);
                let _ = crate::openai::errors::from_status(status, &reqwest::header::HeaderMap::new(), &bytes);
            }
        }
    }
}
