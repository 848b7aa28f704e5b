//! Spec: conformance-adapter §5 — what every capability runner shares, so that no
//! runner imports another for it: the poison-tolerant lock over the harness's
//! recorders.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks a recorder; a poisoned lock still yields its data (a failed case must not
/// hide what was recorded before the panic).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}
