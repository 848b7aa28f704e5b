//! Spec: prompt-management §3 `token_budget`, §5 — reading a backend-sourced
//! `token_budget` config.
//!
//! Any backend that sources a budget from a config (a sidecar file, a vendor prompt's
//! config, a database column) applies the same rule: the recognized bounds
//! (`input_max_tokens`, `total_max_tokens`) are taken, unrecognized keys are ignored
//! (a budget has no extras mapping), and a config that cannot be read as a budget (not
//! an object, a bound that is not a non-negative integer, no bound at all) yields no
//! budget rather than an error: the budget is advisory and never breaks the call.

use crate::prompt_context::TokenBudget;
use serde_json::Value;

/// Reads a sourced `token_budget` config: `Some` with the recognized bounds, `None`
/// when the config declares no usable budget.
///
/// ```
/// use openarmature_prompt::{token_budget_from_config, TokenBudget};
/// let raw = serde_json::json!({"input_max_tokens": 10, "unknown": 5});
/// assert_eq!(token_budget_from_config(&raw), Some(TokenBudget::new(Some(10), None)));
/// assert_eq!(token_budget_from_config(&serde_json::json!("lots")), None);
/// ```
pub fn token_budget_from_config(raw: &Value) -> Option<TokenBudget> {
    let raw = raw.as_object()?;
    let bound = |key: &str| match raw.get(key) {
        None | Some(Value::Null) => Some(None),
        Some(v) => v.as_u64().map(Some),
    };
    let input = bound("input_max_tokens")?;
    let total = bound("total_max_tokens")?;
    if input.is_none() && total.is_none() {
        return None;
    }
    Some(TokenBudget::new(input, total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn applies_recognized_bounds_and_ignores_unknown_keys() {
        assert_eq!(
            token_budget_from_config(&json!({"input_max_tokens": 10, "unknown": 5})),
            Some(TokenBudget::new(Some(10), None))
        );
        assert_eq!(
            token_budget_from_config(&json!({"total_max_tokens": 400, "input_max_tokens": null})),
            Some(TokenBudget::new(None, Some(400)))
        );
    }

    #[test]
    fn an_unreadable_budget_is_dropped_not_an_error() {
        for raw in [
            json!("lots"),
            json!([10]),
            json!({}),
            json!({"unknown": 5}),
            json!({"input_max_tokens": -1}),
            json!({"total_max_tokens": 1.5}),
        ] {
            assert_eq!(token_budget_from_config(&raw), None, "{raw}");
        }
    }
}
