//! Spec: harness-chat §10 — an errored turn's bucket and the system-shaped reply the
//! chat UI shows.

use std::sync::Arc;

use openarmature_core::Category;
use openarmature_harness::ErrorBucket;
use openarmature_llm::Message;

/// Writes the user-facing text of an errored turn from its bucket and diagnostic.
pub type ReplyText = Arc<dyn Fn(ErrorBucket, &str) -> String + Send + Sync>;

/// The bucket of a category at the chat boundary: the abstract harness's (§7), except
/// that every category §10.1 names terminates the conversation — a chat whose history
/// could not be written, or whose paused turn could not be persisted, cannot go on.
pub fn chat_bucket(category: &str) -> ErrorBucket {
    const TERMINATING: &[Category] = &[
        Category::SESSION_LOAD_FAILED,
        Category::new("session_save_failed"),
        Category::new("session_state_migration_chain_ambiguous"),
        Category::new("suspension_persistence_failed"),
        Category::HARNESS_SESSION_ID_UNRESOLVED,
    ];
    if TERMINATING.iter().any(|c| c.as_str() == category) {
        ErrorBucket::SessionTerminating
    } else {
        ErrorBucket::of(category)
    }
}

/// The default §10 texts. A user-correctable reply carries the diagnostic, so the
/// user can act on it (§10.3).
pub fn default_reply_text(bucket: ErrorBucket, diagnostic: &str) -> String {
    match bucket {
        ErrorBucket::SessionTerminating => {
            "This conversation can't continue. Please start a new one.".to_owned()
        }
        ErrorBucket::RetryableTransient => {
            "I had trouble responding. Try again in a moment.".to_owned()
        }
        _ => format!(
            "That request couldn't be processed: {diagnostic}. Please adjust your message and try again."
        ),
    }
}

/// The system message of an errored turn.
pub(crate) fn reply(text: &ReplyText, bucket: ErrorBucket, diagnostic: &str) -> Message {
    Message::system(text(bucket, diagnostic))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_10_1_categories_terminate_and_the_rest_follow_the_harness() {
        for c in [
            "session_load_failed",
            "session_save_failed",
            "suspension_persistence_failed",
            "harness_session_id_unresolved",
        ] {
            assert_eq!(chat_bucket(c), ErrorBucket::SessionTerminating, "{c}");
        }
        assert_eq!(
            chat_bucket("provider_unavailable"),
            ErrorBucket::RetryableTransient
        );
        assert_eq!(
            chat_bucket("chat_message_shape_invalid"),
            ErrorBucket::UserCorrectable
        );
    }

    #[test]
    fn a_user_correctable_reply_carries_the_diagnostic() {
        let text = default_reply_text(ErrorBucket::UserCorrectable, "context too long");
        assert!(text.contains("context too long"));
        assert!(text.contains("adjust your message"));
        assert!(
            !default_reply_text(ErrorBucket::RetryableTransient, "secret detail")
                .contains("secret detail")
        );
    }
}
