//! The Gemini generateContent (§8.3.2 / §8.3.3) answer
//! decoding: a status and a body, decoded against one of four calls (plain, a
//! tool, a `response_schema`, both) on the native or fallback structured-output
//! path, exactly as `send()` decodes a reply ([`openarmature_fuzz::llm::reply_target`]).
#![no_main]

use libfuzzer_sys::fuzz_target;
use openarmature_fuzz::llm;

fuzz_target!(|data: &[u8]| {
    llm::reply_target(data, |native, request, reply| {
        llm::gemini(native).decode_reply(request, reply)
    });
});
