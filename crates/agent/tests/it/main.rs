//! Integration tests of the agent loop against a scripted in-process model.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod approval;
mod arguments;
mod durable;
mod embed;
mod loop_;
mod spans;
mod support;
