//! The Gemini streamed answer (extension 0006: streamGenerateContent chunks, in-stream errors), through `GeminiProvider::decode_stream`. Input and properties:
//! [`openarmature_fuzz::stream`].
#![no_main]

use libfuzzer_sys::fuzz_target;
use openarmature_fuzz::{llm, stream};

fuzz_target!(|data: &[u8]| {
    stream::check(data, |call, pieces, sink| {
        llm::gemini(true).decode_stream(&call.wire(), pieces, sink)
    });
});
