//! Chat-prompt rendering: segments, placeholders, content blocks and the §11 chat
//! triggers (prompt-management §3.1, §6 render, §8, §11).

use openarmature_llm::{ImageDetail, Message, ToolCall};
use openarmature_prompt::{
    render_prompt, AuthorRole, ChatSegment, ContentBlockTemplate, Placeholders, Prompt,
    PromptError, PromptResult, RenderOptions,
};
use serde_json::{json, Map, Value};

fn chat(name: &str, segments: Vec<ChatSegment>) -> Prompt {
    Prompt::chat(name, "v1", "production", segments)
}

fn render(
    prompt: &Prompt,
    vars: Value,
    placeholders: Option<&Placeholders>,
) -> Result<PromptResult, PromptError> {
    render_prompt(prompt, &vars, placeholders, RenderOptions::default())
}

fn json_messages(result: &PromptResult) -> Value {
    Value::Array(result.messages().iter().map(Message::to_json).collect())
}

fn fails_with(err: PromptError, prompt: &str, mentions: &str) {
    assert_eq!(err.category(), "prompt_render_error");
    let f = err.render_failure().unwrap();
    assert_eq!(
        (f.name.as_str(), f.version.as_str(), f.label.as_str()),
        (prompt, "v1", "production")
    );
    assert!(
        f.description.contains(mentions),
        "{:?} should mention {mentions:?}",
        f.description
    );
}

fn holders(entries: Vec<(&str, Vec<Message>)>) -> Placeholders {
    entries
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect()
}

#[test]
fn segments_render_independently_in_order() {
    let prompt = chat(
        "classify",
        vec![
            ChatSegment::system("You classify {{ topic }} requests."),
            ChatSegment::user("Classify: {{ input }}"),
            ChatSegment::assistant("Noted: {{ topic }}"),
        ],
    );
    let result = render(
        &prompt,
        json!({"topic": "support", "input": "my order is late"}),
        None,
    )
    .unwrap();
    assert_eq!(
        json_messages(&result),
        json!([
            {"role": "system", "content": "You classify support requests."},
            {"role": "user", "content": "Classify: my order is late"},
            {"role": "assistant", "content": "Noted: support"}
        ])
    );
    assert_eq!(result.template_hash(), prompt.template_hash());
}

#[test]
fn placeholders_inject_messages_verbatim_and_unmerged() {
    let prompt = chat(
        "qa",
        vec![
            ChatSegment::system("You answer questions."),
            ChatSegment::placeholder("history"),
            ChatSegment::placeholder("tools"),
            ChatSegment::user("{{ question }}"),
        ],
    );
    let call = ToolCall::new("c1", "lookup", Map::new());
    let p = holders(vec![
        (
            "history",
            vec![Message::user("earlier"), Message::assistant("reply")],
        ),
        (
            "tools",
            vec![
                Message::assistant_tool_calls(vec![call]),
                Message::tool("c1", "42"),
            ],
        ),
    ]);
    let result = render(&prompt, json!({"question": "what is OA?"}), Some(&p)).unwrap();
    assert_eq!(result.messages().len(), 6);
    assert_eq!(result.messages()[1], Message::user("earlier"));
    assert_eq!(result.messages()[4], Message::tool("c1", "42"));
    assert_eq!(result.messages()[5], Message::user("what is OA?"));
    // Placeholders are not recorded as variables.
    assert_eq!(result.variables().keys().collect::<Vec<_>>(), ["question"]);
    // Injected content (tool calls included) is part of the rendered hash.
    let other = holders(vec![
        ("history", vec![]),
        ("tools", vec![Message::tool("c1", "43")]),
    ]);
    let changed = render(&prompt, json!({"question": "what is OA?"}), Some(&other)).unwrap();
    assert_ne!(changed.rendered_hash(), result.rendered_hash());
}

#[test]
fn an_empty_injection_contributes_nothing() {
    let prompt = chat(
        "qa",
        vec![ChatSegment::placeholder("history"), ChatSegment::user("Hi")],
    );
    let result = render(
        &prompt,
        json!({}),
        Some(&holders(vec![("history", vec![])])),
    )
    .unwrap();
    assert_eq!(result.messages(), [Message::user("Hi")]);
}

#[test]
fn an_all_empty_render_is_an_error() {
    let prompt = chat(
        "only_history",
        vec![ChatSegment::placeholder("a"), ChatSegment::placeholder("b")],
    );
    let err = render(
        &prompt,
        json!({}),
        Some(&holders(vec![("a", vec![]), ("b", vec![])])),
    )
    .unwrap_err();
    fails_with(err, "only_history", "empty");
    let empty = chat("nothing", vec![]);
    fails_with(
        render(&empty, json!({}), None).unwrap_err(),
        "nothing",
        "empty",
    );
}

#[test]
fn an_unfilled_placeholder_is_an_error() {
    let prompt = chat(
        "qa",
        vec![ChatSegment::placeholder("history"), ChatSegment::user("Hi")],
    );
    fails_with(
        render(&prompt, json!({}), None).unwrap_err(),
        "qa",
        "history",
    );
    let wrong = holders(vec![("other", vec![])]);
    fails_with(
        render(&prompt, json!({}), Some(&wrong)).unwrap_err(),
        "qa",
        "history",
    );
}

#[test]
fn duplicate_and_malformed_placeholder_names_are_errors() {
    let dup = chat(
        "dup",
        vec![
            ChatSegment::placeholder("h"),
            ChatSegment::user("x"),
            ChatSegment::placeholder("h"),
        ],
    );
    let filled = holders(vec![("h", vec![])]);
    fails_with(
        render(&dup, json!({}), Some(&filled)).unwrap_err(),
        "dup",
        "duplicate",
    );

    for name in ["1history", "chat-history"] {
        let p = chat(
            "bad",
            vec![
                ChatSegment::system("s"),
                ChatSegment::placeholder(name),
                ChatSegment::user("u"),
            ],
        );
        let filled = holders(vec![(name, vec![])]);
        fails_with(
            render(&p, json!({}), Some(&filled)).unwrap_err(),
            "bad",
            name,
        );
    }
    let ok = chat(
        "ok",
        vec![
            ChatSegment::system("s"),
            ChatSegment::placeholder("_history_v2"),
            ChatSegment::user("u"),
        ],
    );
    let filled = holders(vec![("_history_v2", vec![Message::user("earlier turn")])]);
    assert_eq!(
        render(&ok, json!({}), Some(&filled))
            .unwrap()
            .messages()
            .len(),
        3
    );
}

#[test]
fn strict_undefined_applies_per_segment() {
    let prompt = chat(
        "seg",
        vec![
            ChatSegment::system("About {{ topic }}"),
            ChatSegment::user("Q: {{ question }}"),
        ],
    );
    // Each segment is checked against its own references.
    let err = render(&prompt, json!({"topic": "t"}), None).unwrap_err();
    fails_with(err, "seg", "question");
    let err = render(&prompt, json!({"question": "q"}), None).unwrap_err();
    let description = err.render_failure().unwrap().description.clone();
    assert!(
        description.contains("topic") && description.contains("segment 0"),
        "{description}"
    );
    // Inside blocks too.
    let blocks = chat(
        "blk",
        vec![ChatSegment::user_blocks(vec![
            ContentBlockTemplate::text("fine"),
            ContentBlockTemplate::image_url("{{ photo_url }}"),
        ])],
    );
    fails_with(
        render(&blocks, json!({}), None).unwrap_err(),
        "blk",
        "photo_url",
    );
}

#[test]
fn empty_segments_and_blocks_are_errors_but_whitespace_is_not() {
    let literal = chat("lit", vec![ChatSegment::system("")]);
    fails_with(
        render(&literal, json!({}), None).unwrap_err(),
        "lit",
        "empty",
    );
    let via_var = chat(
        "var",
        vec![ChatSegment::system("ok"), ChatSegment::user("{{ q }}")],
    );
    fails_with(
        render(&via_var, json!({"q": ""}), None).unwrap_err(),
        "var",
        "empty",
    );
    let spaces = render(&via_var, json!({"q": " "}), None).unwrap();
    assert_eq!(spaces.messages()[1], Message::user(" "));

    let empty_text_block = chat(
        "etb",
        vec![ChatSegment::user_blocks(vec![
            ContentBlockTemplate::text("{{ description }}"),
            ContentBlockTemplate::image_url("https://example.com/widget.png"),
        ])],
    );
    fails_with(
        render(&empty_text_block, json!({"description": ""}), None).unwrap_err(),
        "etb",
        "empty",
    );
    let no_blocks = chat(
        "ebl",
        vec![ChatSegment::system("s"), ChatSegment::user_blocks(vec![])],
    );
    fails_with(
        render(&no_blocks, json!({}), None).unwrap_err(),
        "ebl",
        "empty",
    );
}

#[test]
fn image_blocks_are_user_only() {
    for role in [AuthorRole::System, AuthorRole::Assistant] {
        let p = chat(
            "roles",
            vec![
                ChatSegment::blocks(
                    role,
                    vec![
                        ContentBlockTemplate::text("t"),
                        ContentBlockTemplate::image_inline("image/png", "AAAA"),
                    ],
                ),
                ChatSegment::user("u"),
            ],
        );
        fails_with(
            render(&p, json!({}), None).unwrap_err(),
            "roles",
            "user-only",
        );
    }
    // Text blocks are fine for any role.
    let text_only = chat(
        "t",
        vec![ChatSegment::blocks(
            AuthorRole::System,
            vec![ContentBlockTemplate::text("{{ a }}")],
        )],
    );
    let r = render(&text_only, json!({"a": "x"}), None).unwrap();
    assert_eq!(
        json_messages(&r),
        json!([{"role": "system", "content": [{"type": "text", "text": "x"}]}])
    );
}

#[test]
fn content_blocks_render_text_and_url_images() {
    let prompt = chat(
        "describe_product",
        vec![
            ChatSegment::system("You describe product photos."),
            ChatSegment::user_blocks(vec![
                ContentBlockTemplate::text("Describe {{ product }}:"),
                ContentBlockTemplate::image_url("{{ photo_url }}")
                    .with_detail(ImageDetail::High)
                    .with_media_type("image/png"),
            ]),
        ],
    );
    let result = render(
        &prompt,
        json!({"product": "widget", "photo_url": "https://example.com/widget.png"}),
        None,
    )
    .unwrap();
    assert_eq!(
        json_messages(&result),
        json!([
            {"role": "system", "content": "You describe product photos."},
            {"role": "user", "content": [
                {"type": "text", "text": "Describe widget:"},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/widget.png"},
                 "media_type": "image/png", "detail": "high"}
            ]}
        ])
    );
}

#[test]
fn content_blocks_render_inline_images() {
    let b64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=";
    let prompt = chat(
        "upload",
        vec![ChatSegment::user_blocks(vec![
            ContentBlockTemplate::image_inline("{{ img_media_type }}", "{{ img_b64 }}"),
        ])],
    );
    let result = render(
        &prompt,
        json!({"img_b64": b64, "img_media_type": "image/png"}),
        None,
    )
    .unwrap();
    assert_eq!(
        json_messages(&result),
        json!([{"role": "user", "content": [
            {"type": "image", "source": {"type": "inline", "base64_data": b64}, "media_type": "image/png"}
        ]}])
    );
    fails_with(
        render(&prompt, json!({"img_b64": b64}), None).unwrap_err(),
        "upload",
        "img_media_type",
    );
}

#[test]
fn chat_render_is_deterministic_and_stable_per_prefix() {
    let prompt = chat(
        "chat_qa",
        vec![
            ChatSegment::system("You are a helpful assistant. Follow the rules strictly."),
            ChatSegment::user("Question: {{ query }}"),
        ],
    );
    let a = render(&prompt, json!({"query": "What is JSON?"}), None).unwrap();
    let a2 = render(&prompt, json!({"query": "What is JSON?"}), None).unwrap();
    let b = render(&prompt, json!({"query": "What is YAML?"}), None).unwrap();
    assert_eq!(a.messages(), a2.messages());
    assert_eq!(a.rendered_hash(), a2.rendered_hash());
    assert_eq!(a.messages()[0], b.messages()[0]);
    assert_ne!(a.rendered_hash(), b.rendered_hash());
}

#[test]
fn the_chat_template_hash_covers_structure() {
    let base = vec![
        ChatSegment::system("s"),
        ChatSegment::user_blocks(vec![ContentBlockTemplate::image_url("u")]),
    ];
    let h = |segments: Vec<ChatSegment>| chat("p", segments).template_hash().to_owned();
    assert_eq!(h(base.clone()), h(base.clone()));
    assert_ne!(
        h(base.clone()),
        h(vec![
            ChatSegment::system("s"),
            ChatSegment::user_blocks(vec![
                ContentBlockTemplate::image_url("u").with_detail(ImageDetail::Low)
            ])
        ])
    );
    assert_ne!(
        h(base.clone()),
        h(vec![
            ChatSegment::system("s"),
            ChatSegment::user_blocks(vec![ContentBlockTemplate::text("u")])
        ])
    );
    assert_ne!(
        h(base),
        h(vec![
            ChatSegment::system("s"),
            ChatSegment::placeholder("u")
        ])
    );
    // A text prompt and a one-segment chat prompt with the same text differ.
    assert_ne!(
        Prompt::text("p", "v", "l", "s").template_hash(),
        h(vec![ChatSegment::user("s")])
    );
}

#[test]
fn chat_templates_read_from_the_spec_json_shape() {
    let segments = ChatSegment::list_from_json(&json!([
        {"role": "system", "content": "You answer about {{ topic }}."},
        {"placeholder": "history"},
        {"role": "user", "content": [{"type": "text", "text": "{{ q }}"}]}
    ]))
    .unwrap();
    let result = render(
        &chat("from_json", segments),
        json!({"topic": "t", "q": "why?"}),
        Some(&holders(vec![("history", vec![])])),
    )
    .unwrap();
    assert_eq!(result.messages().len(), 2);
}
