//! Integration tests of `openarmature-prompt`: one binary, one module per area, so
//! that linking does not dominate `cargo test`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod chat;
mod fallback_log;
mod filesystem;
mod group_scope;
mod manager;
mod render;
mod support;
