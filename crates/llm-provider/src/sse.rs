//! Spec: llm-provider §8.1.6 *Wire* (and extension 0006 for the Anthropic and Gemini
//! streams) — an incremental Server-Sent Events decoder (the WHATWG event-stream
//! format: `field: value` lines, `\n` or `\r\n` line ends, a blank line dispatches the
//! event, `:` lines are comments, several `data` lines join with `\n`), and the read
//! loop every streaming mapping shares ([`read`]).
//!
//! Bytes arrive in arbitrary pieces; the decoder buffers a partial line and never
//! panics. Invalid UTF-8 in a line is `provider_invalid_response`; a line longer than
//! the decoder's cap too (a hostile server cannot grow the buffer without bound).

use openarmature_http::{HttpClient, TransportError};
use reqwest::header::HeaderMap;

use crate::error::LlmError;
use crate::stream::DeltaSink;

/// A mapping's stream state: fed one event at a time by [`read`].
pub(crate) trait Assemble: Send {
    /// Handles one event, reporting its text deltas to `sink`.
    ///
    /// # Errors
    /// The mapping's error for a malformed or error event.
    fn event(&mut self, event: &SseEvent, sink: &dyn DeltaSink) -> Result<(), LlmError>;

    /// Whether the stream's end marker was seen (reading stops there).
    fn is_done(&self) -> bool;

    /// Whether what was received forms a whole response (else a cut stream).
    fn completed(&self) -> bool;
}

/// One streamed wire exchange: sends `request`, maps a non-2xx answer with the
/// mapping's `on_error`, and [`read`]s a 2xx event stream into `assembler`.
///
/// # Errors
/// The transport's errors, `on_error`'s, and [`read`]'s.
pub(crate) async fn exchange(
    http: &HttpClient,
    request: reqwest::RequestBuilder,
    on_error: fn(u16, &HeaderMap, &[u8]) -> LlmError,
    assembler: &mut dyn Assemble,
    sink: &dyn DeltaSink,
) -> Result<(), LlmError> {
    let response = http.start(request).await?;
    if !response.status().is_success() {
        let reply = http.read(response).await?;
        return Err(on_error(reply.status, &reply.headers, &reply.body));
    }
    read(response, http.max_response_bytes(), assembler, sink).await
}

/// Reads a 2xx event-stream response to its end (or the assembler's end marker),
/// feeding `assembler` and reporting deltas to `sink`.
///
/// # Errors
/// `provider_unavailable` for a transport failure or a stream cut before it
/// completed; as [`SseReader`] otherwise.
async fn read(
    mut response: reqwest::Response,
    cap: usize,
    assembler: &mut dyn Assemble,
    sink: &dyn DeltaSink,
) -> Result<(), LlmError> {
    let mut reader = SseReader::new(cap);
    while !assembler.is_done() {
        let piece = response
            .chunk()
            .await
            .map_err(|e| LlmError::from(TransportError::from(e)))?;
        match piece {
            Some(piece) => reader.push(&piece, assembler, sink)?,
            None => break,
        }
    }
    reader.finish(assembler, sink)
}

/// What a stream arriving in `pieces` makes of `assembler`: [`read`] without a
/// network (the providers' `decode_stream`, the fuzz targets' entry point).
///
/// # Errors
/// As [`SseReader`].
pub(crate) fn decode(
    pieces: &[&[u8]],
    cap: usize,
    assembler: &mut dyn Assemble,
    sink: &dyn DeltaSink,
) -> Result<(), LlmError> {
    let mut reader = SseReader::new(cap);
    for piece in pieces {
        if assembler.is_done() {
            break;
        }
        reader.push(piece, assembler, sink)?;
    }
    reader.finish(assembler, sink)
}

/// The incremental reading of one 2xx event stream: decoding, the size cap, and
/// feeding the assembler, piece by piece.
///
/// The outcome never depends on where the body was cut into pieces: each line is
/// decoded and its event handled before the next line is read, so the stream's own
/// order decides (an error event before a malformed line is the error; nothing
/// after the end marker is decoded).
pub(crate) struct SseReader {
    decoder: SseDecoder,
    events: Vec<SseEvent>,
    total: usize,
    cap: usize,
}

impl SseReader {
    /// A reader refusing a stream over `cap` bytes.
    pub(crate) fn new(cap: usize) -> Self {
        SseReader {
            decoder: SseDecoder::new(cap),
            events: Vec::new(),
            total: 0,
            cap,
        }
    }

    /// Feeds one piece of the body (ignored once the end marker was seen).
    ///
    /// # Errors
    /// `provider_invalid_response` for a malformed line or a stream over the cap;
    /// the assembler's errors.
    pub(crate) fn push(
        &mut self,
        piece: &[u8],
        assembler: &mut dyn Assemble,
        sink: &dyn DeltaSink,
    ) -> Result<(), LlmError> {
        self.total = self.total.saturating_add(piece.len());
        if self.total > self.cap {
            return Err(TransportError::too_large(self.cap).into());
        }
        for line in piece.split_inclusive(|b| *b == b'\n') {
            if assembler.is_done() {
                break;
            }
            self.decoder.push(line, &mut self.events)?;
            self.drain(assembler, sink)?;
        }
        Ok(())
    }

    /// The end of the body: a pending event is dispatched, then the stream must
    /// have completed.
    ///
    /// # Errors
    /// As [`SseReader::push`]; `provider_unavailable` for a stream that ended before
    /// the response was complete.
    pub(crate) fn finish(
        &mut self,
        assembler: &mut dyn Assemble,
        sink: &dyn DeltaSink,
    ) -> Result<(), LlmError> {
        if !assembler.is_done() {
            self.decoder.finish(&mut self.events)?;
            self.drain(assembler, sink)?;
        }
        if !assembler.completed() {
            return Err(LlmError::unavailable(
                "the stream ended before the response was complete",
            ));
        }
        Ok(())
    }

    fn drain(
        &mut self,
        assembler: &mut dyn Assemble,
        sink: &dyn DeltaSink,
    ) -> Result<(), LlmError> {
        for event in self.events.drain(..) {
            // Events after the end marker are ignored.
            if assembler.is_done() {
                break;
            }
            assembler.event(&event, sink)?;
        }
        Ok(())
    }
}

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event` field, if the event named one.
    pub(crate) event: Option<String>,
    /// The `data` lines, joined with `\n`.
    pub(crate) data: String,
}

/// The `data` of the event that ends an OpenAI-compatible stream (§8.1.6).
pub(crate) const DONE: &str = "[DONE]";

/// The incremental decoder.
#[derive(Debug)]
pub(crate) struct SseDecoder {
    line: Vec<u8>,
    data: Option<String>,
    event: Option<String>,
    max_line: usize,
}

impl SseDecoder {
    /// A decoder refusing lines longer than `max_line` bytes.
    pub(crate) fn new(max_line: usize) -> Self {
        SseDecoder {
            line: Vec::new(),
            data: None,
            event: None,
            max_line,
        }
    }

    /// Feeds `bytes`, appending every event they complete to `out`.
    ///
    /// # Errors
    /// `provider_invalid_response` for a non-UTF-8 or over-long line.
    pub(crate) fn push(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), LlmError> {
        let mut rest = bytes;
        while let Some(pos) = rest.iter().position(|b| *b == b'\n') {
            let (head, tail) = rest.split_at(pos);
            self.extend(head)?;
            rest = tail.get(1..).unwrap_or_default();
            let mut line = std::mem::take(&mut self.line);
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            self.line_done(&line, out)?;
            // Keep the allocation for the next line.
            line.clear();
            self.line = line;
        }
        self.extend(rest)
    }

    /// The end of the body: a final unterminated line and a pending event are
    /// dispatched (lenient: the stream's `[DONE]` may lack its blank line).
    ///
    /// # Errors
    /// As [`SseDecoder::push`].
    pub(crate) fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), LlmError> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.line_done(&line, out)?;
        }
        self.dispatch(out);
        Ok(())
    }

    fn extend(&mut self, bytes: &[u8]) -> Result<(), LlmError> {
        if self.line.len() + bytes.len() > self.max_line {
            return Err(LlmError::invalid_response(format!(
                "an event-stream line exceeds {} bytes",
                self.max_line
            )));
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if let Some(data) = self.data.take() {
            out.push(SseEvent { event, data });
        }
    }

    fn line_done(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), LlmError> {
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        let line = std::str::from_utf8(line).map_err(|e| {
            LlmError::invalid_response(format!("an event-stream line is not UTF-8: {e}"))
                .with_source(e)
        })?;
        if line.starts_with(':') {
            return Ok(());
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            "event" => self.event = Some(value.to_owned()),
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn decode(pieces: &[&[u8]]) -> Vec<SseEvent> {
        let mut d = SseDecoder::new(1024);
        let mut out = Vec::new();
        for p in pieces {
            d.push(p, &mut out).unwrap();
        }
        d.finish(&mut out).unwrap();
        out
    }

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn splits_events_across_arbitrary_piece_boundaries() {
        let body = b"data: {\"a\":1}\n\n: keep-alive\n\ndata: {\"b\":2}\r\n\r\ndata: [DONE]\n\n";
        let whole = decode(&[body]);
        assert_eq!(data(&whole), ["{\"a\":1}", "{\"b\":2}", "[DONE]"]);
        for cut in 0..body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(decode(&[a, b]), whole, "cut at {cut}");
        }
    }

    #[test]
    fn joins_data_lines_and_reads_event_names() {
        let events = decode(&[b"event: error\ndata:x\ndata: y\n\ndata\n\n"]);
        assert_eq!(events[0].event.as_deref(), Some("error"));
        assert_eq!(events[0].data, "x\ny");
        assert_eq!(events[1].data, "");
        // An unterminated final event is still dispatched.
        assert_eq!(data(&decode(&[b"data: [DONE]"])), ["[DONE]"]);
    }

    #[test]
    fn rejects_bad_lines_with_a_category() {
        let mut d = SseDecoder::new(8);
        let e = d.push(b"data: 0123456789", &mut Vec::new()).unwrap_err();
        assert_eq!(e.category().as_str(), "provider_invalid_response");
        let mut d = SseDecoder::new(64);
        let e = d.push(b"data: \xff\xfe\n", &mut Vec::new()).unwrap_err();
        assert_eq!(e.category().as_str(), "provider_invalid_response");
    }
}
