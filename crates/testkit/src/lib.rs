//! # openarmature-testkit
//!
//! Spec: pipeline-utilities §10.1 / §10.13, sessions §5 / §8 — test support shared by
//! the backend crates (not published):
//!
//! - [`suite`]: one behaviour suite for every Checkpointer and SessionStore backend,
//!   generic over a [`suite::Backend`] factory, so SQLite and PostgreSQL (and any later
//!   backend) are proven to behave the same by the same cases;
//! - [`services`]: the switches of the real-server tests (`OPENARMATURE_TEST_*_URL`,
//!   `OPENARMATURE_REQUIRE_SERVICES`).
//!
//! A test-support crate fails a test the way tests do: by panicking.
#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

pub mod services;
pub mod suite;
