//! The OpenAI-compatible streamed answer (§8.1.6: SSE decoder, chunk assembly), through `OpenAiProvider::decode_stream`. Input and properties:
//! [`openarmature_fuzz::stream`].
#![no_main]

use libfuzzer_sys::fuzz_target;
use openarmature_fuzz::{llm, stream};

fuzz_target!(|data: &[u8]| {
    stream::check(data, |call, pieces, sink| {
        llm::openai(true).decode_stream(&call.wire(), pieces, sink)
    });
});
