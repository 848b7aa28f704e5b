#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};

use super::*;
use crate::config::RuntimeConfig;
use crate::response::{FinishReason, Usage};
use crate::retry::LlmRetryConfig;

#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct Order {
    #[schemars(length(max = 5))]
    items: Vec<Item>,
    note: Option<String>,
}

#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct Item {
    #[schemars(length(max = 20))]
    sku: String,
}

fn failure(finish_reason: FinishReason) -> StructuredOutputInvalid {
    StructuredOutputInvalid {
        response_schema: Value::Null,
        output_content: "{\"a\": [1".into(),
        error_message: "content is not valid JSON: EOF".into(),
        finish_reason,
        usage: Usage::default(),
        response_id: None,
        response_model: None,
        raw: Value::Null,
    }
}

#[test]
fn derived_schema_is_bounded_and_untitled() {
    let schema = json_schema_for::<Order>();
    assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
    assert_eq!(schema["properties"]["items"]["maxItems"], 5);
    assert_eq!(schema["required"], json!(["items"]));
    let item = &schema["$defs"]["Item"];
    assert_eq!(item["properties"]["sku"]["maxLength"], 20);
    // Nested definitions resolve: the schema compiles and validates through `$ref`.
    let validator = crate::schema::compile_object_schema(&schema, "response_schema").unwrap();
    assert!(validator.is_valid(&json!({"items": [{"sku": "a"}]})));
    assert!(!validator.is_valid(&json!({"items": [{"sku": "a".repeat(21)}]})));
}

#[test]
fn truncation_is_diagnosed_in_the_message() {
    let cut = failure(FinishReason::Length);
    assert!(cut.is_truncated());
    assert!(cut
        .to_string()
        .starts_with("output truncated at the token bound"));
    assert!(cut.to_string().ends_with("content is not valid JSON: EOF"));
    let invalid = failure(FinishReason::Stop);
    assert!(!invalid.is_truncated());
    assert_eq!(invalid.to_string(), "content is not valid JSON: EOF");
}

#[test]
fn same_bound_follows_the_override_schedule() {
    let base = RuntimeConfig::default().max_tokens(64);
    let plain = LlmRetryConfig::default();
    let cut = failure(FinishReason::Length);
    assert!(same_bound_after_truncation(&plain, &base, &cut, 0));
    assert!(!same_bound_after_truncation(
        &plain,
        &base,
        &failure(FinishReason::Stop),
        0
    ));
    let raised = LlmRetryConfig::default()
        .per_attempt_override(vec![RuntimeConfig::default().max_tokens(128)]);
    assert!(!same_bound_after_truncation(&raised, &base, &cut, 0));
    // The last entry carries forward: attempt 1 → 2 keeps 128.
    assert!(same_bound_after_truncation(&raised, &base, &cut, 1));
}
