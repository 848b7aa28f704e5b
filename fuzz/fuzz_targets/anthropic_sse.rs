//! The Anthropic streamed answer (extension 0006: Messages events, tool-input fragments, in-stream errors), through `AnthropicProvider::decode_stream`. Input and properties:
//! [`openarmature_fuzz::stream`].
#![no_main]

use libfuzzer_sys::fuzz_target;
use openarmature_fuzz::{llm, stream};

fuzz_target!(|data: &[u8]| {
    stream::check(data, |call, pieces, sink| {
        llm::anthropic(true).decode_stream(&call.wire(), pieces, sink)
    });
});
