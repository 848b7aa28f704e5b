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
//! - [`suite`] (spec: pipeline-utilities §10.1 / §10.13 / §10.15, sessions §5 / §8,
//!   suspension §8.5): one behaviour suite for every Checkpointer (checkpoints and
//!   paused-invocation records) and SessionStore backend, generic over a
//!   [`suite::Backend`] factory, so in-memory, SQLite and PostgreSQL are proven to
//!   behave the same;
//!   [`services`]: the switches of the real-server tests (`OPENARMATURE_TEST_*_URL`,
//!   `OPENARMATURE_REQUIRE_SERVICES`).
//! - [`graphs`]: graph shapes tests build again and again ([`graphs::single_node`]).
//! - [`observe`]: an observer recording every event it is delivered.
//! - [`workload`]: checkpoint save sequences the backends' benches replay (the saves
//!   of a fan-out, one per finished instance), and the linear graph of trivial nodes
//!   the per-step benches run.
//!
//! A test-support crate fails a test the way tests do: by panicking.
#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

mod clock;
pub mod graphs;
pub mod http;
pub mod observe;
pub mod services;
pub mod suite;
pub mod workload;

pub use clock::ManualClock;
pub use http::{Exchange, MockServer, Reply, Request, Script, Source};
