//! Spec: prompt-management §3 `template_hash`, §3.1 chat `template_hash`, §4
//! `rendered_hash`, §13 determinism.
//!
//! Every hash is `sha256:` followed by 64 lowercase hex digits (the format of the
//! Python reference, so a text template hashes identically in both implementations):
//!
//! - a Text prompt: SHA-256 over the template's UTF-8 bytes;
//! - a Chat prompt: SHA-256 over the canonical JSON of its segments
//!   ([`crate::ChatSegment::to_json`]);
//! - a render: SHA-256 over the canonical JSON of the message list
//!   ([`openarmature_llm::Message::to_json`]: roles, string or block content, tool calls).
//!
//! Canonical JSON is compact (no whitespace), with object keys sorted at every depth and
//! non-ASCII text left unescaped.

use openarmature_llm::Message;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::chat::ChatSegment;

/// The prefix of every hash this crate computes.
pub const HASH_PREFIX: &str = "sha256:";

/// `sha256:<hex>` over `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(HASH_PREFIX.len() + 64);
    out.push_str(HASH_PREFIX);
    for byte in digest {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The canonical serialization of `value`: compact JSON with sorted keys (the same
/// canonical form llm-provider serializes wire bodies from).
pub fn canonical_json(value: &Value) -> String {
    openarmature_llm::schema::canonical_string(value)
}

/// The `template_hash` of a Text prompt's template.
pub fn text_template_hash(template: &str) -> String {
    sha256_hex(template.as_bytes())
}

/// The `template_hash` of a Chat prompt's segments (order, kind, role, content or block
/// sequence, placeholder names).
pub fn chat_template_hash(segments: &[ChatSegment]) -> String {
    let json = Value::Array(segments.iter().map(ChatSegment::to_json).collect());
    sha256_hex(canonical_json(&json).as_bytes())
}

/// The `rendered_hash` of a rendered message list.
pub fn rendered_hash(messages: &[Message]) -> String {
    let json = Value::Array(messages.iter().map(Message::to_json).collect());
    sha256_hex(canonical_json(&json).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn known_digest_and_format() {
        // SHA-256 of the empty string.
        assert_eq!(
            text_template_hash(""),
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(text_template_hash("x").len(), HASH_PREFIX.len() + 64);
    }

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let a = json!({"b": 1, "a": {"y": [1, {"d": 0, "c": "é"}], "x": null}});
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"x":null,"y":[1,{"c":"é","d":0}]},"b":1}"#
        );
    }

    #[test]
    fn chat_hash_tracks_structure() {
        let one = [ChatSegment::system("s"), ChatSegment::placeholder("h")];
        let same = [ChatSegment::system("s"), ChatSegment::placeholder("h")];
        let reordered = [ChatSegment::placeholder("h"), ChatSegment::system("s")];
        let role = [ChatSegment::user("s"), ChatSegment::placeholder("h")];
        assert_eq!(chat_template_hash(&one), chat_template_hash(&same));
        assert_ne!(chat_template_hash(&one), chat_template_hash(&reordered));
        assert_ne!(chat_template_hash(&one), chat_template_hash(&role));
    }
}
