//! Spec: harness-chat §5.3 — concurrent sends on one session run one at a time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::sync::{Mutex as TurnLock, OwnedMutexGuard};

/// One lock per session id, held for a whole turn (load, invoke, save). Entries of
/// sessions nobody holds are swept as the map grows, so a long-running server keeps
/// only the locks in use.
#[derive(Default)]
pub(crate) struct SessionLocks {
    map: Mutex<HashMap<String, Weak<TurnLock<()>>>>,
    sweep_at: Mutex<usize>,
}

impl SessionLocks {
    /// Waits until no other turn of `session_id` runs, then holds it.
    pub(crate) async fn hold(&self, session_id: &str) -> OwnedMutexGuard<()> {
        let lock = {
            let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
            let lock = match map.get(session_id).and_then(Weak::upgrade) {
                Some(lock) => lock,
                None => {
                    let lock = Arc::new(TurnLock::new(()));
                    map.insert(session_id.to_owned(), Arc::downgrade(&lock));
                    lock
                }
            };
            let mut sweep_at = self.sweep_at.lock().unwrap_or_else(PoisonError::into_inner);
            if map.len() > (*sweep_at).max(64) {
                map.retain(|_, weak| weak.strong_count() > 0);
                *sweep_at = map.len() * 2;
            }
            lock
        };
        lock.lock_owned().await
    }

    /// How many sessions have a lock entry (held or not yet swept).
    #[cfg(test)]
    pub(crate) fn entries(&self) -> usize {
        self.map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn one_session_waits_and_another_does_not() {
        let locks = SessionLocks::default();
        let held = locks.hold("a").await;
        let other = tokio::time::timeout(std::time::Duration::from_secs(5), locks.hold("b")).await;
        assert!(other.is_ok(), "another session is not blocked");
        let same =
            tokio::time::timeout(std::time::Duration::from_millis(20), locks.hold("a")).await;
        assert!(same.is_err(), "the same session waits");
        drop(held);
        let _again = locks.hold("a").await;
    }

    #[tokio::test]
    async fn unused_entries_are_swept() {
        let locks = SessionLocks::default();
        for i in 0..1000 {
            drop(locks.hold(&format!("s{i}")).await);
        }
        assert!(locks.entries() < 200, "{} entries kept", locks.entries());
    }
}
