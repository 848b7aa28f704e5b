use openarmature_core::Category;

use super::*;
use crate::builder::ProviderBuilder;

use openarmature_http::env::from_pairs as vars;

fn parts<P>(b: &ProviderBuilder<P>) -> (&str, &str, Option<&str>) {
    (b.base_url.as_str(), b.model.as_str(), b.api_key.as_deref())
}

fn missing<T>(result: Result<T, EnvError>) -> (&'static str, Category) {
    match result {
        Ok(_) => ("<configured>", Category::NODE_EXCEPTION),
        Err(e) => (e.variable(), e.category()),
    }
}

#[test]
fn openai_hosted_needs_key_and_model() -> Result<(), Box<dyn std::error::Error>> {
    let b = OpenAiProvider::from_vars(vars(&[
        ("OPENAI_API_KEY", "sk-1"),
        ("OPENAI_MODEL", "gpt-x"),
    ]))?;
    assert_eq!(parts(&b), (OPENAI_DEFAULT_BASE_URL, "gpt-x", Some("sk-1")));
    b.build()?;
    assert_eq!(
        missing(OpenAiProvider::from_vars(vars(&[(
            "OPENAI_MODEL",
            "gpt-x"
        )]))),
        ("OPENAI_API_KEY", Category::PROVIDER_AUTHENTICATION)
    );
    assert_eq!(
        missing(OpenAiProvider::from_vars(vars(&[
            ("OPENAI_API_KEY", "sk-1"),
            ("OPENAI_MODEL", " ")
        ]))),
        ("OPENAI_MODEL", Category::PROVIDER_INVALID_REQUEST)
    );
    Ok(())
}

#[test]
fn openai_compatible_server_needs_no_key() -> Result<(), Box<dyn std::error::Error>> {
    let local = vars(&[
        ("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1"),
        ("OPENAI_MODEL", "m"),
    ]);
    let b = OpenAiProvider::from_vars(local)?;
    assert_eq!(parts(&b), ("http://127.0.0.1:8000/v1", "m", None));
    let keyed = vars(&[
        ("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1"),
        ("OPENAI_MODEL", "m"),
        ("OPENAI_API_KEY", "k\n"),
    ]);
    assert_eq!(
        OpenAiProvider::from_vars(keyed)?.api_key.as_deref(),
        Some("k")
    );
    // A malformed URL is the builder's error, categorized as build() reports it.
    let bad = vars(&[("OPENAI_BASE_URL", "ftp://x"), ("OPENAI_MODEL", "m")]);
    let err = OpenAiProvider::from_vars(bad)?.build().err();
    assert_eq!(
        err.map(|e| e.category().as_str()),
        Some("provider_invalid_request")
    );
    Ok(())
}

#[test]
fn anthropic_reads_the_sdk_variables() -> Result<(), Box<dyn std::error::Error>> {
    let hosted = vars(&[
        ("ANTHROPIC_API_KEY", "sk-ant"),
        ("ANTHROPIC_MODEL", "claude-x"),
    ]);
    let b = AnthropicProvider::from_vars(hosted)?;
    assert_eq!(
        parts(&b),
        (
            crate::anthropic::DEFAULT_BASE_URL,
            "claude-x",
            Some("sk-ant")
        )
    );
    let proxied = vars(&[
        ("ANTHROPIC_API_KEY", "sk-ant"),
        ("ANTHROPIC_MODEL", "claude-x"),
        ("ANTHROPIC_BASE_URL", "http://127.0.0.1:4000"),
    ]);
    assert_eq!(
        AnthropicProvider::from_vars(proxied)?.base_url,
        "http://127.0.0.1:4000/v1"
    );
    assert_eq!(
        missing(AnthropicProvider::from_vars(vars(&[(
            "ANTHROPIC_MODEL",
            "claude-x"
        )]))),
        ("ANTHROPIC_API_KEY", Category::PROVIDER_AUTHENTICATION)
    );
    assert_eq!(
        missing(AnthropicProvider::from_vars(vars(&[(
            "ANTHROPIC_API_KEY",
            "k"
        )]))),
        ("ANTHROPIC_MODEL", Category::PROVIDER_INVALID_REQUEST)
    );
    Ok(())
}

#[test]
fn gemini_prefers_google_api_key_like_google_genai() -> Result<(), Box<dyn std::error::Error>> {
    let both = vars(&[
        ("GEMINI_MODEL", "gemini-x"),
        ("GEMINI_API_KEY", "gem"),
        ("GOOGLE_API_KEY", "goog"),
    ]);
    let b = GeminiProvider::from_vars(both)?;
    assert_eq!(
        parts(&b),
        (crate::gemini::DEFAULT_BASE_URL, "gemini-x", Some("goog"))
    );
    let gemini_only = vars(&[("GEMINI_MODEL", "gemini-x"), ("GEMINI_API_KEY", "gem")]);
    assert_eq!(
        GeminiProvider::from_vars(gemini_only)?.api_key.as_deref(),
        Some("gem")
    );
    let based = vars(&[
        ("GEMINI_MODEL", "gemini-x"),
        ("GEMINI_API_KEY", "gem"),
        ("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:9/"),
    ]);
    assert_eq!(
        GeminiProvider::from_vars(based)?.base_url,
        "http://127.0.0.1:9/v1beta"
    );
    let err = GeminiProvider::from_vars(vars(&[("GEMINI_MODEL", "gemini-x")])).err();
    let Some(err) = err else {
        unreachable!("no key is set")
    };
    assert_eq!(err.variable(), "GEMINI_API_KEY");
    assert_eq!(err.accepted(), ["GEMINI_API_KEY", "GOOGLE_API_KEY"]);
    assert_eq!(err.category(), Category::PROVIDER_AUTHENTICATION);
    assert!(err.to_string().contains("GOOGLE_API_KEY"));
    Ok(())
}
