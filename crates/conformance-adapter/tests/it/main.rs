//! The adapter's own integration tests (the fixture suite is the separate
//! `harness = false` target `tests/conformance.rs`): the LLM and observability runners
//! driven by hand-written cases, and the malformed-fixture errors. One binary, one module
//! per area, so that linking does not dominate `cargo test`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod check_tables;
mod failure_kinds;
mod llm_harness;
mod malformed_fixtures;
mod obs_harness;
mod probe;
mod retrieval_harness;
mod spec_pins;
