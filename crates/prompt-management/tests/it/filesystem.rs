//! The filesystem backend: layouts, sidecars, chat files and error mapping
//! (prompt-management §5).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use openarmature_llm::RuntimeConfig;
use openarmature_prompt::{
    ConfigSource, FilesystemBackend, FsLayout, InMemoryBackend, Prompt, PromptBackend,
    PromptManager, Template, TokenBudget,
};
use serde_json::json;

/// A unique directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "oa-prompt-fs-{}-{}-{nanos}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, relative: &str, contents: &str) -> PathBuf {
        let path = self.0.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, contents).unwrap();
        path
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn per_label_layout_reads_text_templates() {
    let dir = TempDir::new();
    let path = dir.write("production/greeting.j2", "Hello, {{ user }}!\n");
    dir.write("staging/greeting.j2", "Hey {{ user }}");
    let backend = FilesystemBackend::new(dir.path());

    let p = backend
        .fetch("greeting", "production", Some(0))
        .await
        .unwrap();
    assert_eq!(p.template(), &Template::Text("Hello, {{ user }}!\n".into()));
    assert_eq!(p.label(), "production");
    assert_eq!(
        p.template_hash(),
        Prompt::text("x", "v", "l", "Hello, {{ user }}!\n").template_hash()
    );
    // Version: the first 16 hex digits of the content hash.
    assert_eq!(
        p.version(),
        &p.template_hash()["sha256:".len().."sha256:".len() + 16]
    );
    assert_eq!(
        p.metadata().unwrap()["source_path"],
        path.display().to_string()
    );
    assert!(p.sampling().is_none() && p.token_budget().is_none());

    let staging = backend.fetch("greeting", "staging", None).await.unwrap();
    assert_ne!(staging.version(), p.version());
    let again = backend.fetch("greeting", "production", None).await.unwrap();
    assert_eq!(again.version(), p.version());

    // Content change → new hash and version.
    dir.write("production/greeting.j2", "Hello again, {{ user }}!");
    let changed = backend.fetch("greeting", "production", None).await.unwrap();
    assert_ne!(changed.template_hash(), p.template_hash());
    assert_ne!(changed.version(), p.version());

    let missing = backend.fetch("greeting", "canary", None).await.unwrap_err();
    assert_eq!(missing.category(), "prompt_not_found");
    let missing = backend
        .fetch("farewell", "production", None)
        .await
        .unwrap_err();
    assert_eq!(missing.category(), "prompt_not_found");
}

#[tokio::test]
async fn flat_layout_echoes_the_requested_label() {
    let dir = TempDir::new();
    dir.write("greeting.j2", "Hi");
    let backend = FilesystemBackend::new(dir.path()).with_layout(FsLayout::Flat);
    let p = backend.fetch("greeting", "variant-a", None).await.unwrap();
    assert_eq!(
        (p.label(), p.template()),
        ("variant-a", &Template::Text("Hi".into()))
    );
}

#[tokio::test]
async fn sidecar_supplies_sampling_and_token_budget() {
    let dir = TempDir::new();
    dir.write("production/classify.j2", "Classify: {{ topic }}");
    dir.write(
        "production/classify.config.json",
        r#"{"temperature": 0.0, "max_tokens": 256, "stop_sequences": ["END"],
            "extras": {"repetition_penalty": 1.05}, "top_k": 40,
            "token_budget": {"input_max_tokens": 10, "unknown": 5}}"#,
    );
    let backend = FilesystemBackend::new(dir.path());
    let p = backend.fetch("classify", "production", None).await.unwrap();
    let expected = RuntimeConfig::default()
        .temperature(0.0)
        .max_tokens(256)
        .stop_sequences(["END"])
        .extra("repetition_penalty", json!(1.05))
        .extra("top_k", json!(40));
    assert_eq!(p.sampling(), Some(&expected));
    assert_eq!(p.token_budget(), Some(TokenBudget::new(Some(10), None)));

    // Propagated through render.
    let manager = PromptManager::new(vec![Arc::new(backend.clone())]).unwrap();
    let r = manager
        .get("classify", None, &json!({"topic": "weather"}))
        .await
        .unwrap();
    assert_eq!(r.sampling(), Some(&expected));
    assert_eq!(r.token_budget(), Some(TokenBudget::new(Some(10), None)));

    // Ignored when config reading is switched off.
    let off = FilesystemBackend::new(dir.path()).with_config_source(ConfigSource::None);
    let p = off.fetch("classify", "production", None).await.unwrap();
    assert!(p.sampling().is_none() && p.token_budget().is_none());
}

#[tokio::test]
async fn a_malformed_token_budget_is_dropped_not_fatal() {
    let dir = TempDir::new();
    let backend = FilesystemBackend::new(dir.path());
    for (i, budget) in [
        r#""lots""#,
        r#"{"input_max_tokens": -3}"#,
        r#"{"total_max_tokens": "x"}"#,
        "[1]",
    ]
    .iter()
    .enumerate()
    {
        let name = format!("p{i}");
        dir.write(&format!("production/{name}.j2"), "x");
        dir.write(
            &format!("production/{name}.config.json"),
            &format!(r#"{{"token_budget": {budget}}}"#),
        );
        let p = backend.fetch(&name, "production", None).await.unwrap();
        assert_eq!(p.token_budget(), None, "{budget}");
        assert!(
            p.sampling().is_none(),
            "a budget-only sidecar has no sampling"
        );
    }
}

#[tokio::test]
async fn malformed_config_and_io_trouble_are_store_unavailable() {
    let dir = TempDir::new();
    dir.write("production/a.j2", "x");
    dir.write("production/a.config.json", "{not json");
    dir.write("production/b.j2", "x");
    dir.write("production/b.config.json", r#"{"temperature": "hot"}"#);
    let backend = FilesystemBackend::new(dir.path());
    for name in ["a", "b"] {
        let err = backend.fetch(name, "production", None).await.unwrap_err();
        assert_eq!(err.category(), "prompt_store_unavailable", "{name}");
        assert!(std::error::Error::source(&err).is_some());
    }
    // A directory where the template file should be is an I/O error, not absence.
    std::fs::create_dir_all(dir.path().join("production/c.j2")).unwrap();
    let err = backend.fetch("c", "production", None).await.unwrap_err();
    assert_eq!(err.category(), "prompt_store_unavailable");

    let gone = FilesystemBackend::new(dir.path().join("no-such-root"));
    let err = gone.fetch("a", "production", None).await.unwrap_err();
    assert_eq!(err.category(), "prompt_store_unavailable");

    let err = backend
        .fetch("../production/a", "production", None)
        .await
        .unwrap_err();
    assert_eq!(err.category(), "invalid_argument");
}

#[tokio::test]
async fn unavailable_root_falls_back_to_the_next_backend() {
    let dir = TempDir::new();
    let fallback =
        InMemoryBackend::new().with_prompt(Prompt::text("greeting", "mem", "production", "Hi"));
    let manager = PromptManager::new(vec![
        Arc::new(FilesystemBackend::new(dir.path().join("unmounted"))),
        Arc::new(fallback),
    ])
    .unwrap();
    assert_eq!(
        manager.fetch("greeting", None).await.unwrap().version(),
        "mem"
    );
    // Present-but-missing is terminal.
    let manager = PromptManager::new(vec![
        Arc::new(FilesystemBackend::new(dir.path())),
        Arc::new(InMemoryBackend::new().with_prompt(Prompt::text(
            "greeting",
            "mem",
            "production",
            "Hi",
        ))),
    ])
    .unwrap();
    assert_eq!(
        manager
            .fetch("greeting", None)
            .await
            .unwrap_err()
            .category(),
        "prompt_not_found"
    );
}

#[tokio::test]
async fn chat_json_files_are_chat_prompts() {
    let dir = TempDir::new();
    dir.write(
        "production/qa.chat.json",
        r#"[{"role": "system", "content": "You answer about {{ topic }}."},
            {"placeholder": "history"},
            {"role": "user", "content": [{"type": "text", "text": "{{ q }}"}]}]"#,
    );
    dir.write(
        "production/broken.chat.json",
        r#"[{"role": "tool", "content": "x"}]"#,
    );
    let backend = FilesystemBackend::new(dir.path());
    let p = backend.fetch("qa", "production", None).await.unwrap();
    assert!(p.is_chat());
    assert_eq!(&p.template_hash()[7..23], p.version());
    let err = backend
        .fetch("broken", "production", None)
        .await
        .unwrap_err();
    assert_eq!(err.category(), "prompt_store_unavailable");
    // A .j2 template wins over a .chat.json of the same name.
    dir.write("production/qa.j2", "text wins");
    assert!(!backend
        .fetch("qa", "production", None)
        .await
        .unwrap()
        .is_chat());
}

#[tokio::test]
async fn unified_config_is_keyed_by_name() {
    let dir = TempDir::new();
    dir.write("production/a.j2", "x");
    dir.write("production/b.j2", "x");
    dir.write(
        "prompt_configs.json",
        r#"{"a": {"temperature": 0.5, "token_budget": {"total_max_tokens": 99}}}"#,
    );
    let backend = FilesystemBackend::new(dir.path()).with_config_source(ConfigSource::Unified);
    let a = backend.fetch("a", "production", None).await.unwrap();
    assert_eq!(a.sampling().and_then(|s| s.temperature), Some(0.5));
    assert_eq!(a.token_budget(), Some(TokenBudget::new(None, Some(99))));
    let b = backend.fetch("b", "production", None).await.unwrap();
    assert!(b.sampling().is_none() && b.token_budget().is_none());
}
