//! The prompt template loader (prompt-management §5): the filesystem backend reading
//! a `.j2` Text template or a `.chat.json` Chat template and its config sidecar
//! ([`openarmature_prompt::FilesystemBackend`], per-prompt or unified config), then
//! the template rendered ([`openarmature_prompt::render_prompt`]: Jinja parsing and
//! evaluation, the Chat-prompt rules).
//!
//! Input: a selector byte (bit 0: Chat instead of Text; bits 1–2: the config
//! source), then the template file, NUL, the config file, NUL, the variables
//! (JSON). Properties: every refusal has a prompt category; a loaded Text prompt
//! is the file verbatim, its version 16 hex digits; a render gives messages.
#![no_main]

use std::path::PathBuf;
use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use openarmature_fuzz::{selector, split_nul};
use openarmature_prompt::{
    render_prompt, ConfigSource, FilesystemBackend, PromptBackend, RenderOptions, Template,
};
use serde_json::Value;

static ROOT: LazyLock<PathBuf> = LazyLock::new(|| {
    let root = std::env::temp_dir().join(format!("oa-fuzz-prompt-{}", std::process::id()));
    std::fs::create_dir_all(root.join("production")).unwrap();
    root
});

static RUNTIME: LazyLock<tokio::runtime::Runtime> = LazyLock::new(|| {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
});

fn write(path: PathBuf, bytes: Option<&[u8]>) {
    match bytes {
        Some(bytes) => std::fs::write(path, bytes).unwrap(),
        None => {
            let _ = std::fs::remove_file(path);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let (pick, rest) = selector(data);
    let (template, rest) = split_nul(rest);
    let (config, variables) = split_nul(rest);
    let chat = pick & 1 == 1;
    let source = match (pick >> 1) % 3 {
        0 => ConfigSource::None,
        1 => ConfigSource::PerPrompt,
        _ => ConfigSource::Unified,
    };
    let dir = ROOT.join("production");
    write(dir.join("p.j2"), (!chat).then_some(template));
    write(dir.join("p.chat.json"), chat.then_some(template));
    write(dir.join("p.config.json"), Some(config));
    write(ROOT.join("prompt_configs.json"), Some(config));

    let backend = FilesystemBackend::new(ROOT.as_path()).with_config_source(source);
    let prompt = match RUNTIME.block_on(backend.fetch("p", "production", None)) {
        Ok(prompt) => prompt,
        Err(e) => {
            assert!(
                matches!(
                    e.category(),
                    "prompt_store_unavailable" | "prompt_not_found"
                ),
                "{e}"
            );
            return;
        }
    };
    assert_eq!(prompt.version().len(), 16);
    assert!(prompt.version().bytes().all(|b| b.is_ascii_hexdigit()));
    match prompt.template() {
        Template::Text(text) => {
            assert!(!chat);
            assert_eq!(text.as_bytes(), template, "the template, verbatim");
        }
        Template::Chat(_) => assert!(chat),
    }
    let variables: Value = serde_json::from_slice(variables).unwrap_or(Value::Null);
    for options in [RenderOptions::strict(), RenderOptions::lenient()] {
        match render_prompt(&prompt, &variables, None, options) {
            Ok(result) => assert!(!result.messages().is_empty()),
            Err(e) => assert_eq!(e.category(), "prompt_render_error", "{e}"),
        }
    }
});
