//! Integration tests of `openarmature-retrieval`: one binary, one module per provider
//! (the scripted HTTP mock in `mock`), so that linking does not dominate `cargo test`.
#![allow(clippy::unwrap_used, missing_docs)]

mod mock;

mod cohere;
mod jina;
mod providers;
mod tei;
