//! The OpenAI-compatible streamed answer (§8.1.6): a Server-Sent Events body decoded
//! incrementally and assembled into a response, exactly as a streamed `send()` reads
//! it (`OpenAiProvider::decode_stream`).
//!
//! Input: a call selector byte, a piece-size byte, then the body. Properties: the
//! outcome does not depend on how the body is cut into pieces (one piece, or pieces
//! of 1 to 64 bytes: the same response and deltas, or the same error category); the
//! reported deltas add up to the assembled text; the response passes the checks of
//! every decoded answer ([`openarmature_fuzz::llm::check`]).
#![no_main]

use std::sync::Mutex;

use libfuzzer_sys::fuzz_target;
use openarmature_fuzz::{llm, selector};
use openarmature_llm::{Content, ContentBlock, DeltaKind, ErrorCategory, LlmError, Response};

type Deltas = Vec<(DeltaKind, String)>;

fn decode(call: &llm::Call, pieces: &[&[u8]]) -> (Result<Response, LlmError>, Deltas) {
    let deltas = Mutex::new(Vec::new());
    let sink = |kind: DeltaKind, text: &str| {
        deltas.lock().unwrap().push((kind, text.to_owned()));
    };
    let result = llm::openai(true).decode_stream(&call.wire(), pieces, &sink);
    (result, deltas.into_inner().unwrap())
}

fn joined(deltas: &Deltas, kind: DeltaKind) -> String {
    deltas
        .iter()
        .filter(|(k, _)| *k == kind)
        .map(|(_, t)| t.as_str())
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let (pick, rest) = selector(data);
    let (size, body) = selector(rest);
    let call = llm::call(pick);
    let (whole, whole_deltas) = decode(call, &[body]);
    // A stream cut before it completed is `provider_unavailable` (it may be retried).
    if !matches!(&whole, Err(e) if e.category() == ErrorCategory::ProviderUnavailable) {
        llm::check(200, call, &whole);
    }
    let pieces: Vec<&[u8]> = body.chunks(usize::from(size % 64) + 1).collect();
    let (cut, cut_deltas) = decode(call, &pieces);
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
            "one piece gave {:?}, pieces of {} gave {:?}",
            whole.as_ref().map(|_| "a response"),
            usize::from(size % 64) + 1,
            cut.as_ref().map(|_| "a response")
        ),
    }
    if let Ok(response) = &whole {
        let (reasoning, content) = match &response.message.content {
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
        };
        assert_eq!(joined(&whole_deltas, DeltaKind::Content), content);
        assert_eq!(joined(&whole_deltas, DeltaKind::Reasoning), reasoning);
    }
});
