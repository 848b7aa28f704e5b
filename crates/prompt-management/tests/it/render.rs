//! Text-prompt rendering: strict variables, errors, determinism and hashes
//! (prompt-management §4, §6 render, §8, §11, §13).

use std::collections::HashMap;

use openarmature_llm::Message;
use openarmature_prompt::{render_prompt, Placeholders, Prompt, PromptError, RenderOptions};
use serde::Serialize;
use serde_json::{json, Value};

fn render(prompt: &Prompt, vars: Value) -> Result<openarmature_prompt::PromptResult, PromptError> {
    render_prompt(prompt, &vars, None, RenderOptions::default())
}

fn text_of(result: &openarmature_prompt::PromptResult) -> String {
    assert_eq!(result.messages().len(), 1);
    let json = result.messages()[0].to_json();
    assert_eq!(json["role"], "user");
    json["content"].as_str().unwrap().to_owned()
}

#[test]
fn renders_one_user_message_and_propagates_identity() {
    let prompt = Prompt::text("greeting", "v1", "production", "Hello, {{ user }}!")
        .with_template_hash("sha256:abc123");
    let result = render(&prompt, json!({"user": "Alice"})).unwrap();
    assert_eq!(result.messages(), [Message::user("Hello, Alice!")]);
    assert_eq!(
        (
            result.name(),
            result.version(),
            result.label(),
            result.template_hash()
        ),
        ("greeting", "v1", "production", "sha256:abc123")
    );
    assert!(result.rendered_hash().starts_with("sha256:"));
    assert_eq!(result.rendered_hash().len(), "sha256:".len() + 64);
    assert_eq!(result.variables()["user"], "Alice");
    let id = result.identity();
    assert_eq!(id.rendered_hash, result.rendered_hash());
    assert_eq!(id.template_hash, "sha256:abc123");
}

#[test]
fn undefined_variable_is_a_render_error_exposing_the_surface() {
    let prompt = Prompt::text(
        "greeting",
        "v1",
        "production",
        "Hello, {{ user }}! Today is {{ day }}.",
    );
    let err = render(&prompt, json!({"user": "Alice"})).unwrap_err();
    assert_eq!(err.category(), "prompt_render_error");
    assert!(!err.is_transient());
    let f = err.render_failure().unwrap();
    assert_eq!(
        (f.name.as_str(), f.version.as_str(), f.label.as_str()),
        ("greeting", "v1", "production")
    );
    assert_eq!(f.variables, *json!({"user": "Alice"}).as_object().unwrap());
    assert!(f.description.contains("day"), "{}", f.description);
    assert!(!f.description.contains("user"), "{}", f.description);
    // The template engine's error is kept as the cause.
    assert!(std::error::Error::source(&err).is_some());
}

#[test]
fn strict_mode_covers_conditions_and_loops_but_allows_defined_tests() {
    let vars = json!({});
    for source in [
        "{% if flag %}x{% endif %}",
        "{% for i in items %}{{ i }}{% endfor %}",
        "{{ x | upper }}",
    ] {
        let err = render(&Prompt::text("p", "v", "l", source), vars.clone()).unwrap_err();
        assert_eq!(err.category(), "prompt_render_error", "{source}");
    }
    let ok = render(
        &Prompt::text(
            "p",
            "v",
            "l",
            "{% if x is defined %}x{% else %}none{% endif %}|{{ y | default('d') }}",
        ),
        vars,
    )
    .unwrap();
    assert_eq!(text_of(&ok), "none|d");
}

#[test]
fn lenient_opt_out_substitutes_empty() {
    let prompt = Prompt::text("p", "v", "l", "[{{ missing }}]{% if gone %}yes{% endif %}");
    let result = render_prompt(&prompt, &json!({}), None, RenderOptions::lenient()).unwrap();
    assert_eq!(text_of(&result), "[]");
    assert!(!RenderOptions::lenient().is_strict());
    assert!(RenderOptions::default().is_strict());
}

#[test]
fn syntax_and_evaluation_errors_are_render_errors() {
    for source in [
        "Hello {{ user ",
        "{% if %}",
        "{{ user | no_such_filter }}",
        "{{ 1 / 0 }}",
    ] {
        let err = render(&Prompt::text("p", "v1", "l", source), json!({"user": "A"})).unwrap_err();
        assert_eq!(err.category(), "prompt_render_error", "{source}");
        assert_eq!(err.render_failure().unwrap().version, "v1");
    }
}

#[test]
fn variables_must_be_a_mapping_but_may_be_any_serialize() {
    #[derive(Serialize)]
    struct Vars<'a> {
        user: &'a str,
        n: u32,
    }
    let prompt = Prompt::text("p", "v", "l", "{{ user }} x{{ n }}");
    let result = render_prompt(
        &prompt,
        &Vars { user: "Bo", n: 3 },
        None,
        RenderOptions::default(),
    )
    .unwrap();
    assert_eq!(text_of(&result), "Bo x3");
    let err = render(&prompt, json!("nope")).unwrap_err();
    assert_eq!(err.category(), "prompt_render_error");
    assert!(err
        .render_failure()
        .unwrap()
        .description
        .contains("mapping"));
    // No variables at all is fine for a template without any.
    let none = render_prompt(
        &Prompt::text("p", "v", "l", "static"),
        &(),
        None,
        RenderOptions::default(),
    );
    assert_eq!(text_of(&none.unwrap()), "static");
}

#[test]
fn output_is_verbatim_no_escaping_trailing_newline_kept() {
    let prompt = Prompt::text("p", "v", "l", "<b>{{ x }}</b> & {{ y }}\n");
    let result = render(&prompt, json!({"x": "<i>\"q\"</i>", "y": "a&b"})).unwrap();
    assert_eq!(text_of(&result), "<b><i>\"q\"</i></b> & a&b\n");
    let list = render(
        &Prompt::text(
            "p",
            "v",
            "l",
            "{{ xs | join(',') }} {{ d.k }} {{ d | tojson }}",
        ),
        json!({"xs": [1, 2.5, true], "d": {"k": null, "b": "é"}}),
    )
    .unwrap();
    // Jinja2 conventions: Python-style literals, sorted-key JSON from `tojson`.
    assert_eq!(text_of(&list), r#"1,2.5,True None {"b": "é", "k": null}"#);
}

#[test]
fn rendering_is_deterministic_and_hashes_track_content() {
    let prompt = Prompt::text("greeting", "v1", "production", "Hello, {{ user }}!");
    let a1 = render(&prompt, json!({"user": "Alice"})).unwrap();
    let a2 = render(&prompt, json!({"user": "Alice"})).unwrap();
    let bob = render(&prompt, json!({"user": "Bob"})).unwrap();
    assert_eq!(a1.messages(), a2.messages());
    assert_eq!(a1.rendered_hash(), a2.rendered_hash());
    assert_ne!(a1.rendered_hash(), bob.rendered_hash());

    // The template hash depends on the template only.
    let same = Prompt::text("greeting", "v2", "staging", "Hello, {{ user }}!");
    let changed = Prompt::text("greeting", "v1", "production", "Hello, {{ user }}.");
    assert_eq!(prompt.template_hash(), same.template_hash());
    assert_ne!(prompt.template_hash(), changed.template_hash());
    // Stable across runs: the SHA-256 of the UTF-8 template bytes.
    assert_eq!(
        Prompt::text("x", "v", "l", "").template_hash(),
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    // Variables that do not reach the output leave the rendered hash unchanged.
    let extra = render(&prompt, json!({"user": "Alice", "unused": 1})).unwrap();
    assert_eq!(extra.rendered_hash(), a1.rendered_hash());
}

#[test]
fn shared_prefix_is_byte_identical_across_renders() {
    let prompt = Prompt::text(
        "persona_qa",
        "v1",
        "production",
        "You are {{ persona }}.\n\nAnswer: {{ q }}",
    );
    let a = render(
        &prompt,
        json!({"persona": "a precise technical writer", "q": "What is JSON?"}),
    )
    .unwrap();
    let b = render(
        &prompt,
        json!({"persona": "a precise technical writer", "q": "What is YAML?"}),
    )
    .unwrap();
    let prefix = "You are a precise technical writer.\n\nAnswer: ";
    assert_eq!(text_of(&a), format!("{prefix}What is JSON?"));
    assert_eq!(text_of(&b), format!("{prefix}What is YAML?"));
}

#[test]
fn text_prompts_ignore_placeholders() {
    let prompt = Prompt::text("p", "v", "l", "Hi {{ n }}");
    let mut placeholders: Placeholders = HashMap::new();
    placeholders.insert("history".into(), vec![Message::user("earlier")]);
    let result = render_prompt(
        &prompt,
        &json!({"n": 1}),
        Some(&placeholders),
        RenderOptions::default(),
    )
    .unwrap();
    assert_eq!(result.messages(), [Message::user("Hi 1")]);
}

#[test]
fn a_langfuse_reference_in_observability_entities_reaches_the_identity() {
    let mut entities = serde_json::Map::new();
    entities.insert(
        openarmature_prompt::LANGFUSE_PROMPT.to_owned(),
        json!({"name": "greeting", "version": 3}),
    );
    entities.insert("other_backend_entity".to_owned(), json!("x"));
    let linked = Prompt::text("greeting", "v1", "production", "Hi {{ user }}")
        .with_observability_entities(entities);
    let identity = render(&linked, json!({"user": "Ada"})).unwrap().identity();
    assert_eq!(
        identity.langfuse_prompt.as_deref(),
        Some(r#"{"name":"greeting","version":3}"#)
    );
    let plain = Prompt::text("greeting", "v1", "production", "Hi {{ user }}");
    let identity = render(&plain, json!({"user": "Ada"})).unwrap().identity();
    assert_eq!(identity.langfuse_prompt, None);
}
