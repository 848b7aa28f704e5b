//! What several test modules share: a backend that is never reachable.

use openarmature_prompt::{BoxFuture, Prompt, PromptBackend, PromptError};

/// A backend that is always unreachable: every fetch fails `store_unavailable`
/// with the given reason.
pub(crate) struct Down(pub(crate) &'static str);

impl PromptBackend for Down {
    fn fetch<'a>(
        &'a self,
        name: &'a str,
        label: &'a str,
        _ttl: Option<u64>,
    ) -> BoxFuture<'a, Result<Prompt, PromptError>> {
        let why = self.0;
        Box::pin(async move { Err(PromptError::store_unavailable(name, label, why)) })
    }

    fn describe(&self) -> String {
        format!("down:{}", self.0)
    }
}
