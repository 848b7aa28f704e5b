//! The LLM targets' fixtures: one provider per mapping and structured-output path,
//! the calls an answer is decoded against, and the properties every decoded answer
//! must have.

use std::sync::LazyLock;

use openarmature_http::Reply;
use openarmature_llm::{
    AnthropicProvider, CompletionRequest, ErrorCategory, FinishReason, GeminiProvider, LlmError,
    Message, ModelCapabilities, OpenAiProvider, Response, RuntimeConfig, Tool, WireRequest,
};
use serde_json::{json, Value};

fn capabilities(native: bool) -> ModelCapabilities {
    let mut capabilities = ModelCapabilities::default();
    capabilities.supports_native_response_format = native;
    capabilities
}

static OPENAI: LazyLock<[OpenAiProvider; 2]> = LazyLock::new(|| {
    [true, false].map(|native| {
        OpenAiProvider::builder("http://127.0.0.1:9/v1", "m")
            .capabilities(capabilities(native))
            .build()
            .expect("an OpenAI provider")
    })
});

static ANTHROPIC: LazyLock<[AnthropicProvider; 2]> = LazyLock::new(|| {
    [true, false].map(|native| {
        AnthropicProvider::builder("m")
            .base_url("http://127.0.0.1:9/v1")
            .capabilities(capabilities(native))
            .build()
            .expect("an Anthropic provider")
    })
});

static GEMINI: LazyLock<[GeminiProvider; 2]> = LazyLock::new(|| {
    [true, false].map(|native| {
        GeminiProvider::builder("m")
            .base_url("http://127.0.0.1:9/v1beta")
            .capabilities(capabilities(native))
            .build()
            .expect("a Gemini provider")
    })
});

/// The OpenAI-compatible provider, native structured output or the prompt fallback.
pub fn openai(native: bool) -> &'static OpenAiProvider {
    &OPENAI[usize::from(!native)]
}

/// The Anthropic provider, native structured output or the tool-coercion fallback.
pub fn anthropic(native: bool) -> &'static AnthropicProvider {
    &ANTHROPIC[usize::from(!native)]
}

/// The Gemini provider, native structured output or the prompt fallback.
pub fn gemini(native: bool) -> &'static GeminiProvider {
    &GEMINI[usize::from(!native)]
}

/// A `complete()` call an answer is decoded against.
pub struct Call {
    request: CompletionRequest,
}

impl Call {
    /// The attempt view the providers decode against.
    pub fn wire(&self) -> WireRequest<'_> {
        WireRequest::of(&self.request, &self.request.messages, &self.request.config)
    }

    /// The plain call with `schema` as its `response_schema`.
    pub fn with_schema(schema: Value) -> Call {
        Call {
            request: plain().response_schema(schema),
        }
    }

    fn tools(&self) -> &[Tool] {
        &self.request.tools
    }

    fn schema(&self) -> Option<&Value> {
        self.request.response_schema.as_ref()
    }
}

fn plain() -> CompletionRequest {
    // `max_tokens`: the Anthropic mapping requires it (§8.2.1).
    CompletionRequest::new(vec![Message::user("What is the weather in Paris?")])
        .config(RuntimeConfig::default().max_tokens(256))
}

/// The declared tool (`get_weather(city: string)`).
pub fn weather_tool() -> Tool {
    Tool::new(
        "get_weather",
        "The weather in a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}},
               "required": ["city"], "additionalProperties": false}),
    )
}

/// The structured-output schema of the schema calls.
pub fn person_schema() -> Value {
    json!({"type": "object",
           "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
           "required": ["name", "age"], "additionalProperties": false})
}

static CALLS: LazyLock<[Call; 4]> = LazyLock::new(|| {
    let tools = || vec![weather_tool()];
    [
        plain(),
        plain().tools(tools()),
        plain().response_schema(person_schema()),
        plain().tools(tools()).response_schema(person_schema()),
    ]
    .map(|request| Call { request })
});

/// One of the four calls: plain, with a tool, with a `response_schema`, with both.
pub fn call(selector: u8) -> &'static Call {
    &CALLS[usize::from(selector % 4)]
}

/// The status an answer comes with: 2xx half the time, else an error status.
pub fn status(selector: u8) -> u16 {
    const ERRORS: [u16; 16] = [
        400, 401, 403, 404, 408, 409, 413, 422, 429, 499, 500, 502, 503, 504, 529, 302,
    ];
    if selector < 128 {
        200
    } else {
        ERRORS[usize::from(selector % 16)]
    }
}

/// An answer with no headers.
pub fn reply(status: u16, body: &[u8]) -> Reply {
    Reply::new(status, http::HeaderMap::new(), body.to_vec())
}

fn validates(schema: &Value, instance: &Value) -> bool {
    jsonschema::validator_for(schema).is_ok_and(|v| v.is_valid(instance))
}

/// The properties of a decoded answer, whatever the mapping:
///
/// - an error has a §7 category that fits the status (a 2xx body fails only as
///   `provider_invalid_response` or `structured_output_invalid`; an error status
///   never does), and formats;
/// - a response came from a 2xx answer; its tool calls (outside `finish_reason:
///   error`) name the declared tool with arguments matching its schema; its parsed
///   value matches the `response_schema`; its message survives the JSON round trip
///   a re-sent conversation takes.
pub fn check(status: u16, call: &Call, result: &Result<Response, LlmError>) {
    let success = (200..300).contains(&status);
    match result {
        Err(error) => check_error(success, error),
        Ok(response) => {
            assert!(success, "a {status} answer decoded as a response");
            check_response(call, response);
        }
    }
}

fn check_error(success: bool, error: &LlmError) {
    let category = error.category();
    let body_failure = matches!(
        category,
        ErrorCategory::ProviderInvalidResponse | ErrorCategory::StructuredOutputInvalid
    );
    assert_eq!(
        success,
        body_failure,
        "category {category:?} for a {} answer: {error}",
        if success { "2xx" } else { "non-2xx" }
    );
    let _ = format!("{error} {error:?}");
    if let LlmError::StructuredOutputInvalid(failure) = error {
        assert!(!failure.error_message.is_empty());
    }
}

fn check_response(call: &Call, response: &Response) {
    if response.finish_reason != FinishReason::Error {
        for tool_call in &response.message.tool_calls {
            let tool = call
                .tools()
                .iter()
                .find(|t| t.name == tool_call.name)
                .unwrap_or_else(|| panic!("undeclared tool `{}` accepted", tool_call.name));
            let arguments = Value::Object(tool_call.arguments.clone().expect("arguments"));
            assert!(
                validates(&tool.parameters, &arguments),
                "tool arguments {arguments} accepted against {}",
                tool.parameters
            );
        }
    }
    if let Some(parsed) = &response.parsed {
        let schema = call.schema().expect("a parsed value without a schema");
        assert!(
            validates(schema, parsed),
            "parsed {parsed} does not match {schema}"
        );
    }
    let message = Message::Assistant(response.message.clone());
    let again = Message::from_json(&message.to_json()).expect("the message re-reads");
    assert_eq!(again, message, "the message JSON round trip");
}

/// The body of the three `*_reply` targets: a status selector byte, a call
/// selector byte (its bit 2 picks the fallback structured-output path), then the
/// body, decoded by `decode(native, request, reply)` and checked.
pub fn reply_target(
    data: &[u8],
    decode: impl Fn(bool, &WireRequest<'_>, &Reply) -> Result<Response, LlmError>,
) {
    let (status, rest) = crate::selector(data);
    let (pick, body) = crate::selector(rest);
    let status = self::status(status);
    let call = self::call(pick);
    let result = decode(pick & 4 == 0, &call.wire(), &reply(status, body));
    check(status, call, &result);
}
