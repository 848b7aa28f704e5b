//! # openarmature-conformance
//!
//! Spec: conformance-adapter §3–§9 (OpenArmature specification, pinned release v0.109.0).
//!
//! Runs the upstream YAML conformance fixtures against the Rust crates through
//! their public APIs. Fixtures are data read from a directory (see
//! [`discovery`]); they are never copied into this repository.
//!
//! Fixture-shaped conventions (where a fixture needs more than the spec prose
//! says) are named in the crate's `REGISTER.md` (ids R.., L.., O.., S.., P.., V..).
//!
//! - [`discovery`] finds the fixture root and the fixture files.
//! - [`deferrals`] reads `conformance.toml` (fixtures deferred with a reason).
//! - [`runner`] parses one fixture file and runs a case against the engine.
//! - [`failure`] says why a case did not pass ([`Failure`]: a [`FailureKind`] and
//!   a message); every check returns a [`Check`].
//! - [`report`] holds the case identifiers and outcomes both front ends print.
//! - [`table`] holds the name → check tables every runner dispatches through.
//! - [`suite`] lists and runs the cases and judges them against the deferrals
//!   (both front ends, `cargo test` and `cargo xtask`, go through it).

pub mod backends;
mod chat;
pub mod deferrals;
pub mod discovery;
pub mod error;
pub mod failure;
mod ge;
mod harness;
mod http_mock;
mod llm;
mod matchers;
mod obs;
mod prompt;
pub mod report;
mod retrieval;
pub mod runner;
mod session_log;
mod sessions;
mod shared;
pub mod suite;
mod suspension;
pub mod table;
mod yaml;

pub use error::AdapterError;
pub use failure::{Check, Failure, FailureKind};
pub use report::{CaseId, CaseOutcome};

/// The conformance-adapter spec release this adapter implements (§8.5).
pub const CONFORMANCE_VERSION: &str = "0.109.0";

/// The OpenArmature capability this crate implements.
pub const SPEC_CAPABILITY: &str = "conformance-adapter";

/// The OpenArmature specification release this crate targets.
pub const SPEC_VERSION: &str = CONFORMANCE_VERSION;
