//! The facade's integration tests (one binary; one module per topic).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod browser;
mod chat_browser;
mod report_browser;
mod suspend_across_processes;
