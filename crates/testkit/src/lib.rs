//! # openarmature-testkit
//!
//! Dev-only test tools shared by the workspace's tests, benches and the conformance
//! adapter (never a dependency of a published crate's normal build):
//!
//! - [`ManualClock`]: a [`MonotonicClock`](openarmature_pipeline::MonotonicClock)
//!   that moves only when told, for deterministic tests of the time-based
//!   extensions (breaker cooldown, budget floor windows) over real sockets, where
//!   the runtime's paused clock cannot be used.
//! - [`http`]: the scripted HTTP/1.1 mock server ([`MockServer`], [`Script`],
//!   [`Reply`]) every crate's tests and the conformance adapter run against,
//!   instead of a hand-rolled TCP server each.

mod clock;
pub mod http;

pub use clock::ManualClock;
pub use http::{Exchange, MockServer, Reply, Request, Script, Source};
