//! # openarmature-testkit
//!
//! Dev-only test tools shared by the workspace's tests, benches and the conformance
//! adapter (never a dependency of a published crate's normal build):
//!
//! - [`ManualClock`]: a [`MonotonicClock`](openarmature_pipeline::MonotonicClock)
//!   that moves only when told, for deterministic tests of the time-based
//!   extensions (breaker cooldown, budget floor windows) over real sockets, where
//!   the runtime's paused clock cannot be used.

mod clock;

pub use clock::ManualClock;
