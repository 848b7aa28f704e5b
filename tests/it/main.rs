//! The facade's integration tests (one binary; one module per topic).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod chat_browser;
mod crash;
mod soak;
mod suspend_across_processes;
