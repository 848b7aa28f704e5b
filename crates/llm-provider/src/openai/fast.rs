//! Spec: llm-provider §8.1.2 (response mapping) — the common answer, read straight
//! from the body's text.
//!
//! The general mapping ([`super::response::parse_value`]) builds the body's JSON value
//! and reads the answer from it. Most answers are plain: one choice (or the first of
//! several), string content or well-formed tool calls of declared tools, integer
//! counters. This module reads those with typed, borrowing deserializers that skip
//! every field they do not name, and keeps the text as the raw body, parsed only when
//! something reads it. On anything else it gives up and the general mapping runs, so
//! every error, every lenient reading and every message stays the general mapping's:
//! an answer this module returns is the one the general mapping returns for the body.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::message::{AssistantMessage, Content, ToolCall};
use crate::raw::{Ids, RawBody};
use crate::response::{structured_output, FinishReason, Response, Usage};
use crate::schema::describe_violations;
use crate::validate::Prepared;

/// The answer read from `body`, or `body` back when this module gives up on it.
pub(super) fn parse(
    body: Vec<u8>,
    prepared: &Prepared,
    response_schema: Option<&Value>,
) -> Result<Response, Vec<u8>> {
    let text = String::from_utf8(body).map_err(|e| e.into_bytes())?;
    match read(&text, prepared, response_schema) {
        Some((answer, ids)) => {
            let (message, finish_reason, usage, parsed) = answer;
            Ok(Response::new(
                message,
                finish_reason,
                usage,
                RawBody::lazy(text, ids),
                parsed,
            ))
        }
        None => Err(text.into_bytes()),
    }
}

/// An answer's parts (message, finish, usage, structured value), as
/// [`Response::new`] takes them.
type Parts = (AssistantMessage, FinishReason, Usage, Option<Value>);

/// The answer in `text`, if it is a plain one and its value would parse.
fn read(text: &str, prepared: &Prepared, response_schema: Option<&Value>) -> Option<(Parts, Ids)> {
    if !value_safe(text) {
        return None;
    }
    let wire: Wire<'_> = serde_json::from_str(text).ok()?;
    let ids = Ids {
        id: wire.id.or(wire.response_id).map(|s| s.into()),
        model: wire.model.or(wire.model_version).map(|s| s.into()),
    };
    let choice = wire.choices.0;
    let finish = super::response::finish_reason(choice.finish_reason.as_deref());
    if finish == FinishReason::Error {
        // `error` and unknown values are read leniently: the general mapping's.
        return None;
    }
    let message = choice.message.0;
    if message.role.is_some_and(|r| r != "assistant") {
        return None;
    }
    let tool_calls = match message.tool_calls {
        None => Vec::new(),
        Some(calls) => calls
            .into_iter()
            .map(|c| tool_call(c.0, prepared))
            .collect::<Option<_>>()?,
    };
    let message = AssistantMessage {
        content: message.content.map(|c| Content::Text(c.into_owned())),
        tool_calls,
    };
    let parsed = match structured_output(prepared, response_schema, finish, &message) {
        None => None,
        Some((_, Ok(value))) => Some(value),
        Some((_, Err(_))) => return None,
    };
    let usage = wire.usage.map_or_else(Usage::default, |u| u.0.usage());
    Some(((message, finish, usage, parsed), ids))
}

/// A well-formed call of a declared tool with arguments matching its schema.
fn tool_call(call: WireCall<'_>, prepared: &Prepared) -> Option<ToolCall> {
    let function = call.function?.0;
    let id = call.id.filter(|s| !s.is_empty())?;
    let name = function.name.filter(|s| !s.is_empty())?;
    let arguments = match serde_json::from_str::<Value>(&function.arguments?) {
        Ok(arguments @ Value::Object(_)) => arguments,
        _ => return None,
    };
    if describe_violations(prepared.tool(&name)?, &arguments).is_some() {
        return None;
    }
    let Value::Object(arguments) = arguments else {
        return None;
    };
    Some(ToolCall {
        id: id.into_owned(),
        name: name.into_owned(),
        arguments: Some(arguments),
        signature: None,
    })
}

/// Whether `serde_json` parses `text` into a [`Value`] whenever the typed reading
/// below accepts it. The typed reading skips the fields it does not name without
/// building them, and skipping is more lenient than building in three ways: an
/// escaped surrogate (`\ud800`) need not be paired, a number need not fit an `f64`,
/// and nesting is not limited (building stops at 128 levels). A text that could hit
/// one of them (a `\uD…` escape, an exponent of three or more digits, a run of 200
/// digits, 128 opening brackets) is left to the general mapping: a number overflows
/// an `f64` only past 308 integer digits plus exponent, which a two-digit exponent
/// reaches only after 209 digits.
fn value_safe(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut brackets = 0usize;
    let mut digits = 0usize;
    for (i, &b) in bytes.iter().enumerate() {
        if b.is_ascii_digit() {
            digits += 1;
            if digits >= 200 {
                return false;
            }
            continue;
        }
        match b {
            b'[' | b'{' => {
                brackets += 1;
                if brackets >= 128 {
                    return false;
                }
            }
            b'\\'
                if bytes.get(i + 1) == Some(&b'u')
                    && matches!(bytes.get(i + 2), Some(b'd' | b'D')) =>
            {
                return false;
            }
            b'e' | b'E' if digits > 0 => {
                let rest = &bytes[i + 1..];
                let rest = rest
                    .strip_prefix(b"-")
                    .or(rest.strip_prefix(b"+"))
                    .unwrap_or(rest);
                if rest.iter().take(3).filter(|c| c.is_ascii_digit()).count() >= 3 {
                    return false;
                }
            }
            _ => {}
        }
        digits = 0;
    }
    true
}

/// The parts of a chat-completions body the mapping reads.
#[derive(Deserialize)]
struct Wire<'a> {
    #[serde(borrow)]
    choices: FirstChoice<'a>,
    usage: Option<Object<WireUsage>>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "responseId")]
    response_id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(borrow, rename = "modelVersion")]
    model_version: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct WireChoice<'a> {
    #[serde(borrow)]
    message: Object<WireMessage<'a>>,
    #[serde(borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct WireMessage<'a> {
    #[serde(borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tool_calls: Option<Vec<Object<WireCall<'a>>>>,
}

#[derive(Deserialize)]
struct WireCall<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    function: Option<Object<WireFunction<'a>>>,
}

#[derive(Deserialize)]
struct WireFunction<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Counter,
    #[serde(default)]
    completion_tokens: Counter,
    #[serde(default)]
    total_tokens: Counter,
    prompt_tokens_details: Option<Object<WireDetails>>,
}

#[derive(Deserialize)]
struct WireDetails {
    #[serde(default)]
    cached_tokens: Counter,
}

impl WireUsage {
    fn usage(self) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens.0,
            completion_tokens: self.completion_tokens.0,
            total_tokens: self.total_tokens.0,
            cached_tokens: self.prompt_tokens_details.and_then(|d| d.0.cached_tokens.0),
            cache_creation_tokens: None,
        }
    }
}

/// A usage counter as [`crate::response::counter`] reads it: a non-negative integer,
/// anything else (a string, a boolean, a fraction, a negative, `null`) "not reported";
/// an object or a list is left to the general mapping.
#[derive(Default)]
struct Counter(Option<u64>);

impl<'de> Deserialize<'de> for Counter {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Reading;
        impl Visitor<'_> for Reading {
            type Value = Counter;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a counter")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Counter, E> {
                Ok(Counter(Some(v)))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Counter, E> {
                Ok(Counter(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Counter, E> {
                Ok(Counter(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Counter, E> {
                Ok(Counter(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Counter, E> {
                Ok(Counter(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Counter, E> {
                Ok(Counter(None))
            }
        }
        deserializer.deserialize_any(Reading)
    }
}

/// The first element of a non-empty list of choices (the rest skipped, whatever
/// they are, as the general mapping ignores them).
struct FirstChoice<'a>(WireChoice<'a>);

impl<'de: 'a, 'a> Deserialize<'de> for FirstChoice<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Reading<'a>(PhantomData<WireChoice<'a>>);
        impl<'de: 'a, 'a> Visitor<'de> for Reading<'a> {
            type Value = FirstChoice<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a non-empty list of choices")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FirstChoice<'a>, A::Error> {
                let first: Object<WireChoice<'a>> = seq
                    .next_element()?
                    .ok_or_else(|| de::Error::custom("no choices"))?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstChoice(first.0))
            }
        }
        deserializer.deserialize_seq(Reading(PhantomData))
    }
}

/// `T` read from a JSON object only: a derived struct also reads a list, by
/// position, where the general mapping accepts only an object.
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Reading<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Reading<T> {
            type Value = Object<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Object<T>, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map)).map(Object)
            }
        }
        deserializer.deserialize_map(Reading(PhantomData))
    }
}

#[cfg(test)]
#[path = "fast_tests.rs"]
mod tests;
