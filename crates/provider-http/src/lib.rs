//! # openarmature-http
//!
//! Spec: llm-provider §8 and retrieval-provider §8 (the transport every HTTP wire mapping
//! uses) and both capabilities' §7 (the HTTP status → category table).
//!
//! The transport the OpenArmature provider crates share: `openarmature-llm`'s chat
//! providers and `openarmature-retrieval`'s embedding and rerank providers hold a
//! [`Transport`] by composition (`builder(..).transport(Transport::default()...)`), so
//! the client options, the response-size cap and a caller-supplied `reqwest::Client` are
//! set the same way on every provider.
//!
//! - [`Transport`]: the client options (whole-request, connect and read timeouts, proxy
//!   environment), the response-size cap, or a caller-configured [`reqwest::Client`];
//!   [`Transport::build`] turns it into an [`HttpClient`];
//! - [`HttpClient`]: sends a request and reads its body under the cap ([`Reply`]); a
//!   successful body over the cap is `provider_invalid_response` (a hostile server
//!   cannot exhaust memory), an error body is truncated at the cap and still classified
//!   by its status;
//! - [`status_category`]: the shared §7 table from an HTTP error status to its
//!   [`Category`](openarmature_core::Category); each wire mapping refines it from the
//!   error body (a model-not-found 404, a content-block rejection, ...);
//! - [`base_url`] / [`parse_base_url`]: the `http(s)` check on a configured origin;
//! - [`env`](mod@env): what the providers' `from_env()` constructors share — a lookup function
//!   ([`env::process_env`], or a map in tests) and [`EnvError`], which names a missing
//!   variable and carries a category;
//! - [`TransportError`]: what the transport itself fails with, categorized
//!   (`provider_unavailable` for connect failures and timeouts, `provider_invalid_response`
//!   for an oversized body, `provider_invalid_request` for a bad URL or client). The
//!   provider crates convert it into their own error types.
//!
//! This crate exists so neither provider crate depends on the other and the seam crate
//! (`openarmature-core`) keeps no `reqwest` type in its public API.
//!
//! # Examples
//! ```
//! use std::time::Duration;
//! use openarmature_core::Category;
//! use openarmature_http::{status_category, Transport};
//!
//! let transport = Transport::default()
//!     .timeout(Duration::from_secs(30))
//!     .connect_timeout(Duration::from_secs(2))
//!     .max_response_bytes(1024 * 1024);
//! let client = transport.build(8 * 1024 * 1024)?;
//! assert_eq!(client.max_response_bytes(), 1024 * 1024);
//! assert_eq!(status_category(429), Category::PROVIDER_RATE_LIMIT);
//! # Ok::<(), openarmature_http::TransportError>(())
//! ```

mod client;
pub mod env;
mod error;
mod status;
mod transport;
mod url;

pub use client::{HttpClient, Reply, MIN_REDACTED_LEN, REDACTED};
pub use env::EnvError;
pub use error::TransportError;
pub use status::status_category;
pub use transport::Transport;
pub use url::{base_url, parse_base_url};

/// The crate README's Rust code blocks, compiled as doc tests, so its example cannot
/// rot. Exists only while collecting doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
