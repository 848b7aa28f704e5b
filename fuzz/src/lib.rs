//! What the fuzz targets share: the providers and calls the LLM targets decode
//! against, the checks every decoded answer must pass, and the router the HTTP
//! target serves. See `fuzz/README.md`.
//!
//! A fuzz target asserts with `assert!` / `panic!`: a failed property is a crash
//! libFuzzer reports and minimizes, exactly like a panic in the product code.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod app;
pub mod llm;
pub mod stream;

/// Splits `data` at its first NUL byte: `(before, after)` (`after` empty without
/// one). The targets whose input has several parts use it, so a seed is the parts
/// joined with a NUL.
pub fn split_nul(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|b| *b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &[]),
    }
}

/// The first byte (a selector; `0` for an empty input) and the rest.
pub fn selector(data: &[u8]) -> (u8, &[u8]) {
    match data.split_first() {
        Some((first, rest)) => (*first, rest),
        None => (0, data),
    }
}
