//! Extension 0002: `Retry-After` honoured against a local server that sends it.
//! Real sockets cannot use the runtime's paused clock, so the retry lane's sleeper
//! is injected: it records each wait and advances a manual clock (virtual time).

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures::future::BoxFuture;
use openarmature_llm::resilience::HonorRetryAfter;
use openarmature_llm::{CompletionRequest, ErrorCategory, Message, Provider};
use openarmature_pipeline::retry::{Constant, RetryConfig, Sleeper};
use openarmature_pipeline::MonotonicClock;
use openarmature_testkit::ManualClock;
use serde_json::json;

use crate::support::{Server, Step};

/// Virtual time: records the wait and moves the clock, without sleeping.
#[derive(Clone, Default)]
struct VirtualSleeper {
    waits: Arc<Mutex<Vec<Duration>>>,
    clock: ManualClock,
}

impl Sleeper for VirtualSleeper {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        self.waits.lock().unwrap().push(duration);
        self.clock.advance(duration);
        Box::pin(async {})
    }
}

fn limited(headers: Vec<(&'static str, String)>) -> Step {
    Step::Respond {
        status: 429,
        headers: headers
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
        body: serde_json::to_vec(
            &json!({"error": {"type": "rate_limit_error", "message": "slow down"}}),
        )
        .unwrap(),
    }
}

fn completion() -> Step {
    Step::json(
        200,
        json!({"id": "c", "object": "chat.completion", "model": "m",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}),
    )
}

async fn call(
    steps: Vec<Step>,
    sleeper: &VirtualSleeper,
    cap: Duration,
) -> (Server, Result<(), openarmature_llm::LlmError>) {
    let server = Server::start(steps).await;
    let provider = crate::support::openai_at(&server, "m");
    let retry = RetryConfig::default()
        .max_attempts(4)
        .backoff(HonorRetryAfter::new(Constant(Duration::from_millis(100))).cap(cap))
        .sleeper(sleeper.clone());
    let request = CompletionRequest::new(vec![Message::user("hi")]).retry(retry);
    let result = provider.complete(&request).await.map(|_| ());
    (server, result)
}

#[tokio::test]
async fn every_retry_after_form_is_waited_for_in_virtual_time() {
    let date = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(20));
    let steps = vec![
        limited(vec![("Retry-After", "7".into())]),
        limited(vec![
            ("retry-after-ms", "2500".into()),
            ("Retry-After", "99".into()),
        ]),
        limited(vec![("Retry-After", date)]),
        completion(),
    ];
    let sleeper = VirtualSleeper::default();
    let (server, result) = call(steps, &sleeper, Duration::from_secs(60)).await;
    result.unwrap();
    assert_eq!(server.request_count(), 4);
    let waits = sleeper.waits.lock().unwrap().clone();
    assert_eq!(
        waits[..2],
        [Duration::from_secs(7), Duration::from_millis(2500)]
    );
    // An HTTP date has one-second resolution.
    assert!(
        (Duration::from_secs(18)..=Duration::from_secs(20)).contains(&waits[2]),
        "{waits:?}"
    );
    assert!(
        sleeper.clock.now() >= Duration::from_secs(27),
        "virtual time advanced"
    );
}

#[tokio::test]
async fn a_wait_above_the_cap_fails_fast_without_sleeping() {
    let sleeper = VirtualSleeper::default();
    let steps = vec![limited(vec![("Retry-After", "3600".into())]), completion()];
    let (server, result) = call(steps, &sleeper, Duration::from_secs(30)).await;
    let error = result.unwrap_err();
    assert_eq!(error.category(), ErrorCategory::RetryAfterExceeded);
    assert!(!error.is_transient());
    assert_eq!(error.retry_after(), Some(Duration::from_secs(3600)));
    assert_eq!(
        error.to_string(),
        "the provider asked to retry after 3600 s, above the 30 s cap; last error: slow down"
    );
    assert_eq!(server.request_count(), 1);
    assert!(sleeper.waits.lock().unwrap().is_empty());
}
