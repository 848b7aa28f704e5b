//! Integration tests of `openarmature-pipeline`: one binary, one module per area
//! (shared fixtures in `common`), so that linking does not dominate `cargo test`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

#[cfg(feature = "sqlite")]
mod backend_suite;
mod branches;
mod composition;
mod fan_out;
mod fan_out_dispatch;
mod fan_out_resume;
mod isolation;
mod metadata;
mod retry;
#[cfg(feature = "sqlite")]
mod sessions;
#[cfg(feature = "sqlite")]
mod sqlite_checkpoint;
mod suspension;
mod timing;
