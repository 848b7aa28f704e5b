//! The `Retry-After` parser (§7, extension 0002): `retry-after-ms` and `Retry-After`
//! header values (delta-seconds or an HTTP date) read by
//! [`openarmature_llm::openai::retry_after`], which every mapping uses, and the wait
//! [`openarmature_llm::HonorRetryAfter`] decides from it.
//!
//! Input: `retry-after-ms` value, NUL, `Retry-After` value (either may be absent: a
//! value that is not a valid header value is left out). Properties: a plain
//! integer `Retry-After` (without `retry-after-ms`) is that many seconds; a date is
//! its distance from now (zero when past); the decision waits at least the asked
//! wait up to the cap and gives up above it.
#![no_main]

use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderValue};
use libfuzzer_sys::fuzz_target;
use openarmature_fuzz::split_nul;
use openarmature_llm::{ErrorCategory, HonorRetryAfter, LlmError};
use openarmature_pipeline::retry::{Backoff, BackoffDecision, Constant};

fuzz_target!(|data: &[u8]| {
    let (ms, secs) = split_nul(data);
    let mut headers = HeaderMap::new();
    let mut add = |name: &'static str, value: &[u8]| {
        if let Ok(v) = HeaderValue::from_bytes(value) {
            if !value.is_empty() {
                headers.insert(name, v);
            }
        }
    };
    add("retry-after-ms", ms);
    add("retry-after", secs);
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let wait = openarmature_llm::openai::retry_after(&headers, now);
    if !headers.contains_key("retry-after-ms") {
        let text = headers
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::trim);
        if let Some(n) = text.and_then(|t| t.parse::<u32>().ok()) {
            assert_eq!(
                wait,
                Some(Duration::from_secs(n.into())),
                "delta-seconds {n}"
            );
        }
        if let Some(date) = text.and_then(|t| httpdate::parse_http_date(t).ok()) {
            let expected = date.duration_since(now).unwrap_or(Duration::ZERO);
            if text.is_some_and(|t| t.parse::<f64>().is_err()) {
                assert_eq!(wait, Some(expected), "an HTTP date");
            }
        }
    }
    let error = LlmError::new(ErrorCategory::ProviderRateLimit, "slow down").with_retry_after(wait);
    let cap = Duration::from_secs(60);
    let base = Duration::from_millis(100);
    let backoff = HonorRetryAfter::new(Constant(base)).cap(cap);
    match (backoff.decide(0, &error), wait) {
        (BackoffDecision::Wait(d), None) => assert_eq!(d, base),
        (BackoffDecision::Wait(d), Some(w)) => {
            assert!(w <= cap, "waited although {w:?} is above the cap");
            assert_eq!(d, base.max(w));
        }
        (BackoffDecision::GiveUp(why), Some(w)) => {
            assert!(w > cap, "gave up on {w:?}: {why}");
        }
        (other, None) => panic!("{other:?} without a requested wait"),
    }
});
