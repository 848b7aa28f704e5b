//! Fetch, fallback, label and cache-TTL resolution, get, and field propagation
//! (prompt-management §5–§7, §9).

use std::sync::{Arc, Mutex};

use openarmature_llm::RuntimeConfig;
use openarmature_prompt::{
    BoxFuture, FetchOptions, InMemoryBackend, LabelResolver, Prompt, PromptBackend, PromptError,
    PromptManager, TokenBudget,
};
use serde_json::{json, Map, Value};

use crate::support::Down;

/// Records every fetch it sees, then delegates.
struct Recording {
    calls: Mutex<Vec<(String, String, Option<u64>)>>,
    inner: Arc<dyn PromptBackend>,
}

impl Recording {
    fn new(inner: Arc<dyn PromptBackend>) -> Arc<Self> {
        Arc::new(Recording {
            calls: Mutex::new(Vec::new()),
            inner,
        })
    }

    fn calls(&self) -> Vec<(String, String, Option<u64>)> {
        self.calls.lock().unwrap().clone()
    }
}

impl PromptBackend for Recording {
    fn fetch<'a>(
        &'a self,
        name: &'a str,
        label: &'a str,
        ttl: Option<u64>,
    ) -> BoxFuture<'a, Result<Prompt, PromptError>> {
        self.calls
            .lock()
            .unwrap()
            .push((name.to_owned(), label.to_owned(), ttl));
        self.inner.fetch(name, label, ttl)
    }
}

fn store(prompts: Vec<Prompt>) -> Arc<InMemoryBackend> {
    let backend = InMemoryBackend::new();
    for p in prompts {
        backend.insert(p);
    }
    Arc::new(backend)
}

fn greeting(version: &str, label: &str) -> Prompt {
    Prompt::text("greeting", version, label, "Hello, {{ user }}!")
}

#[tokio::test]
async fn backend_fetch_success_not_found_and_unavailable() {
    let backend = store(vec![greeting("v1", "production")]);
    let p = backend.fetch("greeting", "production", None).await.unwrap();
    assert_eq!(
        (p.name(), p.version(), p.label()),
        ("greeting", "v1", "production")
    );
    assert_eq!(
        p.template_hash(),
        greeting("v1", "production").template_hash()
    );

    let missing = backend
        .fetch("greeting", "staging", None)
        .await
        .unwrap_err();
    assert_eq!(missing.category(), "prompt_not_found");
    assert!(!missing.is_transient());
    let missing = backend.fetch("nope", "production", None).await.unwrap_err();
    assert_eq!(missing.category(), "prompt_not_found");

    let down = Down("timeout")
        .fetch("greeting", "production", None)
        .await
        .unwrap_err();
    assert_eq!(down.category(), "prompt_store_unavailable");
    assert!(down.is_transient());
}

#[tokio::test]
async fn fallback_moves_past_an_unavailable_backend() {
    let manager = PromptManager::new(vec![
        Arc::new(Down("primary")),
        store(vec![greeting("local", "production")]),
    ])
    .unwrap();
    let p = manager.fetch("greeting", None).await.unwrap();
    assert_eq!(p.version(), "local");
}

#[tokio::test]
async fn not_found_stops_the_chain() {
    let secondary = Recording::new(store(vec![greeting("stale", "production")]));
    let manager = PromptManager::new(vec![store(vec![]), secondary.clone()]).unwrap();
    let err = manager.fetch("greeting", None).await.unwrap_err();
    assert_eq!(err.category(), "prompt_not_found");
    assert!(
        secondary.calls().is_empty(),
        "secondary must not be consulted"
    );
}

#[tokio::test]
async fn all_unavailable_is_unavailable_with_every_cause() {
    let manager = PromptManager::new(vec![Arc::new(Down("a")), Arc::new(Down("b"))]).unwrap();
    let err = manager
        .fetch("greeting", Some("production"))
        .await
        .unwrap_err();
    assert_eq!(err.category(), "prompt_store_unavailable");
    let causes: Vec<String> = err.causes().iter().map(ToString::to_string).collect();
    assert_eq!(causes, ["a", "b"]);
    assert!(err.to_string().contains("down:a") && err.to_string().contains("down:b"));
    assert_eq!(
        std::error::Error::source(&err)
            .map(ToString::to_string)
            .as_deref(),
        Some("b")
    );
}

#[tokio::test]
async fn first_success_wins() {
    let second = Recording::new(store(vec![greeting("second", "production")]));
    let manager = PromptManager::new(vec![
        store(vec![greeting("first", "production")]),
        second.clone(),
    ])
    .unwrap();
    assert_eq!(
        manager.fetch("greeting", None).await.unwrap().version(),
        "first"
    );
    assert!(second.calls().is_empty());
}

#[test]
fn a_manager_needs_a_backend() {
    let err = PromptManager::new(vec![]).unwrap_err();
    assert_eq!(err.category(), "invalid_argument");
}

#[tokio::test]
async fn get_is_fetch_then_render() {
    let manager = PromptManager::new(vec![store(vec![greeting("v1", "production")])]).unwrap();
    let vars = json!({"user": "Alice"});
    let got = manager.get("greeting", None, &vars).await.unwrap();
    let fetched = manager.fetch("greeting", None).await.unwrap();
    let rendered = manager.render(&fetched, &vars).unwrap();
    assert_eq!(got.messages(), rendered.messages());
    assert_eq!(got.rendered_hash(), rendered.rendered_hash());
    assert_eq!(
        got.messages()[0].to_json(),
        json!({"role": "user", "content": "Hello, Alice!"})
    );
    assert_eq!(got.variables(), vars.as_object().unwrap());

    // Fetch failures surface from get; render failures too.
    let err = manager.get("missing", None, &vars).await.unwrap_err();
    assert_eq!(err.category(), "prompt_not_found");
    let err = manager.get("greeting", None, &json!({})).await.unwrap_err();
    assert_eq!(err.category(), "prompt_render_error");
    let err = manager
        .get("greeting", None, &json!([1, 2]))
        .await
        .unwrap_err();
    assert_eq!(err.render_failure().unwrap().name, "greeting");
}

#[test]
fn label_resolver_precedence() {
    let r = LabelResolver::from_json(&json!({
        "default": "canary",
        "segment_semantic": "staging",
        "extract_claims": "variant-a"
    }))
    .unwrap();
    assert_eq!(r.resolve("segment_semantic"), "staging");
    assert_eq!(r.resolve("extract_claims"), "variant-a");
    assert_eq!(r.resolve("other"), "canary");

    let no_default = LabelResolver::from_map([("a", "staging")]);
    assert_eq!(no_default.resolve("a"), "staging");
    assert_eq!(no_default.resolve("b"), "production");
    assert_eq!(LabelResolver::new().resolve("x"), "production");
    let built = LabelResolver::new()
        .with_default("d")
        .with_override("x", "o");
    assert_eq!((built.resolve("x"), built.resolve("y")), ("o", "d"));

    assert_eq!(
        LabelResolver::from_json(&json!(["x"]))
            .unwrap_err()
            .category(),
        "invalid_argument"
    );
    assert_eq!(
        LabelResolver::from_json(&json!({"a": 1}))
            .unwrap_err()
            .category(),
        "invalid_argument"
    );
}

#[tokio::test]
async fn manager_label_chain_explicit_resolver_fallback() {
    let rec = Recording::new(store(vec![
        greeting("p", "production"),
        greeting("s", "staging"),
        greeting("v", "variant-a"),
    ]));
    let plain = PromptManager::new(vec![rec.clone()]).unwrap();
    assert_eq!(
        plain.fetch("greeting", None).await.unwrap().label(),
        "production"
    );

    let resolved = plain
        .clone()
        .with_label_resolver(LabelResolver::from_map([("greeting", "staging")]));
    assert_eq!(
        resolved.fetch("greeting", None).await.unwrap().version(),
        "s"
    );
    // An explicit label beats the resolver.
    let explicit = resolved.fetch("greeting", Some("variant-a")).await.unwrap();
    assert_eq!(explicit.label(), "variant-a");
    let labels: Vec<String> = rec.calls().into_iter().map(|c| c.1).collect();
    assert_eq!(labels, ["production", "staging", "variant-a"]);
}

#[tokio::test]
async fn cache_ttl_is_resolved_and_threaded_through_fallback() {
    let down = Recording::new(Arc::new(Down("x")));
    let up = Recording::new(store(vec![greeting("v1", "production")]));
    let manager = PromptManager::new(vec![down.clone(), up.clone()]).unwrap();
    manager.fetch("greeting", None).await.unwrap();
    manager
        .fetch_with("greeting", &FetchOptions::new().cache_ttl_seconds(0))
        .await
        .unwrap();
    let with_default = manager.clone().with_default_cache_ttl_seconds(300);
    assert_eq!(with_default.default_cache_ttl_seconds(), Some(300));
    with_default.fetch("greeting", None).await.unwrap();
    with_default
        .fetch_with(
            "greeting",
            &FetchOptions::new().cache_ttl_seconds(0).label("production"),
        )
        .await
        .unwrap();
    let ttls = |r: &Recording| r.calls().into_iter().map(|c| c.2).collect::<Vec<_>>();
    let expected = [None, Some(0), Some(300), Some(0)];
    assert_eq!(ttls(&down), expected);
    assert_eq!(ttls(&up), expected);
}

#[tokio::test]
async fn sampling_budget_and_entities_propagate_verbatim() {
    let sampling = RuntimeConfig::default()
        .temperature(0.0)
        .max_tokens(256)
        .top_p(0.95)
        .seed(42)
        .frequency_penalty(0.1)
        .presence_penalty(0.2)
        .stop_sequences(["END"])
        .extra("repetition_penalty", json!(1.05));
    let mut entities = Map::new();
    entities.insert("langfuse_prompt".into(), json!({"id": "lf-1"}));
    let prompt = Prompt::text("classify", "v1", "production", "Classify: {{ topic }}")
        .with_sampling(sampling.clone())
        .with_token_budget(TokenBudget::new(Some(100), Some(400)))
        .with_observability_entities(entities.clone());
    let manager = PromptManager::new(vec![store(vec![
        prompt,
        Prompt::text("bare", "v1", "production", "x"),
    ])])
    .unwrap();

    let fetched = manager.fetch("classify", None).await.unwrap();
    assert_eq!(fetched.sampling(), Some(&sampling));
    let result = manager
        .render(&fetched, &json!({"topic": "weather"}))
        .unwrap();
    assert_eq!(result.sampling(), Some(&sampling));
    assert_eq!(
        result.token_budget(),
        Some(TokenBudget::new(Some(100), Some(400)))
    );
    assert_eq!(result.observability_entities(), Some(&entities));
    assert_eq!(result.fetched_at(), fetched.fetched_at());
    assert!(result.rendered_at() >= result.fetched_at());
    // The sampling splats straight into a provider call's RuntimeConfig.
    let config: RuntimeConfig = result.sampling().cloned().unwrap_or_default();
    assert_eq!(config.declared_params()["seed"], Value::from(42));

    let bare = manager.get("bare", None, &()).await.unwrap();
    assert!(bare.sampling().is_none());
    assert!(bare.token_budget().is_none());
    assert!(bare.observability_entities().is_none());
}

#[test]
fn errors_bridge_to_the_engine_category() {
    let e = PromptError::store_unavailable("n", "l", "down");
    let c = e.clone().into_categorized();
    assert_eq!(
        c.category().map(|c| c.as_str()),
        Some("prompt_store_unavailable")
    );
    assert!(c.is_transient());
    assert_eq!(
        PromptError::not_found("n", "l", "gone").category(),
        "prompt_not_found"
    );
    assert_eq!(
        PromptError::group_invalid("g", "too small").category(),
        "prompt_group_invalid"
    );
    // `?` in a node captures the category and transience, no registry involved.
    let node_error = openarmature_graph::NodeError::from(e);
    assert_eq!(
        openarmature_graph::category_of(&*node_error).map(|c| c.as_str()),
        Some("prompt_store_unavailable")
    );
    assert!(node_error.is_transient());
}
