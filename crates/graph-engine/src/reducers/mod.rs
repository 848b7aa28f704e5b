//! Spec: graph-engine §2 *Reducer* — the eight canonical reducers.
//!
//! Two forms of each reducer:
//! - [`typed`]: generic functions over Rust collections, used by [`crate::state!`];
//! - [`Reducer`]: the same semantics over JSON values, used by [`crate::DynState`].

pub mod json;
pub mod typed;

pub use json::{KeyFn, Reducer};

/// The failure a reducer reports; the engine wraps it into a `reducer_error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ReducerFailure(pub String);

/// Validates `bounded_append`'s `max_len` (must be ≥ 1).
///
/// # Errors
/// [`crate::CompileError::ReducerConfigurationInvalid`] for `max_len < 1`.
pub fn check_bounded_max_len(max_len: i64) -> Result<usize, crate::CompileError> {
    if max_len < 1 {
        return Err(crate::CompileError::ReducerConfigurationInvalid {
            field: String::new(),
            message: format!("bounded_append max_len must be a positive integer, got {max_len}"),
        });
    }
    usize::try_from(max_len).map_err(|_| crate::CompileError::ReducerConfigurationInvalid {
        field: String::new(),
        message: format!("bounded_append max_len {max_len} does not fit in usize"),
    })
}
