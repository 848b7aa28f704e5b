//! Integration tests of `openarmature-graph`: one binary, one module per area
//! (the shared session fixtures in `session_support`), so that linking does not
//! dominate `cargo test`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod observe;
mod session_support;
mod support;

mod checkpoint;
mod compile_errors;
mod errors;
mod execution;
mod metadata;
mod middleware_seam;
mod observers_and_drain;
mod reducer_props;
mod session_migrations;
mod session_store;
mod sessions;
mod subgraphs;
mod suspension;
mod typed_state;
