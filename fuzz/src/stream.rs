//! The property every streamed-answer target checks, whatever the mapping: a Server-Sent
//! Events body decoded incrementally and assembled into a response, exactly as a
//! streamed `send()` reads it (the providers' `decode_stream`).
//!
//! Input: a call selector byte, a piece-size byte, then the body. Properties: the
//! outcome does not depend on how the body is cut into pieces (one piece, or pieces
//! of 1 to 64 bytes: the same response and deltas, or the same error category); the
//! reported deltas add up to the assembled text; the response passes the checks of
//! every decoded answer ([`crate::llm::check`]); an error has a §7 category (an
//! in-stream error event carries its own, so any of them).

use std::sync::Mutex;

use openarmature_llm::{
    Content, ContentBlock, DeltaKind, DeltaSink, ErrorCategory, LlmError, Response,
};

use crate::{llm, selector};

/// One mapping's streamed decoding path.
pub type Decode = fn(&llm::Call, &[&[u8]], &dyn DeltaSink) -> Result<Response, LlmError>;

type Deltas = Vec<(DeltaKind, String)>;

fn decode(decode: Decode, call: &llm::Call, pieces: &[&[u8]]) -> (Result<Response, LlmError>, Deltas) {
    let deltas = Mutex::new(Vec::new());
    let sink = |kind: DeltaKind, text: &str| {
        deltas.lock().unwrap().push((kind, text.to_owned()));
    };
    let result = decode(call, pieces, &sink);
    (result, deltas.into_inner().unwrap())
}

fn joined(deltas: &Deltas, kind: DeltaKind) -> String {
    deltas
        .iter()
        .filter(|(k, _)| *k == kind)
        .map(|(_, t)| t.as_str())
        .collect()
}

/// The assembled `(reasoning, content)` text of a response.
fn texts(response: &Response) -> (String, String) {
    match &response.message.content {
        None => (String::new(), String::new()),
        Some(Content::Text(text)) => (String::new(), text.clone()),
        Some(Content::Blocks(blocks)) => {
            let mut reasoning = String::new();
            let mut content = String::new();
            for block in blocks {
                match block {
                    ContentBlock::Thinking(t) => reasoning.push_str(&t.text),
                    ContentBlock::Text(t) => content.push_str(&t.text),
                    _ => {}
                }
            }
            (reasoning, content)
        }
    }
}

/// Runs the properties of the module docs on one fuzz input.
pub fn check(data: &[u8], decoder: Decode) {
    let (pick, rest) = selector(data);
    let (size, body) = selector(rest);
    let call = llm::call(pick);
    let (whole, whole_deltas) = decode(decoder, call, &[body]);
    match &whole {
        Ok(_) => llm::check(200, call, &whole),
        // A 2xx stream may still fail with any §7 category: cut before it completed
        // (`provider_unavailable`), or an in-stream error event carrying its own status.
        Err(error) => {
            assert!(
                ErrorCategory::ALL.contains(&error.category()),
                "a stream error outside the §7 categories: {error:?}"
            );
            let _ = format!("{error} {error:?}");
        }
    }
    let piece = usize::from(size % 64) + 1;
    let pieces: Vec<&[u8]> = body.chunks(piece).collect();
    let (cut, cut_deltas) = decode(decoder, call, &pieces);
    match (&whole, &cut) {
        (Ok(a), Ok(b)) => {
            assert_eq!(a, b, "the response depends on the piece boundaries");
            assert_eq!(
                whole_deltas, cut_deltas,
                "the deltas depend on the piece boundaries"
            );
        }
        (Err(a), Err(b)) => assert_eq!(
            a.category(),
            b.category(),
            "the error depends on the piece boundaries: {a} / {b}"
        ),
        _ => panic!(
            "one piece gave {:?}, pieces of {piece} gave {:?}",
            whole.as_ref().map(|_| "a response"),
            cut.as_ref().map(|_| "a response")
        ),
    }
    if let Ok(response) = &whole {
        let (reasoning, content) = texts(response);
        assert_eq!(joined(&whole_deltas, DeltaKind::Content), content);
        assert_eq!(joined(&whole_deltas, DeltaKind::Reasoning), reasoning);
    }
}
