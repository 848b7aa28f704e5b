//! The extension directives that configure a case: `extensions`, `endpoint`, and
//! the extension values of `retry` / `retry_middleware`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use openarmature_llm::resilience::{
    BreakerPolicy, CircuitBreaker, Endpoint, HonorRetryAfter, ProviderClassifier,
};
use openarmature_pipeline::retry::{
    Constant, DefaultClassifier, RetryConfig, TokenBucket, TokenBucketConfig,
};
use openarmature_testkit::ManualClock;

use super::Sleeps;
use crate::yaml::Y;
use crate::AdapterError;

/// The extensions a fixture may switch on (spec/extensions/ 0001–0005).
pub(super) const KNOWN: &[&str] = &[
    "attempt_accounting",
    "retry_after",
    "retry_budget",
    "circuit_breaker",
    "provider_classification",
];

/// The extensions a case declared.
#[derive(Debug, Clone, Default)]
pub(super) struct Extensions(Vec<String>);

impl Extensions {
    pub(super) fn parse(y: &Y<'_>) -> Result<Self, AdapterError> {
        let names = y.strings()?;
        if names.is_empty() {
            return Err(y.invalid("`extensions` lists at least one extension"));
        }
        for n in &names {
            if !KNOWN.contains(&n.as_str()) {
                return Err(AdapterError::DirectiveUnknown {
                    file: y.file.to_path_buf(),
                    directive: format!("extensions: {n}"),
                    location: y.location().to_owned(),
                });
            }
        }
        Ok(Extensions(names))
    }

    /// Fails unless the case declared `name` (a directive of an undeclared
    /// extension is a fixture error: extensions are opt-in).
    pub(super) fn require(&self, name: &str, at: &Y<'_>) -> Result<(), AdapterError> {
        if self.0.iter().any(|n| n == name) {
            Ok(())
        } else {
            Err(at.invalid(format!(
                "this directive belongs to extension `{name}`, which the case does not declare in `extensions`"
            )))
        }
    }
}

/// The case's endpoint: breaker, budget, their clock, and what they reported.
pub(super) struct EndpointSetup {
    pub(super) endpoint: Arc<Endpoint>,
    pub(super) bucket: Option<Arc<TokenBucket>>,
    pub(super) clock: ManualClock,
    pub(super) transitions: Arc<Mutex<Vec<(String, String, String)>>>,
}

fn secs(y: &Y<'_>) -> Result<Duration, AdapterError> {
    Duration::try_from_secs_f64(y.f64()?).map_err(|_| y.invalid("a non-negative number of seconds"))
}

fn count(y: &Y<'_>) -> Result<u32, AdapterError> {
    u32::try_from(y.i64()?).map_err(|_| y.invalid("a non-negative integer"))
}

fn classifier(y: &Y<'_>, ext: &Extensions) -> Result<Option<ProviderClassifier>, AdapterError> {
    Ok(match y.str()? {
        "default" => None,
        name @ ("openai" | "anthropic" | "generic") => {
            ext.require("provider_classification", y)?;
            Some(match name {
                "openai" => ProviderClassifier::openai(),
                "anthropic" => ProviderClassifier::anthropic(),
                _ => ProviderClassifier::generic(),
            })
        }
        other => {
            return Err(AdapterError::DirectiveUnknown {
                file: y.file.to_path_buf(),
                directive: format!("classifier: {other}"),
                location: y.location().to_owned(),
            })
        }
    })
}

fn breaker(
    y: &Y<'_>,
    ext: &Extensions,
    key: &str,
    clock: &ManualClock,
) -> Result<CircuitBreaker, AdapterError> {
    ext.require("circuit_breaker", y)?;
    y.check_keys(&[
        "consecutive_failures",
        "failure_rate",
        "window",
        "min_calls",
        "cooldown_seconds",
        "half_open_probes",
        "probes_to_close",
        "failure_classifier",
    ])?;
    let mut p = BreakerPolicy::default();
    if let Some(v) = y.get("consecutive_failures") {
        p.consecutive_failures = count(&v)?;
    }
    if let Some(v) = y.get("failure_rate") {
        p.failure_rate = v.f64()?;
    }
    if let Some(v) = y.get("window") {
        p.window = count(&v)?;
    }
    if let Some(v) = y.get("min_calls") {
        p.min_calls = count(&v)?;
    }
    if let Some(v) = y.get("cooldown_seconds") {
        p.cooldown = secs(&v)?;
    }
    if let Some(v) = y.get("half_open_probes") {
        p.half_open_probes = count(&v)?;
    }
    if let Some(v) = y.get("probes_to_close") {
        p.probes_to_close = count(&v)?;
    }
    let mut b = CircuitBreaker::new(key, p).clock(Arc::new(clock.clone()));
    if let Some(c) = y.get("failure_classifier") {
        if let Some(c) = classifier(&c, ext)? {
            b = b.failure_classifier(c);
        }
    }
    Ok(b)
}

fn bucket(y: &Y<'_>, ext: &Extensions, clock: &ManualClock) -> Result<TokenBucket, AdapterError> {
    ext.require("retry_budget", y)?;
    y.check_keys(&["ratio", "floor", "floor_window_seconds", "max_tokens"])?;
    let mut c = TokenBucketConfig::default();
    if let Some(v) = y.get("ratio") {
        c.ratio = v.f64()?;
    }
    if let Some(v) = y.get("floor") {
        c.floor = count(&v)?;
    }
    if let Some(v) = y.get("floor_window_seconds") {
        c.floor_window = secs(&v)?;
    }
    if let Some(v) = y.get("max_tokens") {
        c.max_tokens = v.f64()?;
    }
    Ok(TokenBucket::with_clock(c, clock.clone()))
}

/// The `endpoint` block (`circuit_breaker`, `retry_budget`), on a manual clock.
pub(super) fn endpoint(y: &Y<'_>, ext: &Extensions) -> Result<EndpointSetup, AdapterError> {
    y.check_keys(&["key", "circuit_breaker", "retry_budget"])?;
    let key = match y.get("key") {
        Some(k) => k.str()?.to_owned(),
        None => "mock".to_owned(),
    };
    let clock = ManualClock::new();
    let mut endpoint = Endpoint::new(key.clone());
    let transitions = Arc::new(Mutex::new(Vec::new()));
    if let Some(b) = y.get("circuit_breaker") {
        let b = breaker(&b, ext, &key, &clock)?;
        let log = Arc::clone(&transitions);
        b.on_transition(move |_, t| {
            super::push(
                &log,
                (
                    t.from.as_str().to_owned(),
                    t.to.as_str().to_owned(),
                    t.reason.to_owned(),
                ),
            );
        });
        endpoint = endpoint.breaker(b);
    }
    let mut shared = None;
    if let Some(b) = y.get("retry_budget") {
        let b = Arc::new(bucket(&b, ext, &clock)?);
        endpoint = endpoint.budget(b.clone());
        shared = Some(b);
    }
    Ok(EndpointSetup {
        endpoint: Arc::new(endpoint),
        bucket: shared,
        clock,
        transitions,
    })
}

/// A `retry` / `retry_middleware` block's §6.1 record, with the extension values:
/// `classifier: openai | anthropic | generic`, `backoff: {type: retry_after,
/// cap_seconds, seconds}`, `budget: true`.
pub(super) fn retry_record(
    y: &Y<'_>,
    ext: &Extensions,
    sleeps: &Sleeps,
    endpoint: Option<&EndpointSetup>,
) -> Result<RetryConfig, AdapterError> {
    let recording = super::Recording(Arc::clone(sleeps), endpoint.map(|e| e.clock.clone()));
    let mut config = RetryConfig::default().sleeper(recording);
    if let Some(e) = endpoint {
        let inner = Arc::clone(&config.sleeper);
        config = config.sleeper(Endpoint::sleeper(&e.endpoint, inner));
    }
    if let Some(n) = y.get("max_attempts") {
        config = config.max_attempts(count(&n)?);
    }
    if let Some(c) = y.get("classifier") {
        config = match classifier(&c, ext)? {
            Some(c) => config.classifier(c),
            None => config.classifier(DefaultClassifier),
        };
    }
    if let Some(b) = y.get("backoff") {
        b.check_keys(&["type", "seconds", "cap_seconds"])?;
        let base = Constant(match b.get("seconds") {
            Some(s) => secs(&s)?,
            None => Duration::ZERO,
        });
        let t = b.req("type")?;
        match t.str()? {
            "deterministic" => {
                if let Some(c) = b.get("cap_seconds") {
                    return Err(c.invalid("`cap_seconds` belongs to `type: retry_after`"));
                }
                config = config.backoff(base);
            }
            "retry_after" => {
                ext.require("retry_after", &t)?;
                let mut backoff = HonorRetryAfter::new(base);
                if let Some(c) = b.get("cap_seconds") {
                    backoff = backoff.cap(secs(&c)?);
                }
                config = config.backoff(backoff);
            }
            other => {
                return Err(AdapterError::DirectiveUnknown {
                    file: t.file.to_path_buf(),
                    directive: format!("backoff type: {other}"),
                    location: t.location().to_owned(),
                })
            }
        }
    }
    if let Some(b) = y.get("budget") {
        ext.require("retry_budget", &b)?;
        if b.bool()? {
            let budget = endpoint
                .and_then(|e| e.endpoint.retry_budget())
                .ok_or_else(|| b.invalid("`budget: true` needs `endpoint.retry_budget`"))?;
            config = config.budget(budget);
        }
    }
    Ok(config)
}
