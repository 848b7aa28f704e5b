//! Each capability's event payloads and context types: the vocabulary the engine
//! routes and observability renders without either depending on the capability
//! crates (see ARCHITECTURE.md, *Dependency rule*).
//!
//! One module per capability. The capability crate builds the values and re-exports
//! its module (`openarmature-llm` re-exports [`llm`] and [`tool`],
//! `openarmature-retrieval` [`retrieval`], `openarmature-prompt` [`prompt`]); the
//! engine's `ObserverEvent` carries them; observability reads them. Payload parts
//! that are costly to build are [`Deferred`]: built when an observer first reads them.

mod deferred;
pub mod llm;
pub mod prompt;
pub mod retrieval;
pub mod tool;

pub use deferred::{Deferred, EventMap, EventMessages};
