//! The harness's own integration tests (the spec's behaviour is covered by the
//! conformance fixtures in openarmature-conformance).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

mod coordinator;
mod handle_with;
