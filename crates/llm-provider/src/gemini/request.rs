//! Spec: llm-provider §8.3.1 (request mapping; parts §8.3.1.1; `tool` role
//! §8.3.1.2), §8.3.5 (structured output, fallback §8.3.5.1), §6 *Managed-field
//! collision* and §8 *Intra-impl wire-byte stability*.
//!
//! The body is built as a JSON tree and serialized with every object's keys sorted
//! recursively (arrays keep the caller's order), so structurally equal inputs give
//! byte-identical bodies. The bound model is not a body field: it is the URL path.

use serde_json::{json, Map, Value};

use crate::error::LlmError;
use crate::message::{
    system_prompt, Content, ContentBlock, ImageBlock, ImageSource, Message, ToolCall,
};
use crate::openai::StructuredOutputPath;
use crate::provider::WireRequest;
use crate::schema::{self, json_equal, Canonical};
use crate::tool::ToolChoice;

/// Declared scalar fields and their `generationConfig` wire names, managed while set
/// (the non-additive arm: an equal extras value is a no-op, another one a conflict).
const SCALARS: [(&str, &str); 6] = [
    ("temperature", "temperature"),
    ("top_p", "topP"),
    ("max_tokens", "maxOutputTokens"),
    ("seed", "seed"),
    ("frequency_penalty", "frequencyPenalty"),
    ("presence_penalty", "presencePenalty"),
];

/// The wire name realizing `stop_sequences` (the additive, merged arm).
const STOP: &str = "stopSequences";

/// Builds the canonical request body bytes for one attempt.
///
/// # Errors
/// `provider_invalid_request` on a managed-field conflict or an image whose media
/// type cannot be determined.
pub(crate) fn body(
    request: &WireRequest<'_>,
    path: StructuredOutputPath,
    fallback_directive: &str,
) -> Result<Vec<u8>, LlmError> {
    let mut root = Map::with_capacity(6);

    let directive = request
        .response_schema
        .filter(|_| path == StructuredOutputPath::PromptFallback)
        .map(|schema| schema::directive(fallback_directive, schema));
    if let Some(system) = system_prompt(request.messages, directive.as_deref()) {
        root.insert(
            "systemInstruction".into(),
            json!({"parts": [{"text": system}]}),
        );
    }
    root.insert("contents".into(), Value::Array(contents(request.messages)?));

    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "parameters": t.parameters}))
            .collect();
        root.insert(
            "tools".into(),
            json!([{ "functionDeclarations": declarations }]),
        );
    }
    if let Some(choice) = request.tool_choice {
        let config = match choice {
            ToolChoice::Auto => json!({"mode": "AUTO"}),
            ToolChoice::Required => json!({"mode": "ANY"}),
            ToolChoice::None => json!({"mode": "NONE"}),
            ToolChoice::Tool { name } => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
        };
        root.insert(
            "toolConfig".into(),
            json!({ "functionCallingConfig": config }),
        );
    }

    let generation = generation_config(request, path)?;
    if !generation.is_empty() {
        root.insert("generationConfig".into(), Value::Object(generation));
    }

    let mut out = Vec::with_capacity(512);
    let root = Value::Object(root);
    serde_json::to_writer(&mut out, &Canonical(&root))
        .map(|()| out)
        .map_err(|e| {
            LlmError::invalid_request(format!("cannot encode the request: {e}")).with_source(e)
        })
}

/// `generationConfig`: the declared fields under their wire names, the native
/// structured-output keys, then the extras (§6 *Managed-field collision*).
fn generation_config(
    request: &WireRequest<'_>,
    path: StructuredOutputPath,
) -> Result<Map<String, Value>, LlmError> {
    let mut out = Map::new();
    let mut declared = request.config.declared_params();
    for (name, wire) in SCALARS {
        if let Some(v) = declared.remove(name) {
            out.insert(wire.to_owned(), v);
        }
    }
    if let Some(stop) = &request.config.stop_sequences {
        out.insert(STOP.into(), Value::from(stop.clone()));
    }
    if let (Some(schema), StructuredOutputPath::Native) = (request.response_schema, path) {
        out.insert("responseMimeType".into(), Value::from("application/json"));
        out.insert("responseJsonSchema".into(), schema.clone());
    }
    // Every key already in `out` is managed: it is set by the call right now.
    for (key, value) in &request.config.extras {
        if !out.contains_key(key) {
            out.insert(key.clone(), value.clone());
        } else if key == STOP {
            merge_stop(&mut out, value);
        } else if out.get(key).is_some_and(|ours| !json_equal(ours, value)) {
            return Err(LlmError::invalid_request(format!(
                "config extras `{key}` conflicts with the generationConfig value the Gemini mapping manages"
            )));
        }
    }
    Ok(out)
}

/// The additive arm for `stopSequences`: declared values first, then the caller's,
/// de-duplicated (first occurrence wins). Gemini's field is array-only, so anything
/// but a list of strings is malformed and ignored whole.
fn merge_stop(out: &mut Map<String, Value>, extra: &Value) {
    let Some(extra) = extra
        .as_array()
        .and_then(|items| items.iter().all(Value::is_string).then_some(items))
    else {
        return;
    };
    let Some(Value::Array(merged)) = out.get_mut(STOP) else {
        return;
    };
    for item in extra {
        if !merged.contains(item) {
            merged.push(item.clone());
        }
    }
}

/// The `contents` list: system messages removed, `assistant` as `model`, and each
/// run of consecutive `tool` messages collapsed into one `user` entry of
/// `functionResponse` parts (§8.3.1.2).
fn contents(messages: &[Message]) -> Result<Vec<Value>, LlmError> {
    let mut out: Vec<Value> = Vec::with_capacity(messages.len());
    let mut responses: Vec<Value> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        if let Message::Tool(t) = message {
            let name = tool_name(&messages[..i], &t.tool_call_id).unwrap_or_default();
            responses.push(json!({"functionResponse": {
                "name": name, "id": t.tool_call_id, "response": {"result": t.content}}}));
            continue;
        }
        if !responses.is_empty() {
            out.push(json!({"role": "user", "parts": std::mem::take(&mut responses)}));
        }
        match message {
            Message::User(u) => out.push(json!({"role": "user", "parts": user_parts(&u.content)?})),
            Message::Assistant(a) => {
                let mut parts = a.content.as_ref().map_or_else(Vec::new, model_parts);
                parts.extend(a.tool_calls.iter().map(function_call));
                out.push(json!({"role": "model", "parts": parts}));
            }
            Message::System(_) | Message::Tool(_) => {}
        }
    }
    if !responses.is_empty() {
        out.push(json!({"role": "user", "parts": responses}));
    }
    Ok(out)
}

/// The name of the latest earlier tool call with id `id`.
fn tool_name<'a>(earlier: &'a [Message], id: &str) -> Option<&'a str> {
    earlier.iter().rev().find_map(|m| match m {
        Message::Assistant(a) => a
            .tool_calls
            .iter()
            .find(|c| c.id == id)
            .map(|c| c.name.as_str()),
        _ => None,
    })
}

fn user_parts(content: &Content) -> Result<Vec<Value>, LlmError> {
    match content {
        Content::Text(t) => Ok(vec![json!({ "text": t })]),
        Content::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(Ok(text_part(&t.text, t.signature.as_deref()))),
                ContentBlock::Image(image) => Some(image_part(image)),
                ContentBlock::Thinking(_) | ContentBlock::RedactedThinking(_) => None,
            })
            .collect(),
    }
}

/// Assistant content as `model` parts: text (with its signature), thinking as a
/// `thought: true` text part; redacted thinking has no Gemini form and is dropped.
fn model_parts(content: &Content) -> Vec<Value> {
    match content {
        Content::Text(t) if t.is_empty() => Vec::new(),
        Content::Text(t) => vec![json!({ "text": t })],
        Content::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(text_part(&t.text, t.signature.as_deref())),
                ContentBlock::Thinking(t) => {
                    let mut part = text_part(&t.text, t.signature.as_deref());
                    if let Value::Object(map) = &mut part {
                        map.insert("thought".into(), Value::Bool(true));
                    }
                    Some(part)
                }
                ContentBlock::Image(_) | ContentBlock::RedactedThinking(_) => None,
            })
            .collect(),
    }
}

/// `{text}`, plus `thoughtSignature` only for a non-empty signature.
fn text_part(text: &str, signature: Option<&str>) -> Value {
    let mut part = Map::new();
    part.insert("text".into(), Value::from(text));
    with_signature(&mut part, signature);
    Value::Object(part)
}

fn with_signature(part: &mut Map<String, Value>, signature: Option<&str>) {
    if let Some(sig) = signature.filter(|s| !s.is_empty()) {
        part.insert("thoughtSignature".into(), Value::from(sig));
    }
}

fn function_call(call: &ToolCall) -> Value {
    let args = call.arguments.clone().unwrap_or_default();
    let mut part = Map::new();
    part.insert(
        "functionCall".into(),
        json!({"name": call.name, "id": call.id, "args": args}),
    );
    with_signature(&mut part, call.signature.as_deref());
    Value::Object(part)
}

/// §8.3.1.1 images: inline → `inlineData`; a `data:` URL → `inlineData` too; any
/// other URL → `fileData` with the media type given, else inferred from the URL's
/// extension. `detail` is dropped.
fn image_part(image: &ImageBlock) -> Result<Value, LlmError> {
    match &image.source {
        ImageSource::Inline { base64_data } => Ok(json!({"inlineData": {
            "mimeType": image.media_type.as_deref().unwrap_or_default(), "data": base64_data}})),
        ImageSource::Url { url } => {
            if let Some((mime, data)) = data_url(url) {
                return Ok(json!({"inlineData": {"mimeType": mime, "data": data}}));
            }
            let mime = image
                .media_type
                .as_deref()
                .filter(|m| !m.is_empty())
                .or_else(|| infer_media_type(url))
                .ok_or_else(|| {
                    LlmError::invalid_request(format!(
                        "cannot infer the media type of image URL `{url}` (Gemini's fileData needs one): set media_type"
                    ))
                })?;
            Ok(json!({"fileData": {"mimeType": mime, "fileUri": url}}))
        }
    }
}

/// `data:<mime>;base64,<data>` split into its media type and data.
fn data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (head, data) = rest.split_once(',')?;
    let mime = head.strip_suffix(";base64")?;
    (!mime.is_empty() && !data.is_empty()).then_some((mime, data))
}

/// The image media type a URL's path extension names.
fn infer_media_type(url: &str) -> Option<&'static str> {
    let path = url.split(['?', '#']).next().unwrap_or(url);
    let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "jpg" | "jpeg" => "image/jpeg",
        "png" => "image/png",
        "webp" => "image/webp",
        "gif" => "image/gif",
        "heic" => "image/heic",
        "heif" => "image/heif",
        _ => return None,
    })
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
