//! # openarmature-core
//!
//! The small, slowly changing seams every OpenArmature crate shares (in the manner of
//! `tracing-core` or `tower-service`):
//!
//! - [`Category`]: a `Copy` error category whose name is the spec's identifier
//!   (`provider_rate_limit`, `node_exception`, ...) and which knows whether the
//!   category is transient, with a constant for every category the specification
//!   defines;
//! - [`Categorized`]: the trait an error family implements (`category()`,
//!   `is_transient()`);
//! - [`NodeError`]: what a node body returns. `?` on any [`Categorized`] error (an
//!   `LlmError`, a `RetrievalError`, a `PromptError`, a [`CategorizedError`], ...)
//!   converts into it and the category is captured at that moment, so it survives
//!   type erasure without any global registry;
//! - [`CategorizedError`]: an error with an explicit category and transience, for
//!   code that has a category but no error type of its own;
//! - the event envelope: [`Lineage`] and [`CallSite`] (graph-engine §6 event-source
//!   identity) and the [`InvocationMetadata`] snapshot events carry (observability §3.4);
//! - [`Extensions`]: a type-keyed map through which a crate attaches its own state
//!   to a node attempt (`NodeCtx::extensions` in `openarmature-graph`);
//! - [`vocab`]: each capability's event payloads and context types (LLM, retrieval,
//!   tool, prompt), which the engine routes and observability renders.
//!
//! # Examples
//! ```
//! use openarmature_core::{Categorized, Category, CategorizedError, NodeError};
//!
//! #[derive(Debug)]
//! struct Flaky;
//! impl std::fmt::Display for Flaky {
//!     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
//!         f.write_str("upstream flaked")
//!     }
//! }
//! impl std::error::Error for Flaky {}
//! impl Categorized for Flaky {
//!     fn category(&self) -> Option<Category> {
//!         Some(Category::PROVIDER_UNAVAILABLE)
//!     }
//! }
//!
//! fn node_body() -> Result<(), NodeError> {
//!     Err(Flaky)?
//! }
//! let err = node_body().unwrap_err();
//! assert_eq!(err.category(), Some(Category::PROVIDER_UNAVAILABLE));
//! assert!(err.is_transient());
//! assert_eq!(err.to_string(), "upstream flaked");
//! assert!(err.downcast_ref::<Flaky>().is_some());
//!
//! let plain: NodeError = "no category".into();
//! assert_eq!(plain.category(), None);
//! let explicit: NodeError = CategorizedError::new(Category::ROUTING_ERROR, "lost").into();
//! assert_eq!(explicit.category().map(Category::as_str), Some("routing_error"));
//! ```

mod categorized;
mod category;
mod envelope;
mod extensions;
mod metadata;
mod node_error;
pub mod vocab;

pub use categorized::{find_in, BoxError, Categorized, CategorizedError};
pub use category::Category;
pub use envelope::{CallSite, Lineage};
pub use extensions::Extensions;
pub use metadata::InvocationMetadata;
pub use node_error::NodeError;

/// The OpenArmature capability whose seams this crate carries (the categories of
/// every capability meet here; graph-engine owns the seam definitions).
pub const SPEC_CAPABILITY: &str = "graph-engine";

/// The OpenArmature specification release this crate targets.
pub const SPEC_VERSION: &str = "0.109.0";

/// The crate README's Rust code blocks, compiled as doc tests, so its example cannot
/// rot. Exists only while collecting doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
