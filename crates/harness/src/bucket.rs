//! Spec: harness §7 — the three buckets errors at the turn boundary fall into.

use openarmature_core::Category;
use serde::Serialize;

/// How the caller should react to a turn's error (harness §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorBucket {
    /// The session's state is broken: intervention required, do not retry (§7.1).
    SessionTerminating,
    /// May succeed on retry with the same inputs (§7.2).
    RetryableTransient,
    /// The caller must change its inputs (§7.3).
    UserCorrectable,
}

impl ErrorBucket {
    /// `session_terminating` / `retryable_transient` / `user_correctable`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorBucket::SessionTerminating => "session_terminating",
            ErrorBucket::RetryableTransient => "retryable_transient",
            ErrorBucket::UserCorrectable => "user_correctable",
        }
    }

    /// The bucket of an error category: the session-corruption categories terminate;
    /// transient categories (and the session save / subscription / suspension persist /
    /// checkpoint save failures, §7.2) are retryable; everything else — a bad request, a bad signal payload, a node's own
    /// failure — needs the caller to act.
    pub fn of(category: &str) -> ErrorBucket {
        const TERMINATING: &[Category] = &[
            Category::SESSION_LOAD_FAILED,
            Category::new("session_state_migration_chain_ambiguous"),
            Category::new("session_state_migration_missing"),
            Category::new("session_state_migration_failed"),
            Category::new("state_validation_error"),
        ];
        const RETRYABLE: &[Category] = &[
            Category::new("session_save_failed"),
            Category::new("session_write_conflict"),
            Category::HARNESS_SIGNAL_SUBSCRIPTION_FAILED,
            Category::new("suspension_persistence_failed"),
            // A checkpoint store that failed to write (§7 lets implementations refine
            // the buckets): the same inputs may succeed once the store is back.
            Category::CHECKPOINT_SAVE_FAILED,
        ];
        let c = Category::from_name(category);
        if TERMINATING.iter().any(|t| t.as_str() == category) {
            ErrorBucket::SessionTerminating
        } else if c.is_transient() || RETRYABLE.iter().any(|t| t.as_str() == category) {
            ErrorBucket::RetryableTransient
        } else {
            ErrorBucket::UserCorrectable
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn categories_fall_into_the_section_7_buckets() {
        let expected = [
            ("session_load_failed", ErrorBucket::SessionTerminating),
            ("provider_unavailable", ErrorBucket::RetryableTransient),
            ("provider_rate_limit", ErrorBucket::RetryableTransient),
            ("session_save_failed", ErrorBucket::RetryableTransient),
            ("checkpoint_save_failed", ErrorBucket::RetryableTransient),
            ("provider_invalid_request", ErrorBucket::UserCorrectable),
            (
                "suspension_resume_payload_invalid",
                ErrorBucket::UserCorrectable,
            ),
        ];
        for (category, bucket) in expected {
            assert_eq!(ErrorBucket::of(category), bucket, "{category}");
        }
    }
}
